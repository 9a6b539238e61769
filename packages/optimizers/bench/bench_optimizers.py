"""mlops-optimizers against torch.optim.AdamW(fused=True) and (foreach=True), side by side in
one process on the same parameters and gradients (each optimizer has its own states). L2 is
flushed before every timed step (the working sets are GBs anyway). One JSON line per case.

    python packages/optimizers/bench/bench_optimizers.py [--quick] [--case 8bit ...]

Cases (issue 4): 1.0e9 fp32 params in 100 tensors; bf16 params + fp32 master weights (peer:
torch's usual recipe, fp32 master params: grads copied up, fused step, params copied down);
8-bit states (peer: fp32 states; the memory ratio is reported); 10,000 tensors of 4,096.
Bytes are what each update must move: fp32 AdamW reads p, g, m, v and writes p, m, v
(28 B a param). Targets: fp32 >= 1.25x torch fused and >= 90 % of copy bandwidth; 10,000
small tensors >= 3x torch foreach; 8-bit states <= 30 % of fp32 state memory.
"""

import argparse
import gc
import os
import sys
import time

import torch

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "..", "tools", "testing"))
import mlops.optimizers as mo  # noqa: E402
from mlops_bench import Bench  # noqa: E402


def make(n_tensors, numel, dtype, seed=0):
    torch.manual_seed(seed)
    ps = [torch.nn.Parameter(torch.randn(numel, device="cuda", dtype=dtype) * 0.02) for _ in range(n_tensors)]
    for p in ps:
        p.grad = torch.randn_like(p) * 1e-3
    return ps


def state_bytes(opt):
    return sum(t.numel() * t.element_size() for st in opt.state.values() for k, t in st.items()
               if isinstance(t, torch.Tensor) and k != "step")


def wall(fn, reps=20):
    """Host wall time a step (synchronized at the ends): what Python overhead adds."""
    fn()
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(reps):
        fn()
    torch.cuda.synchronize()
    return (time.perf_counter() - t0) / reps


def free():
    gc.collect()
    torch.cuda.empty_cache()


def case_fp32(b, n_tensors, numel, reps):
    ps = make(n_tensors, numel, torch.float32)
    n = n_tensors * numel
    ours = {v: mo.AdamW(ps, lr=1e-4, weight_decay=0.01, variant=v) for v in ("occ3", "occ2")}
    fused = torch.optim.AdamW(ps, lr=1e-4, weight_decay=0.01, fused=True)
    foreach = torch.optim.AdamW(ps, lr=1e-4, weight_decay=0.01, foreach=True)
    fns = {"mlops_occ3": ours["occ3"].step, "mlops_occ2": ours["occ2"].step, "torch_fused": fused.step,
           "torch_foreach": foreach.step}
    t = b.time_interleaved(fns, flush=True, reps=reps)
    nbytes = 28 * n
    case = f"adamw fp32 {n_tensors}x{numel}"
    best = min(("mlops_occ3", "mlops_occ2"), key=lambda k: t[k])
    for k in fns:
        b.record(case=case, impl=k, seconds=t[k], bytes=nbytes,
                 peer_seconds=t["torch_fused"] if k.startswith("mlops") else None)
    b.record(case=case, impl="mlops_best_vs_foreach", seconds=t[best], bytes=nbytes, peer_seconds=t["torch_foreach"],
             variant=best)


