"""tools/wheel_archs.py: the full arch list a `MLOPS_CUDA_ARCHS=all` wheel must carry, and its check.

The expectation is checked with stand-in nvcc scripts printing what 12.4.131 and 13.0.88 print for
`--list-gpu-arch` (cmake/arch.cmake's examples); the check itself on small wheels holding an object
file that the real nvcc 13.0 compiled for the full 13.0 list and for that list less one arch.
"""
from __future__ import annotations

import pathlib
import shutil
import subprocess
import sys
import zipfile

import pytest

REPO = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "tools"))
import cuda_toolkit  # noqa: E402
import wheel_archs  # noqa: E402

LISTS = {
    "12.4": [50, 52, 53, 60, 61, 62, 70, 72, 75, 80, 86, 87, 89, 90],
    "13.0": [75, 80, 86, 87, 88, 89, 90, 100, 103, 110, 120, 121],
}
FULL_13 = ["sm_75", "sm_80", "sm_86", "sm_87", "sm_89", "sm_90"]


def fake_nvcc(tmp_path, version) -> pathlib.Path:
    p = tmp_path / f"nvcc-{version}"
    # 13.0 prints 110 before 103 (arch.cmake sorts): keep that order here
    archs = [a for a in LISTS[version] if a != 103] + ([103] if 103 in LISTS[version] else [])
    p.write_text("#!/bin/sh\n" + "".join(f"echo compute_{a}\n" for a in archs) + ("echo compute_90a\n"))
    p.chmod(0o755)
    return p


def fake_repo(tmp_path, min_arch) -> pathlib.Path:
    repo = tmp_path / "repo"
    (repo / "cmake").mkdir(parents=True)
    shutil.copy(REPO / "cmake" / "arch.cmake", repo / "cmake")
    (repo / "packages" / "fake").mkdir(parents=True)
    (repo / "packages" / "fake" / "CMakeLists.txt").write_text(
        f"mlops_add_package(\n  NAME fake\n  MIN_ARCH {min_arch}\n  CUDA_SOURCES src/a.cu)\n")
    return repo


@pytest.mark.parametrize("version,min_arch,sass", [
    ("12.4", 50, [f"sm_{a}" for a in LISTS["12.4"]]),
    ("12.4", 61, ["sm_61", "sm_62", "sm_70", "sm_72", "sm_75", "sm_80", "sm_86", "sm_87", "sm_89", "sm_90"]),
    ("13.0", 50, FULL_13),  # no 88: not in the mlops list; nothing above 90 either
    ("13.0", 80, FULL_13[1:]),
])
def test_expected_all(tmp_path, version, min_arch, sass):
    got = wheel_archs.expected_all("fake", fake_nvcc(tmp_path, version), fake_repo(tmp_path, min_arch))
    assert got == {"sass": sass, "ptx": ["compute_90"]}


def test_every_package_has_one_min_arch():
    names = [p.parent.name for p in (REPO / "packages").glob("*/CMakeLists.txt")]
    assert "norm" in names
    for n in names:
        assert 50 <= wheel_archs.min_arch(n) <= 90, n
    assert wheel_archs.mlops_arch_list() == LISTS["12.4"]


def _wheel(tmp_path, nvcc, archs) -> pathlib.Path:
    """mlops_fake-0.1-...whl holding an object file with SASS for `archs` + PTX of the highest."""
    src = tmp_path / "k.cu"
    src.write_text("__global__ void k(float* x) { x[threadIdx.x] = 2.f; }\n")
    obj = tmp_path / f"k{len(archs)}.o"
    gencodes = [f"-gencode=arch=compute_{a},code=sm_{a}" for a in archs]
    gencodes.append(f"-gencode=arch=compute_{archs[-1]},code=compute_{archs[-1]}")
    subprocess.run([str(nvcc), "-c", *gencodes, str(src), "-o", str(obj)], check=True, capture_output=True)
    (tmp_path / obj.stem).mkdir()
    whl = tmp_path / obj.stem / "mlops_fake-0.1-cp311-cp311-linux_x86_64.whl"
    with zipfile.ZipFile(whl, "w") as z:
        z.write(obj, "mlops/fake/_C.cpython-311-x86_64-linux-gnu.so")  # an ELF with a .nv_fatbin is enough
        z.writestr("mlops/fake/__init__.py", "")
    return whl


def test_check_all_on_real_fatbins(tmp_path):
    nvcc = cuda_toolkit.provide("13.0")
    repo = fake_repo(tmp_path, 50)
    full = _wheel(tmp_path, nvcc, [75, 80, 86, 87, 89, 90])
    assert wheel_archs.check_all(full, nvcc, repo, name="fake") == {"sass": FULL_13, "ptx": ["compute_90"]}
    short = _wheel(tmp_path, nvcc, [75, 80, 86, 89, 90])
    with pytest.raises(ValueError, match=r"missing \['sm_87'\], extra \[\]"):
        wheel_archs.check_all(short, nvcc, repo, name="fake")
