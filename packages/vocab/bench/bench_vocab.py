#!/usr/bin/env python3
"""mlops-vocab side by side with its peers, one process, the same inputs, JSON lines (mlops_bench).

    python packages/vocab/bench/bench_vocab.py [--quick]

lm_head: Qwen3-8B's head 151936 x 4096 and a 32000 x 4096 head, M = 1 .. 8, against cuBLAS
(torch.nn.functional.linear, bf16 out), weights rotated over copies totalling >= 5x L2 and L2
flushed (by a read) before each run, so DRAM serves them; mlops with and without the epilogue
statistics, every instance but LM_SKIP's.
Bytes: the weight read + x + the fp32 logits written. Target: >= 98 % of copy bandwidth.
Sampling at V = 151936, B in {1, 8, 64}, every mode, against torch.argmax (greedy), torch.topk +
softmax + multinomial (top-k) and torch's sort-based top-p; every case is captured in a CUDA graph
and timed by replay, so Python overhead is not what is measured. The logits stay in L2 between
runs (as after an LM head); they are N(0, 3^2) from a seeded generator (the same rows in every call).
Target: <= 15 us at B = 1, <= 60 us at B = 64.
FlashInfer's sampling is compared when `import flashinfer` works; otherwise one line says so.
"""

from __future__ import annotations

import argparse
import pathlib
import statistics
import sys

import torch

ROOT = pathlib.Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT / "tools" / "testing"))
from mlops_bench import Bench, graphed  # noqa: E402

import mlops.vocab as mv  # noqa: E402


# lm_head instances that lost by far at every (V, M) of GPU run 21 (151936 x 4096 with stats, M = 1:
# 489 / 1189 / 501 / 513 / 1048 / 369 / 327 us against stream32's 306) or tied their plain form (_tlb:
# 304.1 vs 304.1 at M = 1): no longer timed, so the bench stays short as candidates are added
LM_SKIP = ("cuda_core_full_grid", "cuda_core_1cta", "mma_m16n8k16_bf16", "mma_m16n8k8_f16", "mma_m8n8k4_f16",
           "mma_m16n8k16_bf16_pipe_2cta", "mma_m16n8k16_bf16_pipe_agg", "mma_m16n8k16_bf16_stream8_tlb",
           "mma_m16n8k16_bf16_stream16_tlb", "mma_m16n8k16_bf16_stream32_tlb")


