"""The cells of `nox -s matrix` and the source snapshot it builds and tests from.

A cell is (CUDA, Python, torch). The declared set (CELLS) is not the cross product of AXES: that is
4 x 4 x 2 = 32 cells and 16 builds (one per CUDA x Python), each a build of every package plus a
CPU test run of every package's tests, and each Python but 3.11 needs torch with its CUDA libraries
from PyPI (~5 GB a venv). On the 2-core machine that is many hours and most of the disk. The
declared cells cover every CUDA, every Python and both torch releases at least once, and one build
is tested under both torch releases (the wheels hold no torch ABI: docs/distribution.md); `--full`
runs the cross product.

The snapshot: `git archive <commit>` extracted into build/matrix/src-<commit> with fresh mtimes,
and its own build dirs, so the wheels and the tests come from one commit even while others edit the
working tree (session 4's matrix rows failed on tests newer than the wheels they ran against).
"""

from __future__ import annotations

import itertools
import pathlib
import subprocess

AXES = {
    # 11.8: the oldest, for sm_50 ... sm_90 with an 11.x driver (attention's sm_90 stage variants take the
    # portable copies there: their TMA PTX needs CUDA 12); 13.5: the newest 13.x tools/cuda_toolkit.py provides
    "cuda": ["11.8", "12.4", "13.0", "13.5"],
    "python": ["3.10", "3.11", "3.12", "3.13"],
    "torch": ["2.13", "2.14"],
}

CELLS = [
    ("12.4", "3.10", "2.13"),  # the oldest toolkit, Python and torch together
    ("13.0", "3.11", "2.13"),  # CI's toolkit, Python and torch (2.13.0+cpu on disk) ...
    ("13.0", "3.11", "2.14"),  # ... and the same wheels under the other torch release
    ("13.0", "3.12", "2.14"),  # the GPU machine's Python
    ("13.5", "3.13", "2.14"),  # the newest toolkit, Python and torch together
    ("11.8", "3.11", "2.13"),  # CUDA 11.x: built and tested against CI's Python and torch (on disk)
]


def select(full: bool = False, cuda: str = "", python: str = "", torch: str = "") -> list[tuple[str, str, str]]:
    """The declared cells (or, with full, the cross product of AXES), narrowed by comma lists."""
    cells = list(itertools.product(*AXES.values())) if full else list(CELLS)
    for i, want in enumerate((cuda, python, torch)):
        if want:
            keep = want.split(",")
            unknown = [w for w in keep if w not in list(AXES.values())[i]]
            if unknown:
                raise ValueError(f"{unknown} not in {list(AXES)[i]} axis {list(AXES.values())[i]}")
            cells = [c for c in cells if c[i] in keep]
    return cells


def builds(cells) -> list[tuple[str, str]]:
    """The (CUDA, Python) builds the cells need, in first-use order: one build serves its torch cells."""
    return list(dict.fromkeys((c, p) for c, p, _ in cells))


def snapshot(repo: pathlib.Path, commit: str, top: pathlib.Path) -> tuple[str, pathlib.Path]:
    """Extract `commit` of repo into top/src-<short> once (fresh mtimes: tar -m); returns (short, dir)."""
    short = subprocess.run(["git", "-C", str(repo), "rev-parse", "--short=12", commit], check=True,
                           capture_output=True, text=True).stdout.strip()
    dest = top / f"src-{short}"
    if not (dest / ".complete").exists():
        tmp = top / f"src-{short}.partial"
        subprocess.run(["rm", "-rf", str(tmp)], check=True)
        tmp.mkdir(parents=True)
        archive = subprocess.Popen(["git", "-C", str(repo), "archive", "--format=tar", short], stdout=subprocess.PIPE)
        subprocess.run(["tar", "-x", "-m", "-C", str(tmp)], stdin=archive.stdout, check=True)
        if archive.wait() != 0:
            raise RuntimeError(f"git archive {short} failed")
        (tmp / ".complete").write_text(short + "\n")
        subprocess.run(["rm", "-rf", str(dest)], check=True)
        tmp.rename(dest)
    return short, dest


def table(results: dict) -> list[str]:
    """Markdown rows: the declared cells first, then any other cell results.json holds."""
    def row(cell):
        cuda, py, t = cell
        r, b = results.get(f"{cuda}|{py}|{t}"), results.get(f"{cuda}|{py}|build")
        tb, tr = (b or {}).get("commit"), (r or {}).get("commit")
        if not (r or b):
            tree = ""
        elif tb == tr or not r or not b:
            tree = f"`{tb or tr}`" if (tb or tr) else "working tree (no snapshot)"
        else:  # a later build of the pair; these tests ran on an earlier one
            tree = f"wheels `{tb or 'working tree'}`, tests `{tr or 'working tree'}`"
        return f"| {cuda} | {py} | {t} | {tree} | {b['text'] if b else 'not run'} | {r['text'] if r else 'not run'} |"

    head = ["| CUDA | Python | torch | tree | wheels (every package; one build a CUDA x Python) | CPU tests (packages/*/tests) |",
            "|---|---|---|---|---|---|"]
    rows = head + [row(c) for c in CELLS]
    others = [c for c in itertools.product(*AXES.values()) if c not in CELLS and f"{'|'.join(c)}" in results]
    if others:
        rows += ["| *not declared:* | | | | | |"] + [row(c) for c in others]
    return rows
