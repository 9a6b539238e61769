"""Tensor-list tables: one row a tensor (pointers, size, step counter, rng id) plus the chunk
map, built by the C library into host memory and, for CUDA tensors, copied once to the
device (pinned buffer, async copy: no host synchronization). A table is cached for as long as
the pointers it holds stay the same (the optimizer keys it on the gradients' addresses)."""

from __future__ import annotations

import torch

from ._native import C

# dtype codes of mlops/common/status.h
DTYPE_CODE = {torch.bfloat16: 1, torch.float16: 2, torch.float32: 3}


def local(t):
    """The local shard of a DTensor (FSDP2), the tensor itself otherwise."""
    if t is None:
        return None
    lt = getattr(t, "_local_tensor", None)
    return t if lt is None else lt


def ptr(t) -> int:
    return 0 if t is None else local(t).data_ptr()


class Table:
    """A built table: `table` is a uint8 tensor on the tensors' device."""

    __slots__ = ("device", "dtype", "host", "num_chunks", "num_tensors", "rows", "table")

    def __init__(self, device: torch.device, dtype: torch.dtype, rows: dict):
        self.device = device
        self.dtype = dtype
        # The table holds addresses, not tensors: the optimizer keeps its parameters and states, and
        # re-checks parameter and gradient addresses every step (a freed gradient's memory is reused in
        # stream order, after the kernels that read it).
        self.rows = None
        numel = rows["numel"]
        nbytes, self.num_chunks = C.table_size(numel)
        self.num_tensors = len(numel)
        on_cuda = device.type == "cuda"
        host = torch.empty(max(nbytes, 8), dtype=torch.uint8, pin_memory=on_cuda)
        C.build_table(host.data_ptr(), nbytes, DTYPE_CODE[dtype], rows["param"], rows["grad"], rows["s1"], rows["s2"],
                      rows["s3"], rows["master"], rows["am1"], rows["am2"], rows["step"], numel, rows["id"])
        if on_cuda:
            self.table = torch.empty(host.numel(), dtype=torch.uint8, device=device)
            # the caching host allocator keeps `host` until the copy has run; we keep it too
            self.table.copy_(host, non_blocking=True)
            self.host = host
        else:
            self.table = host
            self.host = None


def new_rows() -> dict:
    return {k: [] for k in ("param", "grad", "s1", "s2", "s3", "master", "am1", "am2", "step", "numel", "id")}
