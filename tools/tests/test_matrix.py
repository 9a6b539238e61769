"""tools/matrix.py: the declared cells of `nox -s matrix` and the snapshot it builds and tests from."""

from __future__ import annotations

import os
import pathlib
import subprocess
import sys
import time

import pytest

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))
import matrix as mx  # noqa: E402


def test_declared_cells_cover_every_axis_value():
    for i, (axis, values) in enumerate(mx.AXES.items()):
        assert sorted({c[i] for c in mx.CELLS}) == sorted(values), axis
    # one build tested under two torch releases: the wheels carry no torch ABI
    assert any(sum((c, p) == (c2, p2) for c2, p2, _ in mx.CELLS) == 2 for c, p, _ in mx.CELLS)
    assert len(set(mx.CELLS)) == len(mx.CELLS)


def test_select_and_builds():
    assert mx.select() == mx.CELLS
    full = mx.select(full=True)
    assert len(full) == 32 and set(mx.CELLS) <= set(full)
    assert mx.select(full=True, cuda="13.5", python="3.11") == [("13.5", "3.11", "2.13"), ("13.5", "3.11", "2.14")]
    assert mx.select(python="3.11") == [("13.0", "3.11", "2.13"), ("13.0", "3.11", "2.14"), ("11.8", "3.11", "2.13")]
    assert mx.builds(mx.select(python="3.11")) == [("13.0", "3.11"), ("11.8", "3.11")]
    assert mx.select(cuda="11.8") == [("11.8", "3.11", "2.13")]
    with pytest.raises(ValueError):
        mx.select(cuda="11.7")  # no recipe in tools/cuda_toolkit.py, not an axis value


def _git(repo, *args):
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, text=True).stdout.strip()


def test_snapshot_is_the_commit_not_the_working_tree(tmp_path):
    repo = tmp_path / "repo"
    (repo / "packages" / "p").mkdir(parents=True)
    f = repo / "packages" / "p" / "a.cu"
    f.write_text("committed\n")
    _git(repo, "init", "-q")
    _git(repo, "add", ".")
    _git(repo, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "c", "--date", "2000-01-01T00:00:00")
    f.write_text("edited in the working tree\n")  # another session's edit during the run
    (repo / "packages" / "p" / "new.cu").write_text("untracked\n")
    before = time.time() - 5
    short, src = mx.snapshot(repo, "HEAD", tmp_path / "top")
    assert short == _git(repo, "rev-parse", "--short=12", "HEAD") and src.name == f"src-{short}"
    assert (src / "packages" / "p" / "a.cu").read_text() == "committed\n"
    assert not (src / "packages" / "p" / "new.cu").exists()
    # fresh mtimes (not the commit's 2000-01-01), so make never takes an older tree's object as current
    assert os.stat(src / "packages" / "p" / "a.cu").st_mtime >= before
    # a second call reuses the extracted tree (its build dirs live inside it)
    (src / "_build").mkdir()
    assert mx.snapshot(repo, short, tmp_path / "top") == (short, src) and (src / "_build").is_dir()


def test_table_marks_snapshots_and_undeclared_cells():
    res = {"12.4|3.10|build": {"ok": True, "commit": "abc", "text": "ok (90-real, 1 s, 1.0 MiB)"},
           "12.4|3.10|2.13": {"ok": True, "commit": "abc", "text": "ok: 1 passed"},
           "13.5|3.11|build": {"ok": True, "text": "ok (old)"},
           "13.5|3.11|2.14": {"ok": False, "text": "FAILED: 1 failed"}}
    rows = mx.table(res)
    assert "| 12.4 | 3.10 | 2.13 | `abc` | ok (90-real, 1 s, 1.0 MiB) | ok: 1 passed |" in rows
    assert "| 13.5 | 3.13 | 2.14 |  | not run | not run |" in rows
    i = rows.index("| *not declared:* | | | | | |")
    assert rows[i + 1] == "| 13.5 | 3.11 | 2.14 | working tree (no snapshot) | ok (old) | FAILED: 1 failed |"
    res["12.4|3.10|build"]["commit"] = "def"  # rebuilt later; the tests ran on the earlier wheels
    assert "wheels `def`, tests `abc`" in mx.table(res)[2]
