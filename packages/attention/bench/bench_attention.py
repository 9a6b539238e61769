"""mlops-attention (FBLA decode) against PyTorch SDPA with BF16 K/V (flash backend, enable_gqa),
side by side in one process on the same K/V, L2 flushed before every timed call, interleaved.
One JSON line per case (tools/testing/mlops_bench.py); docs/performance.md keeps the tables.
FlashInfer's batch decode (paged BF16 K/V, page 16; its CUDA-core and tensor-core forms) is timed beside
them where `import flashinfer` works (the GPU machine has it only when carried: docs/attention.md,
"FlashInfer's decode on the device"); otherwise its row says why it is missing.

    python packages/attention/bench/bench_attention.py [--quick] [--peaked] [--targets]

--kernel-time: a kernel_us column (the kernels' own durations summed, Bench.kernel_time) next to the
event time, for the random-q cases (peaked q times the same within 1 %: one profiler session a row is
~1 s). --targets: only the two target shapes (B1 L16K, B8 L128K), random and peaked q (~60 s). Every
decode variant (mlops.attention.decode_variants()) is timed side by side: impl "fbla <mode> <kind>
[<variant>]"; the planner's pick (decode_variants()'s "planner" key) is imma_occ+coarse_imma since
session 4 round B (runs 18 / 20).

Cases (issue 6): 32 q heads, 8 kv heads, head_dim 128, B in {1, 8}, L in {4K, 16K, 128K}.
Targets: B8 L128K <= 450 us, B1 L16K <= 25 us.
Bytes counted: SDPA: K and V in BF16 (+ q, out); FBLA exact: every record of the closed groups,
the BF16 sink and filling group (+ q, out); FBLA skip: the same upper bound (what it reads depends on
the data: the coarse K plane always, the fine plane and V of refined blocks only), so its
frac_copy_bw is an "exact-equivalent" rate. --peaked draws q from the keys (attention concentrated
on a few tokens, as in real models) so the skip has blocks to skip; the default q is random (flat
attention: the skip refines nearly everything).
"""

import argparse
import os
import sys

import torch

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "..", "tools", "testing"))
from mlops_bench import Bench  # noqa: E402

import mlops.attention as A  # noqa: E402

HQ, HK, D = 32, 8, 128


def sdpa_fn(q4, k, v):
    from torch.nn.attention import SDPBackend, sdpa_kernel

    def run():
        with sdpa_kernel(SDPBackend.FLASH_ATTENTION):
            return torch.nn.functional.scaled_dot_product_attention(q4, k, v, enable_gqa=True)

    try:
        run()
        torch.cuda.synchronize()
        return run, "sdpa flash (enable_gqa)"
    except RuntimeError:  # flash without GQA support in this torch: the memory-efficient kernel
        def run_eff():
            with sdpa_kernel([SDPBackend.EFFICIENT_ATTENTION, SDPBackend.FLASH_ATTENTION]):
                return torch.nn.functional.scaled_dot_product_attention(q4, k, v, enable_gqa=True)
        return run_eff, "sdpa efficient (enable_gqa)"


