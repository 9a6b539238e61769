"""tools/sass_list.py against cuobjdump (12.4 tree) and against what was asked of nvcc.

Toolkits come from tools/cuda_toolkit.py (provisioned on first use, then cached).
"""
import json
import pathlib
import re
import subprocess
import sys

import pytest

REPO = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "tools"))
import cuda_toolkit  # noqa: E402
import sass_list  # noqa: E402

KERNEL = "__global__ void k(float* x) { x[threadIdx.x] = 2.f; }\n"


@pytest.fixture(scope="session")
def nvcc():
    return {v: cuda_toolkit.provide(v) for v in ("12.4", "13.0")}


def compile_cu(nvcc, tmp_path, name, gencodes, shared=False):
    src = tmp_path / "k.cu"
    src.write_text(KERNEL)
    out = tmp_path / name
    mode = ["-shared", "-Xcompiler=-fPIC"] if shared else ["-c"]
    cmd = [str(nvcc), *mode, *[f"-gencode=arch=compute_{a},code={c}" for a, c in gencodes], str(src), "-o", str(out)]
    subprocess.run(cmd, check=True, capture_output=True)
    return out


def cuobjdump_archs(nvcc, path):
    """cuobjdump's view, in list_archs' format (12.4's cuobjdump: notes §1.7)."""
    out = subprocess.run([str(nvcc["12.4"].parent / "cuobjdump"), "--list-elf", "--list-ptx", str(path)],
                         check=True, capture_output=True, text=True).stdout
    key = lambda s: int(re.search(r"\d+", s).group())  # noqa: E731
    return {"sass": sorted(set(re.findall(r"\.(sm_\d+[af]?)\.cubin", out)), key=key),
            "ptx": sorted({"compute_" + a for a in re.findall(r"\.sm_(\d+[af]?)\.ptx", out)}, key=key)}


def without_suffix(archs):
    return {k: sorted({re.sub(r"[af]$", "", a) for a in v}) for k, v in archs.items()}


CASES = {  # id: (toolkit, gencodes, shared, expected)
    "13.0-obj-75-90+ptx": ("13.0", [(75, "sm_75"), (90, "[sm_90,compute_90]")], False,
                           {"sass": ["sm_75", "sm_90"], "ptx": ["compute_90"]}),
    "13.0-so-80-90": ("13.0", [(80, "sm_80"), (90, "sm_90")], True, {"sass": ["sm_80", "sm_90"], "ptx": []}),
    "12.4-obj-50-61+ptx": ("12.4", [(50, "sm_50"), (61, "[sm_61,compute_61]")], False,
                           {"sass": ["sm_50", "sm_61"], "ptx": ["compute_61"]}),
    "12.4-so-50-90a": ("12.4", [(50, "sm_50"), ("90a", "[sm_90a,compute_90a]")], True,
                       {"sass": ["sm_50", "sm_90a"], "ptx": ["compute_90a"]}),
}


@pytest.mark.parametrize("case", list(CASES))
def test_matches_cuobjdump_and_request(nvcc, tmp_path, case):
    version, gencodes, shared, expected = CASES[case]
    path = compile_cu(nvcc[version], tmp_path, "k.so" if shared else "k.o", gencodes, shared)
    got = sass_list.list_archs(path)
    assert got == expected
    # cuobjdump agrees up to the a/f suffix: it reads the cubin's own e_flags, and nvcc's device-link
    # cubin in a 12.4 sm_90a .so says sm_90 there (the fatbin entry, which list_archs reads, says 90a).
    assert without_suffix(got) == without_suffix(cuobjdump_archs(nvcc, path))


def test_arch_specific_and_family_suffixes(nvcc, tmp_path):
    # 13.0 only; checked against the request: 12.4's cuobjdump prints 13.0's sm_90a cubin as sm_90 and
    # sm_100f as sm_100 (13.x cubins, ELF ABI v8, no longer mark "a" in e_flags).
    path = compile_cu(nvcc["13.0"], tmp_path, "k.o",
                      [("90a", "sm_90a"), ("100f", "[sm_100f,compute_100f]"), (120, "sm_120")])
    assert sass_list.list_archs(path) == {"sass": ["sm_90a", "sm_100f", "sm_120"], "ptx": ["compute_100f"]}


def test_cli_text_json_and_errors(nvcc, tmp_path):
    obj = compile_cu(nvcc["13.0"], tmp_path, "k.o", [(75, "[sm_75,compute_75]")])
    (tmp_path / "not_elf").write_text("hello")
    tool = [sys.executable, str(REPO / "tools/sass_list.py")]
    text = subprocess.run([*tool, str(obj)], check=True, capture_output=True, text=True).stdout
    assert text == f"{obj}: sass=sm_75 ptx=compute_75\n"
    p = subprocess.run([*tool, "--json", str(obj), sys.executable, str(tmp_path / "not_elf")],
                       capture_output=True, text=True)
    assert p.returncode == 1 and "not_elf: error" in p.stderr
    assert json.loads(p.stdout) == {str(obj): {"sass": ["sm_75"], "ptx": ["compute_75"]},
                                    sys.executable: {"sass": [], "ptx": []}}
