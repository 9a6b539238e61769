"""Helpers of the Python layer: argument checks that raise ValueError naming the argument,
pointers, streams and dtype codes (mlops/common/status.h)."""

from __future__ import annotations

from typing import Optional

import torch

DTYPE = {torch.bfloat16: 1, torch.float16: 2, torch.float32: 3, torch.int32: 7, torch.int64: 8}


def fail(arg: str, msg: str):
    raise ValueError(f"{arg}: {msg}")


def ptr(t: Optional[torch.Tensor]) -> int:
    return 0 if t is None else t.data_ptr()


def stream_of(t: torch.Tensor) -> int:
    return torch.cuda.current_stream(t.device).cuda_stream if t.is_cuda else 0


def check_tensor(name: str, t, dtypes, dims=None, device=None, contiguous_last=True):
    if not isinstance(t, torch.Tensor):
        fail(name, f"expected a torch.Tensor, got {type(t).__name__}")
    if t.dtype not in dtypes:
        want = ", ".join(str(d).replace("torch.", "") for d in dtypes)
        fail(name, f"expected dtype {want}, got {str(t.dtype).replace('torch.', '')}")
    if dims is not None and t.dim() not in dims:
        fail(name, f"expected {' or '.join(map(str, dims))} dimensions, got shape {tuple(t.shape)}")
    if device is not None and not same_device(t.device, device):
        fail(name, f"expected device {device}, got {t.device}")
    if contiguous_last and t.numel() and t.stride(-1) != 1:
        fail(name, f"expected a contiguous last dimension, got stride {t.stride(-1)}")


def canonical_device(device) -> torch.device:
    """torch.device("cuda") means the current CUDA device: give it its index, so a tensor made on
    "cuda" (which reports cuda:0) compares equal to it."""
    d = torch.device(device)
    if d.type == "cuda" and d.index is None:
        d = torch.device("cuda", torch.cuda.current_device())
    return d


def same_device(a: torch.device, b) -> bool:
    b = torch.device(b)
    return a.type == b.type and (b.index is None or a.index is None or a.index == b.index)


def row_stride(t: torch.Tensor) -> int:
    return t.stride(0) if t.dim() == 2 else t.shape[-1]


def resolve_variant(name: str, variant, table: list[dict]) -> int:
    if variant is None:
        return -1
    names = {v["name"]: v["index"] for v in table}
    if isinstance(variant, str):
        if variant not in names:
            fail(name, f"expected one of {sorted(names)}, got {variant!r}")
        return names[variant]
    if not (0 <= int(variant) < len(table)):
        fail(name, f"expected a name or an index below {len(table)}, got {variant!r}")
    return int(variant)


def on_device(t: torch.Tensor, fn):
    """Runs fn with t's CUDA device current (the C API launches on the current device)."""
    if t.is_cuda and t.device.index is not None and t.device.index != torch.cuda.current_device():
        with torch.cuda.device(t.device.index):
            return fn()
    return fn()