def flashinfer_fns(q, k, v):
    """FlashInfer's batch decode over the same BF16 K/V, paged (page size 16, NHD, the layout serving engines
    use), planned once outside the timing, in both of its forms: the CUDA-core decode kernels (the wrapper's
    default) and use_tensor_cores=True (its prefill kernels, which FlashInfer recommends for large GQA groups).
    {key: (run, name)} for those that run, and {key: why} for those that do not (flashinfer not importable,
    a module not built for this GPU)."""
    try:
        import flashinfer
    except Exception as e:  # noqa: BLE001 - the peer is optional; the row says why it is missing
        return {}, {"flashinfer": f"flashinfer not importable: {type(e).__name__}: {e}"}
    B, _, L, _ = k.shape
    P = 16
    if L % P:
        return {}, {"flashinfer": f"L = {L} is not a multiple of the page size {P}"}
    pages = L // P
    # [B, HK, L, D] -> pages of [P, HK, D], request b owning pages b * pages ... (b + 1) * pages - 1
    kc = k.permute(0, 2, 1, 3).reshape(B * pages, P, HK, D).contiguous()
    vc = v.permute(0, 2, 1, 3).reshape(B * pages, P, HK, D).contiguous()
    i32 = dict(dtype=torch.int32, device="cuda")
    runs, missing = {}, {}
    for key, tc in (("flashinfer", False), ("flashinfer tc", True)):
        try:
            ws = torch.zeros(128 << 20, dtype=torch.uint8, device="cuda")
            w = flashinfer.BatchDecodeWithPagedKVCacheWrapper(ws, "NHD", use_tensor_cores=tc)
            w.plan(torch.arange(B + 1, **i32) * pages, torch.arange(B * pages, **i32), torch.full((B,), P, **i32),
                   HQ, HK, D, P, pos_encoding_mode="NONE", q_data_type=torch.bfloat16, kv_data_type=torch.bfloat16)
            out = torch.empty(B, HQ, D, dtype=torch.bfloat16, device="cuda")

            def run(w=w, out=out):
                return w.run(q, (kc, vc), out=out)

            run()
            torch.cuda.synchronize()
        except Exception as e:  # noqa: BLE001
            missing[key] = f"flashinfer decode (use_tensor_cores={tc}) failed: {type(e).__name__}: {str(e)[:300]}"
            continue
        form = "tensor-core" if tc else "CUDA-core"
        runs[key] = (run, f"flashinfer {flashinfer.__version__} batch decode {form} (paged bf16, page {P})")
    return runs, missing


def fbla_bytes(B, L, mode):
    closed = L // 128 - 1 if L >= 256 else 0
    tail = L - 128 * (closed + 1) if L >= 128 else 0
    rec = A.record_layout(D, mode)["bytes"]
    return B * HK * (closed * rec + (min(L, 128) + tail) * D * 2 * 2) + 2 * B * HQ * D * 2


