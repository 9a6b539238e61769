"""tools/device_bundle.py: cutting wheels into parts, grouping them into device calls, and joining
them again, both in Python and with ci/device/flashinfer_setup.sh (FI_JOIN_ONLY=1, so no pip and no
GPU: the script's gathering, `cat` of the parts in name order and sha256 check run as on the device).
Small random files stand in for the wheels; nothing is downloaded.
"""
from __future__ import annotations

import os
import pathlib
import shutil
import subprocess
import sys

import pytest

REPO = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "tools"))
import device_bundle as db  # noqa: E402

SETUP = REPO / "ci" / "device" / "flashinfer_setup.sh"


def blob(path: pathlib.Path, size: int, seed: int) -> pathlib.Path:
    path.write_bytes(bytes((i * 131 + seed * 7 + (i >> 8)) & 0xFF for i in range(size)))
    return path


def test_part_names_sort_in_byte_order():
    names = [db.part_name("a.whl", k, 12) for k in range(1, 13)]
    assert names == sorted(names)
    assert names[0] == "a.whl.part01-of-12" and db.PART_RE.match(names[-1])["n"] == "12"
    assert db.part_name("a.whl", 7, 100) == "a.whl.part007-of-100"


@pytest.mark.parametrize("size", [1, 999, 1000, 1001, 2999, 3000, 3001])
def test_split_then_join_is_the_file(tmp_path, size):
    src = blob(tmp_path / "x-1.0-py3-none-any.whl", size, size)
    parts = db.split_file(src, tmp_path / "parts", 1000)
    assert len(parts) == max(1, -(-size // 1000))
    assert all(p.stat().st_size <= 1000 for p in parts)
    if len(parts) == 1:
        assert parts[0].name == src.name and parts[0].read_bytes() == src.read_bytes()
    else:
        out = db.join_parts(list(reversed(parts)), tmp_path / "joined.whl")
        assert out.read_bytes() == src.read_bytes()
        # what the device does: cat in name order
        assert b"".join(p.read_bytes() for p in sorted(parts)) == src.read_bytes()


def test_join_refuses_missing_or_mixed_parts(tmp_path):
    parts = db.split_file(blob(tmp_path / "a.whl", 2500, 1), tmp_path / "pa", 1000)
    with pytest.raises(ValueError, match=r"parts \[2\] of 3 missing"):
        db.join_parts([parts[0], parts[2]], tmp_path / "o")
    other = db.split_file(blob(tmp_path / "b.whl", 2500, 2), tmp_path / "pb", 1000)
    with pytest.raises(ValueError, match="different files"):
        db.join_parts([parts[0], other[1], parts[2]], tmp_path / "o")


def test_plan_keeps_each_call_under_budget():
    sizes = {"flashinfer_python-0.7.4-py3-none-any.whl": 101_294_319, "apache_tvm_ffi.whl": 3_312_304}
    mib = db.MIB
    calls = db.plan_calls(sizes, 56 * mib, 48 * mib)
    assert len(calls) == 2
    assert all(sum(p[3] for p in c) <= 56 * mib for c in calls)
    pieces = [p for c in calls for p in c]
    assert sum(p[3] for p in pieces) == sum(sizes.values())
    fi = sorted(p for p in pieces if p[0].startswith("flashinfer"))
    assert [(k, n) for _, k, n, _ in fi] == [(1, 3), (2, 3), (3, 3)]
    # 0.6.18.post1 and its FFI fit one call, whole
    small = db.plan_calls({"flashinfer_python-0.6.18.post1.whl": 18_348_022, "tvm.whl": 3_312_304}, 56 * mib, 48 * mib)
    assert small == [[("flashinfer_python-0.6.18.post1.whl", 0, 0, 18_348_022), ("tvm.whl", 0, 0, 3_312_304)]]
    with pytest.raises(ValueError):
        db.plan_calls(sizes, 10, 20)


def lay_out_small(tmp_path):
    (tmp_path / "w").mkdir()
    wheels = [blob(tmp_path / "w" / "big-1.0-py3-none-any.whl", 2600, 3),
              blob(tmp_path / "w" / "small-1.0-py3-none-any.whl", 300, 4)]
    dirs = db.lay_out(wheels, tmp_path / "carry", budget=1000, part_bytes=900)
    return wheels, dirs


def test_lay_out_writes_calls_with_sums(tmp_path):
    wheels, dirs = lay_out_small(tmp_path)
    assert [d.name for d in dirs] == [f"call{i}" for i in range(1, len(dirs) + 1)] and len(dirs) == 4  # 900 + 900 + 800 + 300
    for d in dirs:
        assert sum(p.stat().st_size for p in d.iterdir() if p.name != "SHA256SUMS") <= 1000
        sums = dict(line.split()[::-1] for line in (d / "SHA256SUMS").read_text().splitlines())
        assert sums == {w.name: db.sha256(w) for w in wheels}
    pieces = [p for d in dirs for p in d.iterdir() if p.name != "SHA256SUMS"]
    big = [p for p in pieces if p.name.startswith("big")]
    assert len(big) == 3
    assert db.join_parts(big, tmp_path / "big.whl").read_bytes() == wheels[0].read_bytes()
    # a second lay-out replaces the first
    db.lay_out(wheels[1:], tmp_path / "carry", budget=1000, part_bytes=900)
    assert sorted(p.name for p in (tmp_path / "carry").iterdir()) == ["call1"]


@pytest.mark.skipif(shutil.which("bash") is None or shutil.which("sha256sum") is None, reason="needs bash, sha256sum")
def test_setup_script_joins_across_calls(tmp_path):
    wheels, dirs = lay_out_small(tmp_path)
    assert len(dirs) >= 2
    env = dict(os.environ, FI_STAGE=str(tmp_path / "stage"), FI_JOIN_ONLY="1")
    for i, d in enumerate(dirs):  # one call a folder, as on the warm device
        r = subprocess.run(["bash", str(SETUP), str(d)], env=env, capture_output=True, text=True)
        last = i == len(dirs) - 1
        assert r.returncode == (0 if last else 3), r.stdout + r.stderr
    for w in wheels:
        assert (tmp_path / "stage" / "wheels" / w.name).read_bytes() == w.read_bytes()
    assert not list((tmp_path / "stage" / "parts").iterdir())
    # sourced, it returns the status instead of exiting the caller's shell
    r = subprocess.run(["bash", "-c", f". {SETUP} {dirs[0]}; echo rc=$?"], env=env, capture_output=True, text=True)
    assert "rc=0" in r.stdout, r.stdout + r.stderr


@pytest.mark.skipif(shutil.which("bash") is None or shutil.which("sha256sum") is None, reason="needs bash, sha256sum")
def test_setup_script_rejects_a_bad_part(tmp_path):
    wheels, dirs = lay_out_small(tmp_path)
    part = next(p for d in dirs for p in sorted(d.iterdir()) if ".part" in p.name)
    part.write_bytes(b"\0" + part.read_bytes()[1:])
    env = dict(os.environ, FI_STAGE=str(tmp_path / "stage"), FI_JOIN_ONLY="1")
    r = subprocess.run(["bash", str(SETUP), *map(str, dirs)], env=env, capture_output=True, text=True)
    assert r.returncode == 1 and "sha256 mismatch" in r.stdout, r.stdout + r.stderr


def test_main_no_download(tmp_path, capsys):
    (tmp_path / "wheels").mkdir()
    blob(tmp_path / "wheels" / "a-1.0-py3-none-any.whl", 5000, 5)
    assert db.main(["--no-download", "--dest", str(tmp_path), "--budget-mib", "0.004", "--part-mib", "0.003"]) == 0
    out = capsys.readouterr().out
    assert "call 1: carry" in out and "call 2: carry" in out
    assert db.main(["--no-download", "--dest", str(tmp_path / "empty")]) == 1
