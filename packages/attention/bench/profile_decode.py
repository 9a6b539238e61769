"""One decode shape for a profiler (ncu / nsys): 32 q heads, 8 kv heads, D 128, the bench's data.

    ncu --set full -k regex:"refine|coarse|combine" -c 6 \\
        python packages/attention/bench/profile_decode.py --B 1 --L 16384 --variant warps --exact

(the reference decodes of "items" and "mma_pv+coarse_imma" run first: -k regex:"_warps" keeps only the warps
layouts' kernels; -k regex:refine_mma with --launch-skip 1 skips the reference's mma_pv launch; --variant planner
decodes as a default call does, e.g. -k regex:"refine_mma4_kernel|combine_warps_kernel" --launch-skip 1 -c 2 at
B1 L16K: the planner's refine and combine, after the mma_pv reference's combine.)

Runs a warm-up decode, then --reps decodes of each variant named (comma-separated), so ncu's
kernel filter with -c picks the kernels of the variants in order.
"""

import argparse

import torch

import mlops.attention as A

HQ, HK, D = 32, 8, 128


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--B", type=int, default=1)
    ap.add_argument("--L", type=int, default=16384)
    ap.add_argument("--variant", default="warps",
                    help="comma-separated names of decode_variants(), or 'planner' (variant 0: the planner's launch)")
    ap.add_argument("--exact", action="store_true")
    ap.add_argument("--peaked", action="store_true")
    ap.add_argument("--mode", default="3+3")
    ap.add_argument("--reps", type=int, default=1)
    a = ap.parse_args()
    g = torch.Generator(device="cuda").manual_seed(a.B * 7 + a.L)
    k = torch.randn(a.B, HK, a.L, D, device="cuda", generator=g).bfloat16()
    v = torch.randn(a.B, HK, a.L, D, device="cuda", generator=g).bfloat16()
    if a.peaked:
        idx = torch.randint(0, a.L, (a.B, HQ), device="cuda", generator=g)
        kh = torch.arange(HQ, device="cuda") // (HQ // HK)
        q = (k[torch.arange(a.B, device="cuda")[:, None], kh[None], idx].float() * 1.5).bfloat16()
    else:
        q = torch.randn(a.B, HQ, D, device="cuda", generator=g).bfloat16()
    c = A.encode(k, v, mode=a.mode)
    del k, v
    out = torch.empty(a.B, HQ, D, dtype=torch.bfloat16, device="cuda")
    # the reference of each P V form: "items" (chains) and mma_pv (digits, the form's only variant)
    pv = {v["name"]: v["pv"] for v in A.decode_variants()}
    pv["planner"] = "digits"  # the default form (the planner runs mma_pv4r's refine on sm_90)
    ref = {f: A.decode(q, c, exact=a.exact, out=out.clone(), variant=r)
           for f, r in (("chains", "items"), ("digits", "mma_pv+coarse_imma"))}
    torch.cuda.synchronize()
    for var in a.variant.split(","):
        for _ in range(a.reps):
            A.decode(q, c, exact=a.exact, out=out, variant=None if var == "planner" else var)
        torch.cuda.synchronize()
        same = torch.equal(out.view(torch.int16), ref[pv[var]].view(torch.int16))
        print(f"{var}: B={a.B} L={a.L} exact={a.exact} peaked={a.peaked} mode={a.mode}: same bits as its form's "
              f"reference ({pv[var]}): {same}")


if __name__ == "__main__":
    main()