def run_case(b: Bench, B: int, L: int, peaked: bool, variants, kernel_time: bool = False):
    g = torch.Generator(device="cuda").manual_seed(B * 7 + L)
    k = torch.randn(B, HK, L, D, device="cuda", generator=g).bfloat16()
    v = torch.randn(B, HK, L, D, device="cuda", generator=g).bfloat16()
    if peaked:
        idx = torch.randint(0, L, (B, HQ), device="cuda", generator=g)
        kh = torch.arange(HQ, device="cuda") // (HQ // HK)
        q = (k[torch.arange(B, device="cuda")[:, None], kh[None], idx].float() * 1.5).bfloat16()
    else:
        q = torch.randn(B, HQ, D, device="cuda", generator=g).bfloat16()
    shape = f"B={B} L={L} {HQ}/{HK}x{D}" + (" peaked" if peaked else "")
    sdpa, sdpa_name = sdpa_fn(q[:, :, None], k, v)
    fns = {"sdpa": sdpa}
    fi, fi_missing = flashinfer_fns(q, k, v)
    fns.update({key: run for key, (run, _) in fi.items()})
    for key, why in fi_missing.items():
        b.record(case="decode", shape=shape, impl=key, skipped=why)
    caches = {}
    for mode in ("3+3", "4+2"):
        c = A.encode(k, v, mode=mode)
        caches[mode] = c
        out = torch.empty(B, HQ, D, dtype=torch.bfloat16, device="cuda")
        for var in variants:
            v_ = None if var == "planner" else var  # "planner": variant 0, the planner's pick (pv digits)
            fns[f"{mode} exact [{var}]"] = lambda c=c, out=out, v_=v_: A.decode(q, c, exact=True, out=out, variant=v_)
            fns[f"{mode} skip [{var}]"] = lambda c=c, out=out, v_=v_: A.decode(q, c, out=out, variant=v_)
    t = b.time_interleaved(fns, reps=50 if L >= 131072 else 200)
    # the kernels' own durations summed (CUPTI; no launch latency): coarse + refine + combine for FBLA
    kt = {n: b.kernel_time(fn, reps=10 if L >= 131072 else 30) for n, fn in fns.items()} if kernel_time else {}
    sdpa_bytes = 2 * B * HK * L * D * 2 + 2 * B * HQ * D * 2
    kus = {n: round(x * 1e6, 2) for n, x in kt.items() if x is not None}
    b.record(case="decode", shape=shape, impl=sdpa_name, seconds=t["sdpa"], bytes=sdpa_bytes,
             **({"kernel_us": kus["sdpa"]} if "sdpa" in kus else {}))
    ref = sdpa().float()[:, :, 0]
    for key, (run, fi_name) in fi.items():
        b.record(case="decode", shape=shape, impl=fi_name, seconds=t[key], bytes=sdpa_bytes,
                 peer=sdpa_name, peer_seconds=t["sdpa"],
                 max_abs_diff_vs_sdpa=round((run().float() - ref).abs().max().item(), 5),
                 **({"kernel_us": kus[key]} if key in kus else {}))
    for name, sec in t.items():
        if name == "sdpa" or name in fi:
            continue
        mode = name.split()[0]
        out = fns[name]().float()
        b.record(case="decode", shape=shape, impl=f"fbla {name}", seconds=sec, bytes=fbla_bytes(B, L, mode),
                 peer=sdpa_name, peer_seconds=t["sdpa"],
                 max_abs_diff_vs_sdpa=round((out - ref).abs().max().item(), 5),
                 **({"kernel_us": kus[name]} if name in kus else {}))
    del caches, k, v
    torch.cuda.empty_cache()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true", help="L = 4K and 16K only")
    ap.add_argument("--peaked", action="store_true", help="also the cases with q drawn from the keys")
    ap.add_argument("--targets", action="store_true", help="B1 L16K and B8 L128K only, random and peaked q")
    ap.add_argument("--lengths", default="",
                    help="comma-separated context lengths instead of 4K / 16K / 128K (e.g. 16414,16484: a filling group "
                         "of 30 / 100 tokens, where the quick cases' lengths have none)")
    ap.add_argument("--batches", default="1,8", help="comma-separated batch sizes (default 1,8)")
    ap.add_argument("--variants", default="",
                    help="comma-separated variant names, 'planner' for the planner's pick (default: every variant)")
    ap.add_argument("--kernel-time", action="store_true",
                    help="also kernel_us: the call's kernel durations summed (Bench.kernel_time, CUPTI), no launch latency")
    a = ap.parse_args()
    variants = a.variants.split(",") if a.variants else [v["name"] for v in A.decode_variants()]
    b = Bench("attention")
    b.header()
    if a.targets:
        cases = [(False, 1, 16384), (False, 8, 131072), (True, 1, 16384), (True, 8, 131072)]
    else:
        Ls = [4096, 16384] if a.quick else [4096, 16384, 131072]
        if a.lengths:
            Ls = [int(x) for x in a.lengths.split(",")]
        Bs = [int(x) for x in a.batches.split(",")]
        cases = [(pk, B, L) for pk in ([False, True] if a.peaked else [False]) for B in Bs for L in Ls]
    for peaked, B, L in cases:
        run_case(b, B, L, peaked, variants, a.kernel_time and not peaked)
    rows = {(r.get("shape"), r.get("impl")): r for r in b.rows}
    verdict = {}
    for mode in ("3+3", "4+2"):
        for kind in ("exact", "skip"):
            for var in variants:
                for pk in ("", " peaked"):
                    r1 = rows.get((f"B=1 L=16384 {HQ}/{HK}x{D}{pk}", f"fbla {mode} {kind} [{var}]"))
                    r8 = rows.get((f"B=8 L=131072 {HQ}/{HK}x{D}{pk}", f"fbla {mode} {kind} [{var}]"))
                    if r1:
                        verdict[f"{mode} {kind} [{var}]{pk} B1_L16K_le_25us"] = r1["us"] <= 25.0
                    if r8:
                        verdict[f"{mode} {kind} [{var}]{pk} B8_L128K_le_450us"] = r8["us"] <= 450.0
    b.record(case="targets (issue 6)", impl="mlops", **verdict)


if __name__ == "__main__":
    main()
