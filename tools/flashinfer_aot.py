#!/usr/bin/env python3
"""Build FlashInfer's BF16 decode modules here (no GPU needed) for the device call that times them beside FBLA.

    python3 tools/flashinfer_aot.py --python /path/to/python3.12-with-torch      # -> .carry/fidec/*.so

bench_attention.py times FlashInfer's batch decode (paged BF16 K/V, head_dim 128) in both of its forms: the
CUDA-core decode kernels (`batch_decode_with_kv_cache_...`) and use_tensor_cores=True, which runs its fa2 prefill
kernels (`batch_prefill_with_kv_cache_...`). FlashInfer JIT-compiles each on first use; on the GPU machine that is
minutes of device time (the sampling module alone took 94 s there, run 62), and the device budget is 30 minutes a
session. So the two modules are compiled here, for sm_90a by nvcc 13.0 (the device's CUDA), and carried:
ci/device/s13fi.sh copies each .so to where FlashInfer looks for ahead-of-time modules
(`<flashinfer>/data/aot/<uri>/<uri>.so`: `JitSpec.is_aot`, so `build_and_load` loads it and builds nothing) and
sets FLASHINFER_DISABLE_JIT=1 (a missing module is then an error, not a build).

Needs: the wheels of tools/device_bundle.py (.carry/flashinfer/wheels: flashinfer-python 0.6.18.post1,
apache-tvm-ffi for CPython 3.12, the device's Python), a CPython 3.12 with torch 2.11 (flashinfer imports torch;
no GPU is used), nvcc 13.0 (tools/cuda_toolkit.py provides it), gcc. The link step asks for -lcuda, which a
machine without a driver lacks: a stub libcuda.so (soname libcuda.so.1, no symbols) satisfies it, and the
linker's --as-needed drops it (the modules need libcudart.so.13, which torch loads first on the device).
Measured here (2 cores): the decode module ~72 s, the prefill module ~270 s; 0.45 + 2.1 MB.
"""
from __future__ import annotations

import argparse
import os
import pathlib
import shutil
import subprocess
import sys
import tempfile

REPO = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tools"))

# The build, run in the Python 3.12 that has torch: prints one line "SO <path>" a module.
BUILD = r"""
import torch
from flashinfer.jit.attention.modules import gen_batch_decode_module, gen_batch_prefill_module
bf16, i32 = torch.bfloat16, torch.int32
# (dtype_q, dtype_kv, dtype_o, dtype_idx, head_dim_qk, head_dim_vo, pos_encoding NONE, sliding window, soft cap):
# what BatchDecodeWithPagedKVCacheWrapper.plan asks for with bench_attention.py's arguments
specs = [gen_batch_decode_module(bf16, bf16, bf16, i32, 128, 128, 0, False, False),
         # use_tensor_cores=True on sm_90 with BF16 K/V: the "fa2" backend (decode.py), fp16 QK reduction off
         gen_batch_prefill_module("fa2", bf16, bf16, bf16, i32, 128, 128, 0, False, False, False)]
for spec in specs:
    spec.build(verbose=False)
    print("SO", spec.jit_library_path, flush=True)
"""


def stub_libcuda(d: pathlib.Path) -> pathlib.Path:
    """An empty libcuda.so with the driver's soname: enough for the link step's -lcuda."""
    c = d / "e.c"
    c.write_text("")
    so = d / "libcuda.so"
    subprocess.run(["gcc", "-shared", "-fPIC", "-Wl,-soname,libcuda.so.1", "-o", str(so), str(c)], check=True)
    return d


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--python", required=True, help="a CPython 3.12 with torch (flashinfer imports it)")
    ap.add_argument("--wheels", type=pathlib.Path, default=REPO / ".carry" / "flashinfer" / "wheels",
                    help="flashinfer-python and apache-tvm-ffi wheels (tools/device_bundle.py)")
    ap.add_argument("--out", type=pathlib.Path, default=REPO / ".carry" / "fidec")
    ap.add_argument("--cuda", default="13.0", help="the device's CUDA (its driver loads these modules)")
    ap.add_argument("--work", type=pathlib.Path, default=None, help="install / JIT workspace (default: a temp dir)")
    a = ap.parse_args()
    wheels = sorted(a.wheels.glob("*.whl"))
    if not any(w.name.startswith("flashinfer_python") for w in wheels):
        ap.error(f"--wheels: no flashinfer_python wheel in {a.wheels} (run tools/device_bundle.py first)")
    import cuda_toolkit

    nvcc = pathlib.Path(cuda_toolkit.provide(a.cuda))
    work = a.work or pathlib.Path(tempfile.mkdtemp(prefix="fi_aot_"))
    target = work / "fi"
    if not (target / "flashinfer").is_dir():
        subprocess.run([a.python, "-m", "pip", "install", "-q", "--no-index", "--no-deps", "--target", str(target),
                        *map(str, wheels)], check=True)
    stub = stub_libcuda(pathlib.Path(tempfile.mkdtemp(prefix="custub_", dir=work)))
    home = nvcc.parent.parent
    env = dict(os.environ, CUDA_HOME=str(home), PATH=f"{nvcc.parent}:{os.environ['PATH']}", PYTHONPATH=str(target),
               FLASHINFER_CUDA_ARCH_LIST="9.0", FLASHINFER_WORKSPACE_BASE=str(work / "ws"),
               FLASHINFER_EXTRA_LDFLAGS=f"-L{stub}")
    out = subprocess.run([a.python, "-c", BUILD], env=env, check=True, capture_output=True, text=True).stdout
    a.out.mkdir(parents=True, exist_ok=True)
    for line in out.splitlines():
        if line.startswith("SO "):
            so = pathlib.Path(line[3:])
            shutil.copy2(so, a.out / so.name)
            print(f"{a.out / so.name} ({so.stat().st_size / 2**20:.2f} MiB)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