def case_bf16_master(b, n_tensors, numel, reps):
    ps = make(n_tensors, numel, torch.bfloat16)
    n = n_tensors * numel
    ours = mo.AdamW(ps, lr=1e-4, weight_decay=0.01, master_weights=True)
    # torch's recipe for bf16 weights with fp32 master weights
    masters = [torch.nn.Parameter(p.detach().float()) for p in ps]
    for m in masters:
        m.grad = torch.empty_like(m)
    fused = torch.optim.AdamW(masters, lr=1e-4, weight_decay=0.01, fused=True)
    grads, mgrads = [p.grad for p in ps], [m.grad for m in masters]

    @torch.no_grad()  # the bf16 params are leaves that require grad: copy into them outside autograd
    def torch_step():
        torch._foreach_copy_(mgrads, grads)
        fused.step()
        torch._foreach_copy_(ps, [m.detach() for m in masters])

    t = b.time_interleaved({"mlops": ours.step, "torch_fused_master": torch_step}, flush=True, reps=reps)
    # ours: read g (2), master, m, v (12); write p (2), master, m, v (12)
    nbytes = 28 * n
    case = f"adamw bf16+fp32 master {n_tensors}x{numel}"
    b.record(case=case, impl="mlops", seconds=t["mlops"], bytes=nbytes, peer_seconds=t["torch_fused_master"])
    b.record(case=case, impl="torch_fused_master", seconds=t["torch_fused_master"], bytes=nbytes)
    sr = mo.AdamW(ps, lr=1e-4, stochastic_rounding=True)  # bf16 without master weights
    t2 = b.time(sr.step, flush=True, reps=reps)
    b.record(case=f"adamw bf16 stochastic rounding {n_tensors}x{numel}", impl="mlops", seconds=t2,
             bytes=(2 + 2 + 8) * n + (2 + 8) * n)


def case_8bit(b, n_tensors, numel, reps):
    ps = make(n_tensors, numel, torch.float32)
    n = n_tensors * numel
    q8 = mo.AdamW(ps, lr=1e-4, state_8bit=True)  # the planner's variant
    q8v = {v: mo.AdamW(ps, lr=1e-4, state_8bit=True, variant=v) for v in ("occ3", "occ2")}
    fp = mo.AdamW(ps, lr=1e-4)
    fused = torch.optim.AdamW(ps, lr=1e-4, fused=True)
    t = b.time_interleaved({"mlops_8bit": q8.step, "mlops_8bit_occ3": q8v["occ3"].step,
                            "mlops_8bit_occ2": q8v["occ2"].step, "mlops_fp32": fp.step, "torch_fused": fused.step},
                           flush=True, reps=reps)
    ratio = state_bytes(q8) / state_bytes(fused)
    case = f"adamw 8-bit states {n_tensors}x{numel}"
    # read p, g (8) + codes (2); write p (4) + codes (2); absmax 8 B a 256 block
    b.record(case=case, impl="mlops_8bit", seconds=t["mlops_8bit"], bytes=16 * n + n // 32,
             peer_seconds=t["torch_fused"], state_bytes=state_bytes(q8), state_ratio_vs_fp32=round(ratio, 4),
             target_ratio=0.30)
    for v in ("occ3", "occ2"):  # both kernel variants (the same bits), for the planner
        b.record(case=case, impl=f"mlops_8bit_{v}", seconds=t[f"mlops_8bit_{v}"], bytes=16 * n + n // 32,
                 peer_seconds=t["torch_fused"])
    b.record(case=case, impl="mlops_fp32", seconds=t["mlops_fp32"], bytes=28 * n, peer_seconds=t["torch_fused"])
    b.record(case=case, impl="torch_fused", seconds=t["torch_fused"], bytes=28 * n, state_bytes=state_bytes(fused))


