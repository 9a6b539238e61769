"""tools/flashinfer_aot.py's parts that need neither flashinfer nor nvcc: the stub libcuda the link step
takes (loadable, the driver's soname), the refusal without the wheels, and what ci/device/s13fi.sh does with
the modules (each .so into <flashinfer>/data/aot/<uri>/, the path FlashInfer's JitSpec.aot_path names)."""
from __future__ import annotations

import ctypes
import os
import pathlib
import shutil
import subprocess
import sys

import pytest

REPO = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "tools"))
import flashinfer_aot as fa  # noqa: E402


@pytest.mark.skipif(shutil.which("gcc") is None, reason="needs gcc")
def test_stub_libcuda_loads_and_carries_the_driver_soname(tmp_path):
    d = fa.stub_libcuda(tmp_path)
    so = d / "libcuda.so"
    ctypes.CDLL(str(so))  # loadable: the link step and a dlopen accept it
    assert b"libcuda.so.1" in so.read_bytes()  # the SONAME string in .dynstr


def test_refuses_without_the_flashinfer_wheel(tmp_path):
    r = subprocess.run([sys.executable, str(REPO / "tools" / "flashinfer_aot.py"), "--python", sys.executable,
                        "--wheels", str(tmp_path), "--out", str(tmp_path / "out")], capture_output=True, text=True)
    assert r.returncode == 2 and "no flashinfer_python wheel" in r.stderr
    assert not (tmp_path / "out").exists()


def test_device_script_puts_each_module_where_flashinfer_looks(tmp_path):
    """s13fi.sh's copy loop, run on stand-ins: <uri>.so -> $FI_TARGET/flashinfer/data/aot/<uri>/<uri>.so."""
    script = (REPO / "ci" / "device" / "s13fi.sh").read_text()
    loop = next(line for line in script.splitlines() if line.startswith("for f in .carry/fidec/*.so"))
    work = tmp_path / "w"
    (work / ".carry" / "fidec").mkdir(parents=True)
    uris = ["batch_decode_with_kv_cache_dtype_q_bf16", "batch_prefill_with_kv_cache_dtype_q_bf16"]
    for u in uris:
        (work / ".carry" / "fidec" / f"{u}.so").write_bytes(u.encode())
    env = dict(os.environ, FI=str(tmp_path / "fi"))
    subprocess.run(["bash", "-c", loop], cwd=work, env=env, check=True)
    for u in uris:
        assert (tmp_path / "fi" / "flashinfer" / "data" / "aot" / u / f"{u}.so").read_bytes() == u.encode()
