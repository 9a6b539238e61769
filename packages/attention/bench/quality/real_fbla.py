"""FBLA through mlops.attention itself: the real encoder and decode kernels (the host emulation on CPU tensors,
the same bits, much slower).

One layer call attends a window of T tokens as T decode steps would: the query at position t reads a cache that
holds tokens 0 .. t (its own K/V appended first). The window is walked a group of 128 positions at a time. A base
cache (batch 1) holds tokens 0 .. 128g-1, exactly as token-by-token appends leave it (a group's record depends
only on its 128 tokens; append in pieces == encode, tested). For the positions 128g .. 128g+n-1 the base is
forked into n sequences (its records, sink, lengths copied on the device), and one append with per-sequence
counts i+1 gives sequence i the tokens up to 128g+i (the last one closes group g, as the real decode at that
length has it closed); one decode of the n queries follows; then the base takes the group's tokens. Each query
sees the cache bytes a real decode would: the same kernels on the same records. Cost: a copy of the closed
records per group of positions (O(T^2/128) bytes, memcpy speed) instead of an encode per position (O(T^2) work).
exact / skip as named; the skip statistics come from the decode scratch.
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
    def __init__(self, name: str, gap: float | None = None, pv: str | None = None):
        import mlops.attention as A

        self.pv = pv  # the decode's P V form (None: its default, "digits")

        _, mode, how = name.split("-")
        if mode not in A.MODES or how not in ("exact", "skip"):
            raise ValueError(f"unknown FBLA treatment {name!r}")
        self.A, self.name, self.mode, self.exact = A, name, mode, how == "exact"
        self.gap = A.DEFAULT_GAP if gap is None else gap
        self.refined = 0
        self.considered = 0

    def attention(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, scaling: float, layer_idx=None):
        """q [1, Hq, T, D], k / v [1, Hkv, T, D] bf16 -> [1, Hq, T, D] bf16, query t over tokens 0 .. t."""
        A = self.A
        if q.shape[0] != 1:
            raise ValueError(f"q: the harness attends one window at a time, got batch {q.shape[0]}")
        _, hq, t, d = q.shape
        hkv = k.shape[1]
        G = A.GROUP
        cap = -(-t // G) * G
        out = torch.empty_like(q)
        base = A.empty(1, hkv, cap, d, self.mode, q.device)
        fork = A.empty(G, hkv, cap, d, self.mode, q.device)
        for p0 in range(0, t, G):
            n = min(G, t - p0)
            g = p0 // G  # closed groups in the base: 1 .. g-1 (records slots 0 .. g-2); group 0 is the sink
            if g >= 2:
                fork.records[:n, :, : g - 1].copy_(base.records[:, :, : g - 1].expand(n, -1, -1, -1))
            fork.sink_k[:n].copy_(base.sink_k.expand(n, -1, -1, -1))
            fork.sink_v[:n].copy_(base.sink_v.expand(n, -1, -1, -1))
            fork.lengths.fill_(p0)
            # sequences n .. G-1 (only in the window's last, partial group) repeat sequence n-1; not read
            counts = torch.arange(1, G + 1, dtype=torch.int32, device=q.device).clamp_(max=n)
            kb = k[:, :, p0:p0 + n].expand(G, hkv, n, d)
            vb = v[:, :, p0:p0 + n].expand(G, hkv, n, d)
            A._ops._append(fork, kb, vb, counts, 0, n)  # per-sequence counts: encode()'s path (internal API)
            fork.host_lengths = [p0 + int(c) for c in counts.tolist()]
            qb = torch.zeros(G, hq, d, dtype=q.dtype, device=q.device)
            qb[:n] = q[0, :, p0:p0 + n, :].transpose(0, 1)
            o = A.decode(qb, fork, exact=self.exact, gap=self.gap, scale=scaling, out_dtype=torch.bfloat16, pv=self.pv)
            out[0, :, p0:p0 + n, :] = o[:n].transpose(0, 1)
            if not self.exact:
                self._count(fork, hq, (p0 + counts[:n]).cpu(), n)
            A.append(base, k[:, :, p0:p0 + n], v[:, :, p0:p0 + n])
        return out

    def _count(self, cache, hq: int, lengths: torch.Tensor, n: int) -> None:
        """Blocks refined / blocks bounded, from the decode scratch (ub per block, largest lower bound per chunk),
        over the cache's first n sequences."""
        A = self.A
        s = {name: x[:n] for name, x in A.decode_scratch_views(cache, hq).items()}
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