def bench_lm_head(b: Bench, quick: bool, only: tuple = ()):
    l2 = b.info["l2_bytes"] or (50 << 20)
    for V, H in [(151936, 4096), (32000, 4096)]:
        wbytes = V * H * 2
        copies = max(2, -(-5 * l2 // wbytes))
        ws = [torch.randn(V, H, device="cuda", dtype=torch.bfloat16) * 0.02 for _ in range(copies)]
        for M in ([1, 8] if quick else range(1, 9)):
            x = torch.randn(M, H, device="cuda", dtype=torch.bfloat16)
            out = torch.empty(M, V, device="cuda")
            # one graph per (impl, weight copy), replayed in rotation: no Python between the events
            makers = {
                "mlops": lambda w: (lambda: mv.lm_head(x, w, out=out)),
                "mlops+stats": lambda w: (lambda: mv.lm_head(x, w, out=out, stats=True)),
                "cublas": lambda w: (lambda: torch.nn.functional.linear(x, w)),
            }
            # every other instance that runs here (but those LM_SKIP names; only those named in --variants
            # if any are), with the statistics on: what the planner would need to see before it picks an
            # instance for some M
            for v in mv.lm_head_variants():
                named = v["name"] in only if only else v["name"] not in LM_SKIP
                if v["index"] != 0 and named and mv.lm_head_variant_runs(v["name"]):
                    makers[f"mlops {v['name']}+stats"] = (
                        lambda w, name=v["name"]: (lambda: mv.lm_head(x, w, out=out, stats=True, variant=name)))
                    if "stream" in v["name"]:  # the candidates also plain: what the statistics cost them
                        makers[f"mlops {v['name']}"] = (
                            lambda w, name=v["name"]: (lambda: mv.lm_head(x, w, out=out, variant=name)))
            fns = {}
            for impl, make in list(makers.items()):
                try:
                    replays = [graphed(make(w)) for w in ws]
                except RuntimeError as e:  # one instance that cannot be captured must not cost the others' rows
                    print(f"# lm_head {V}x{H} M={M} {impl}: not timed ({e})", flush=True)
                    del makers[impl]
                    continue
                state = {"i": 0}

                def rotate(replays=replays, state=state):
                    state["i"] = (state["i"] + 1) % len(replays)
                    replays[state["i"]]()

                fns[impl] = rotate
            t = b.time_interleaved(fns, flush=True, reps=30 if quick else 100)
            nbytes = wbytes + M * H * 2 + M * V * 4
            for impl in makers:
                if impl == "cublas":
                    continue
                b.record(case=f"lm_head {V}x{H} M={M}", impl=impl, seconds=t[impl], bytes=nbytes,
                         peer="cublas", peer_seconds=t["cublas"])
            b.record(case=f"lm_head {V}x{H} M={M}", impl="cublas", seconds=t["cublas"], bytes=wbytes + M * H * 2 + M * V * 2)
        del ws


def kernel_seconds(b: Bench, fn):
    """Bench.kernel_time, or None where the profiler gives nothing usable (the row then has no
    kernel_us)."""
    try:
        return b.kernel_time(fn, flush=True)
    except Exception:  # noqa: BLE001 - a diagnostic column, never a reason to lose the bench
        return None


def bench_lm_head_gap(b: Bench):
    """Where the bench's time goes beyond the kernel's, M = 1: the planned call, cuBLAS, stream32 and
    stream8_rr plain, under one changed condition each of the standard one (two weight copies
    rotated, L2 flushed by a read, graph replay):
      one_copy   the same weight every call (address translation of a 1.2 GB rotation)
      back2back  eight rotated calls in one timed region, time / 8 (no flush, no lead gap)
    (Run 21 also timed a write flush (the standard until then: it cost the pipe 25 us), eager calls
    and four copies: the last two changed nothing, docs/vocab.md.) kernel_us: CUPTI's duration of
    the call's kernels."""
    for V, H in [(151936, 4096), (32000, 4096)]:
        ws = [torch.randn(V, H, device="cuda", dtype=torch.bfloat16) * 0.02 for _ in range(2)]
        x = torch.randn(1, H, device="cuda", dtype=torch.bfloat16)
        out = torch.empty(1, V, device="cuda")
        impls = {"mlops": lambda w: (lambda: mv.lm_head(x, w, out=out)),
                 "cublas": lambda w: (lambda: torch.nn.functional.linear(x, w))}
        for name in ("mma_m16n8k16_bf16_stream32", "mma_m16n8k16_bf16_stream8_rr"):
            if mv.lm_head_variant_runs(name):
                impls[f"mlops {name}"] = lambda w, name=name: (lambda: mv.lm_head(x, w, out=out, variant=name))
        nbytes = V * H * 2 + H * 2 + V * 4

        def rotating(make, copies):
            calls = [graphed(make(w)) for w in ws[:copies]]
            state = {"i": 0}

            def call():
                state["i"] = (state["i"] + 1) % len(calls)
                calls[state["i"]]()
            return call

        def eight(call):
            def run():
                for _ in range(8):
                    call()
            return run

        conds = {"standard": dict(copies=2), "one_copy": dict(copies=1), "back2back": dict(copies=2, n=8)}
        for cond, c in conds.items():
            n = c.get("n", 1)
            fns = {impl: rotating(make, c["copies"]) for impl, make in impls.items()}
            if n > 1:
                fns = {impl: eight(f) for impl, f in fns.items()}
            t = b.time_interleaved(fns, flush=n == 1, reps=30)
            # the kernels' own duration (CUPTI) under the same condition: launch vs the kernels' run
            ku = {impl: kernel_seconds(b, f) for impl, f in fns.items()} if n == 1 else {}
            for impl in impls:
                k = ku.get(impl)
                b.record(case=f"lm_head gap {V}x{H} M=1 {cond}", impl=impl, seconds=t[impl] / n, bytes=nbytes,
                         **({"kernel_us": round(k * 1e6, 2)} if k else {}))
        ws.clear()  # the two 1.2 GB copies go before the next V's (a del reads to ruff as a use after del)


MODES = {
    "greedy": dict(temperature=0.0),
    "temperature": dict(temperature=0.8),
    "top_k50": dict(temperature=0.8, top_k=50),
    "top_p0.9": dict(temperature=0.8, top_p=0.9),
    "min_p0.05": dict(temperature=0.8, min_p=0.05),
    "top_k50_top_p0.9_min_p0.05": dict(temperature=0.8, top_k=50, top_p=0.9, min_p=0.05),
    "penalties_top_p0.9": dict(temperature=0.8, top_p=0.9, repetition_penalty=1.1, presence_penalty=0.2),
    "greedy+stats": dict(temperature=0.0),
    "top_k50+stats": dict(temperature=0.8, top_k=50),
}


# run 21: the staged and early-stop forms and split lost every row to the lean / gather forms
SKIP_SAMPLERS = ("t256", "t512", "cluster8", "cluster16", "cluster16_smem_t1024", "cluster8_smem", "cluster16_smem",
                 "cluster8_smem_es", "cluster16_smem_es", "split")
# kernel_time (one profiler session a row, ~0.5 s) for the planned call (lean / gather since run 21),
# the lean form and this round's candidates, at the batch sizes of the targets: 72 sessions, not 300
# (session 16: the tk forms at B = 1 and 8, where the tk form is the planned top-k call; GPU run 93 timed the tke forms
# here too, and run 95 the tpl forms at B = 64: both went back after their runs, slower)
KERNEL_TIMED = {1: (None, "cluster16_lean", "cluster16_late", "cluster16_wide", "cluster16_tp", "cluster16_tk"),
                8: (None, "cluster8_tk"),
                32: (None, "cluster4_tp3g"),
                64: (None, "cluster8_lean", "cluster8_late", "cluster8_wide", "cluster8_tp", "cluster8_tp2", "cluster8_tp3",
                     "cluster2_tp3g", "cluster2_tp3g_t512")}


# FlashInfer's call for the same mode (bench_sampling adds these peers when flashinfer imports)
FI_PEER = {"temperature": "flashinfer.sampling", "top_k50": "flashinfer.top_k", "top_k50+stats": "flashinfer.top_k",
           "top_p0.9": "flashinfer.top_p", "min_p0.05": "flashinfer.min_p",
           "top_k50_top_p0.9_min_p0.05": "flashinfer.top_k_top_p"}


def torch_top_p(z, p=0.9, t=0.8):
    probs = torch.softmax(z / t, -1)
    sp, si = torch.sort(probs, descending=True)
    cum = torch.cumsum(sp, -1)
    sp = torch.where(cum - sp > p, torch.zeros_like(sp), sp)
    pick = torch.multinomial(sp, 1)
    return si.gather(-1, pick)


def torch_top_k(z, k=50, t=0.8):
    v, i = torch.topk(z / t, k, -1)
    return i.gather(-1, torch.multinomial(torch.softmax(v, -1), 1))


def stats_of(z: torch.Tensor) -> mv.LmHeadOutput:
    """What lm_head(..., stats=True) would return for these logits (built with torch ops, so any B)."""
    bits = z.view(torch.int32).to(torch.int64) & 0xFFFFFFFF
    key = torch.where(bits >= 0x80000000, (~bits) & 0xFFFFFFFF, bits | 0x80000000)
    kmax = key.max(1, keepdim=True).values
    first = torch.argmax((key == kmax).to(torch.int8), 1, keepdim=True)  # the lowest index of the max
    best = ((kmax << 32) | (0xFFFFFFFF - first))[:, 0]  # the uint64 bits, held in an int64
    hist = torch.stack([torch.bincount(key[i] >> 24, minlength=256) for i in range(z.shape[0])]).to(torch.int32)
    mx, am = mv.decode_best(best)
    return mv.LmHeadOutput(z, mx, am, hist, best)


def bench_sampling(b: Bench, quick: bool, only_variants: tuple = (), batches: tuple = (1, 8, 64), modes: tuple = ()):
    V = 151936
    try:
        import flashinfer  # noqa: F401
        have_fi = True
    except ImportError:
        have_fi = False
        b.record(case="sampling", impl="flashinfer", skipped="flashinfer is not installed on this machine")
    for B in batches:
        # the same logits in every process (session 46): a row's time depends on its values (where the top-p
        # threshold falls, how many elements share its bins: tp3_rounds' one warp takes at most 32), so unseeded rows
        # left part of the call-to-call spread to the data
        gen = torch.Generator(device="cuda").manual_seed(1000 + B)
        z = torch.randn(B, V, device="cuda", generator=gen) * 3
        hist = torch.randint(0, V, (B, 256), device="cuda", dtype=torch.int32, generator=gen)
        hlen = torch.full((B,), 256, device="cuda", dtype=torch.int32)
        peers = {
            "torch.argmax": lambda: torch.argmax(z, -1),
            "torch.topk+multinomial": lambda: torch_top_k(z),
            "torch.sort top_p": lambda: torch_top_p(z),
        }
        if have_fi:
            import flashinfer

            fs = flashinfer.sampling
            fi_rng = dict(seed=1, offset=0)  # a fixed seed / offset: no host generator, so the call can be graphed
            # the same modes as ours at temperature 0.8 (softmax of z / 0.8 included in the timed call, as
            # torch's peers do; FlashInfer's *_from_logits forms where it has them)
            peers["flashinfer.top_p"] = lambda: fs.top_p_sampling_from_probs(torch.softmax(z / 0.8, -1), 0.9, **fi_rng)
            peers["flashinfer.top_k"] = lambda: fs.top_k_sampling_from_probs(torch.softmax(z / 0.8, -1), 50, **fi_rng)
            peers["flashinfer.min_p"] = lambda: fs.min_p_sampling_from_probs(torch.softmax(z / 0.8, -1), 0.05, **fi_rng)
            peers["flashinfer.top_k_top_p"] = lambda: fs.top_k_top_p_sampling_from_logits(z / 0.8, 50, 0.9, **fi_rng)
            peers["flashinfer.sampling"] = lambda: fs.sampling_from_logits(z / 0.8, **fi_rng)
        peer_t = {}
        for name, fn in peers.items():
            try:
                peer_t[name] = b.time(graphed(fn), flush=False, reps=50 if quick else 200)
            except Exception as e:  # a peer that cannot be graphed is timed eagerly, and says so
                peer_t[name] = b.time(fn, flush=False, reps=50 if quick else 200)
                print(f"# {name}: eager timing ({type(e).__name__}: {e})", file=sys.stderr)
            b.record(case=f"sample V={V} B={B}", impl=name, seconds=peer_t[name])
        # the planner's pick (mode-aware: mlops_sample_plan_configs), then every instance by name but
        # those that lost every mode by a margin (run 17: t256 / t512, never faster than t1024 at
        # V = 151936, the unstaged cluster8 / cluster16 and cluster16_smem_t1024; run 21: the staged,
        # early-stop and split forms, behind the lean ones everywhere), so the section stays under 150 s
        named = [v["name"] for v in mv.sample_variants()
                 if (v["name"] in only_variants if only_variants else v["name"] not in SKIP_SAMPLERS)]
        for mode, cfg in MODES.items():
            if modes and mode not in modes:
                continue
            for variant in [None] + named:
                t, planned, kt = time_sampler(b, z, hist, hlen, mode, cfg, variant, quick)
                peer = {"greedy": "torch.argmax", "greedy+stats": "torch.argmax", "top_k50": "torch.topk+multinomial",
                        "top_k50+stats": "torch.topk+multinomial"}.get(mode, "torch.sort top_p")
                fi = FI_PEER.get(mode) if have_fi else None
                target = 15e-6 if B == 1 else 60e-6 if B == 64 else None
                ran = mv.sample_variant_runs_as(planned, B, V)  # the kernel that was timed
                b.record(case=f"sample V={V} B={B} {mode}", impl="mlops" if variant is None else f"mlops {variant}",
                         ran_as=ran, seconds=t, kernel_seconds=kt, peer=peer, peer_seconds=peer_t[peer],
                         fi_peer=fi, fi_peer_seconds=peer_t.get(fi),
                         target_us=None if target is None else target * 1e6,
                         meets_target=None if target is None else t <= target)


ROW_SWEEP_MODES = ("top_p0.9", "penalties_top_p0.9", "top_k50_top_p0.9_min_p0.05", "temperature")


def bench_row_sweep(b: Bench, n: int, modes: tuple = ()):
    """B = 1's planned call on n seeded rows (seeds 1001 .. 1000 + n; 1001 is bench_sampling's B = 1 row), timed as
    bench_sampling times it: the spread a target read on one row hides. Session 55 (GPU run 255, an H100): top-p's
    time follows the wide bin its threshold falls in (quarter octaves of the logit: [6, 7) holds ~2000 elements of a
    N(0, 3^2) row, [7, 8) ~900), events 15.1 - 20.0 us over 16 rows, seed 1001's among the slow ones."""
    V = 151936
    for mode in modes or ROW_SWEEP_MODES:
        cfg = MODES[mode]
        ts, kts = [], []
        for seed in range(1001, 1001 + n):
            gen = torch.Generator(device="cuda").manual_seed(seed)
            z = torch.randn(1, V, device="cuda", generator=gen) * 3
            hist = torch.randint(0, V, (1, 256), device="cuda", dtype=torch.int32, generator=gen)
            hlen = torch.full((1,), 256, device="cuda", dtype=torch.int32)
            t, planned, kt = time_sampler(b, z, hist, hlen, mode, cfg, None, quick=False)
            ts.append(t)
            kts.append(kt)
        us = [round(t * 1e6, 2) for t in ts]
        b.record(case=f"sample V={V} B=1 {mode} rows", impl="mlops", ran_as=mv.sample_variant_runs_as(planned, 1, V),
                 seconds=statistics.median(ts), row_seeds=[1001, 1000 + n], row_us=us, min_us=min(us), max_us=max(us),
                 kernel_us=[None if k is None else round(k * 1e6, 2) for k in kts],
                 under_target=sum(t <= 15e-6 for t in ts))


def time_sampler(b: Bench, z, hist, hlen, mode: str, cfg: dict, variant, quick: bool) -> tuple:
    B, V = z.shape
    s = mv.Sampler(B, V, device="cuda", seed=1, variant=variant, **cfg)
    zz = z.clone()
    toks = torch.empty(B, dtype=torch.int32, device="cuda")
    if mode.endswith("+stats"):
        st = stats_of(z)
        fn = lambda: s(zz, tokens=toks, stats=st)  # noqa: E731
    elif "repetition_penalty" in cfg:
        fn = lambda: s(zz, history=hist, history_len=hlen, tokens=toks)  # noqa: E731
    else:
        fn = lambda: s(zz, tokens=toks)  # noqa: E731
    planned = s._plans[(mode.endswith("+stats"), "repetition_penalty" in cfg)]
    replay = graphed(fn)
    t = b.time(replay, flush=False, reps=50 if quick else 200)
    # the kernels' own duration (CUPTI, no launch latency) for the planned call and the candidates
    # of this round, next to the event time the targets are read on
    kt = None
    if variant in KERNEL_TIMED.get(B, ()):
        try:
            kt = b.kernel_time(replay, flush=False, reps=20)
        except Exception:  # noqa: BLE001 - a diagnostic column, never a reason to lose the bench
            kt = None
    return t, mv.sample_variants()[planned]["name"], kt


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true", help="fewer shapes and repetitions")
    ap.add_argument("--only", choices=["lm_head", "lm_head_gap", "sampling"], default=None)
    ap.add_argument("--variants", default="",
                    help="only these sampler and / or lm_head variants (comma-separated) next to the planned call")
    ap.add_argument("--batches", default="1,8,64", help="the sampling section's batch sizes (comma-separated)")
    ap.add_argument("--modes", default="", help="only these sampling modes (comma-separated names of MODES)")
    ap.add_argument("--row-seeds", type=int, default=0,
                    help="also B = 1's planned call on this many seeded rows (bench_row_sweep; with --modes, those)")
    a = ap.parse_args()
    only_variants = tuple(v for v in a.variants.split(",") if v)
    lm_names = {v["name"] for v in mv.lm_head_variants()}
    sample_names = {v["name"] for v in mv.sample_variants()}
    unknown = set(only_variants) - lm_names - sample_names
    if unknown:
        ap.error(f"--variants: unknown sampler / lm_head variants {sorted(unknown)}")
    bad_modes = set(m for m in a.modes.split(",") if m) - set(MODES)
    if bad_modes:
        ap.error(f"--modes: unknown modes {sorted(bad_modes)}")
    only_lm = tuple(v for v in only_variants if v in lm_names)
    only_variants = tuple(v for v in only_variants if v in sample_names)
    b = Bench("vocab")
    b.header()
    if a.only in (None, "lm_head"):
        bench_lm_head(b, a.quick, only_lm)
    if a.only in (None, "lm_head_gap"):
        bench_lm_head_gap(b)
    if a.only in (None, "sampling"):
        bench_sampling(b, a.quick, only_variants, tuple(int(x) for x in a.batches.split(",") if x),
                       tuple(m for m in a.modes.split(",") if m))
    if a.row_seeds > 0 and a.only in (None, "sampling"):
        bench_row_sweep(b, a.row_seeds, tuple(m for m in a.modes.split(",") if m))


if __name__ == "__main__":
    main()
