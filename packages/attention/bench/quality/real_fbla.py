"""FBLA through mlops.attention itself: the real encoder and decode kernels (the host emulation on CPU tensors,
the same bits, much slower).

One layer call attends a window of T tokens as T decode steps would. The query at position t reads a cache that
holds tokens 0 .. t (its own K/V appended first). A.encode takes a batch of sequences with their own lengths, so
`batch` query positions p0 .. p1-1 are one call: the window's K/V (expanded over the batch, no copy: append
takes any strides with head_dim contiguous) encoded with lengths p0+1 .. p1 (each sequence closes exactly the
groups a real decode at that length has closed; encode = empty() + append, the same GPU path), then one
A.decode of the batch's queries. exact / skip as named; the skip statistics come from the decode scratch.
"""

from __future__ import annotations

import torch


def available(device) -> dict | None:
    """What mlops.attention offers here, or None when it does not import (the reason is raised to the caller
    only for --real on)."""
    import mlops.attention as A

    return {"version": getattr(A, "__version__", "?"), "group": A.GROUP, "block": A.BLOCK,
            "default_gap": A.DEFAULT_GAP, "file": A.__file__}


class RealFBLA:
    def __init__(self, name: str, gap: float | None = None, batch: int = 512):
        import mlops.attention as A

        _, mode, how = name.split("-")
        if mode not in A.MODES or how not in ("exact", "skip"):
            raise ValueError(f"unknown FBLA treatment {name!r}")
        self.A, self.name, self.mode, self.exact = A, name, mode, how == "exact"
        self.gap = A.DEFAULT_GAP if gap is None else gap
        self.batch = batch
        self.refined = 0
        self.considered = 0

    def attention(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, scaling: float, layer_idx=None):
        """q [1, Hq, T, D], k / v [1, Hkv, T, D] bf16 -> [1, Hq, T, D] bf16, query t over tokens 0 .. t."""
        A = self.A
        if q.shape[0] != 1:
            raise ValueError(f"q: the harness attends one window at a time, got batch {q.shape[0]}")
        _, hq, t, d = q.shape
        hkv = k.shape[1]
        out = torch.empty_like(q)
        for p0 in range(0, t, self.batch):
            p1 = min(t, p0 + self.batch)
            n = p1 - p0
            cap = -(-p1 // A.GROUP) * A.GROUP
            kb = k[:, :, :p1].expand(n, hkv, p1, d)
            vb = v[:, :, :p1].expand(n, hkv, p1, d)
            lengths = torch.arange(p0 + 1, p1 + 1, dtype=torch.int32)
            cache = A.encode(kb, vb, lengths, capacity=cap, mode=self.mode)
            qb = q[0, :, p0:p1, :].transpose(0, 1).contiguous()  # [n, Hq, D]
            o = A.decode(qb, cache, exact=self.exact, gap=self.gap, scale=scaling, out_dtype=torch.bfloat16)
            out[0, :, p0:p1, :] = o.transpose(0, 1)
            if not self.exact:
                self._count(cache, hq, lengths)
        return out

    def _count(self, cache, hq: int, lengths: torch.Tensor) -> None:
        """Blocks refined / blocks bounded, from the decode scratch (ub per block, largest lower bound per chunk)."""
        A = self.A
        s = A.decode_scratch_views(cache, hq)
        nq = torch.where(lengths >= 2 * A.GROUP, lengths // A.GROUP - 1, torch.zeros_like(lengths)).to(s["ub"].device)
        blocks_per_group = A.GROUP // A.BLOCK
        nblk = s["ub"].shape[-1]
        nch = s["lbmax"].shape[-1]
        if nblk == 0 or nch == 0:
            return
        ch_ok = torch.arange(nch, device=nq.device)[None, :] < ((nq + 1) // 2)[:, None]  # [n, nch]
        blk_ok = torch.arange(nblk, device=nq.device)[None, :] < (nq * blocks_per_group)[:, None]  # [n, nblk]
        m = s["lbmax"].masked_fill(~ch_ok[:, None, :], float("-inf")).amax(-1, keepdim=True)  # [n, Hq, 1]
        refined = (s["ub"] >= m - self.gap) & blk_ok[:, None, :]
        self.refined += int(refined.sum())
        self.considered += int(blk_ok.sum()) * hq

    def refine_fraction(self) -> float | None:
        if self.exact or not self.considered:
            return None
        return self.refined / self.considered