def case_many_small(b, n_tensors, numel, reps):
    ps = make(n_tensors, numel, torch.float32)
    n = n_tensors * numel
    ours = mo.AdamW(ps, lr=1e-4)
    fused = torch.optim.AdamW(ps, lr=1e-4, fused=True)
    foreach = torch.optim.AdamW(ps, lr=1e-4, foreach=True)
    fns = {"mlops": ours.step, "torch_fused": fused.step, "torch_foreach": foreach.step}
    t = b.time_interleaved(fns, flush=True, reps=reps)
    case = f"adamw fp32 {n_tensors}x{numel}"
    for k, fn in fns.items():
        b.record(case=case, impl=k, seconds=t[k], bytes=28 * n,
                 peer_seconds=t["torch_foreach"] if k != "torch_foreach" else None,
                 wall_us=round(wall(fn) * 1e6, 1), target_speedup_vs_foreach=3.0 if k == "mlops" else None)

    # The whole step captured in a CUDA graph: the GPU's cost alone, without Python's per-parameter
    # loop (the eager numbers above include it: events bracket the host work that launches the step).
    # One 41-Mi-element tensor with the same bytes is the yardstick "10,000 tensors cost little more".
    g_ours = mo.AdamW(ps, lr=torch.tensor(1e-4, device="cuda"))
    g_ours.step()
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        g_ours.step()
    one = make(1, n, torch.float32)
    one_opt = mo.AdamW(one, lr=1e-4)
    tg = b.time_interleaved({"graph": graph.replay, "one_tensor": one_opt.step}, flush=True, reps=reps)
    b.record(case=case, impl="mlops_cuda_graph", seconds=tg["graph"], bytes=28 * n, peer_seconds=t["torch_foreach"],
             one_tensor_us=round(tg["one_tensor"] * 1e6, 1),
             cost_vs_one_tensor=round(tg["graph"] / tg["one_tensor"], 3))
    del graph, g_ours, one, one_opt

    # the table cache: gradients reallocated every step (zero_grad(set_to_none=True)) force a rebuild:
    # host lists -> pinned buffer -> async copy, no synchronization
    def rebuild_step():
        for p in ps:
            p.grad = torch.empty_like(p)
        ours.step()

    def realloc_only():
        for p in ps:
            p.grad = torch.empty_like(p)

    tr = b.time(rebuild_step, flush=True, reps=max(5, reps // 4))
    ta = b.time(realloc_only, flush=True, reps=max(5, reps // 4))
    b.record(case=case, impl="mlops_table_rebuilt_each_step", seconds=tr, bytes=28 * n,
             grad_realloc_us=round(ta * 1e6, 1), wall_us=round(wall(rebuild_step, 5) * 1e6, 1))


def case_clip(b, n_tensors, numel, reps):
    ps = make(n_tensors, numel, torch.float32)
    n = n_tensors * numel
    t = b.time_interleaved({"mlops_clip": lambda: mo.clip_grad_norm_(ps, 1e9),
                            "torch_clip_foreach": lambda: torch.nn.utils.clip_grad_norm_(ps, 1e9, foreach=True)},
                           flush=True, reps=reps)
    case = f"clip_grad_norm fp32 {n_tensors}x{numel}"
    # ours: read g for the norm, read + write g for the scale (torch the same)
    b.record(case=case, impl="mlops_clip", seconds=t["mlops_clip"], bytes=12 * n, peer_seconds=t["torch_clip_foreach"])
    b.record(case=case, impl="torch_clip_foreach", seconds=t["torch_clip_foreach"], bytes=12 * n)


CASES = ("fp32", "bf16", "8bit", "small", "clip")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true", help="1/10 of the sizes, fewer repetitions")
    ap.add_argument("--case", action="append", choices=CASES,
                    help="run only this case (repeatable); default: all")
    a = ap.parse_args()
    b = Bench("optimizers", reps=20 if a.quick else 50)
    b.header()
    big = 1_000_000 if a.quick else 10_000_000  # 100 tensors: 1.0e8 / 1.0e9 params
    reps = 10 if a.quick else 30
    # each case's tensors die with its frame; free() hands the memory back before the next
    for name, case, args in (("fp32", case_fp32, (100, big)), ("bf16", case_bf16_master, (100, big)),
                             ("8bit", case_8bit, (100, big)),
                             ("small", case_many_small, (1000 if a.quick else 10_000, 4096)),
                             ("clip", case_clip, (100, big))):
        if a.case and name not in a.case:
            continue
        case(b, *args, 3 * reps if case is case_many_small else reps)
        free()


if __name__ == "__main__":
    main()
