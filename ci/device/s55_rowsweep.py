"""Session 55: how the B = 1 sampler call's time depends on the row. bench_vocab.py times one seeded row (seed 1001:
torch.randn(1, V) * 3); here rows of seeds 1001 .. 1000 + N (N = 16), each timed as the bench times it (graph replay,
events, median of 200; CUPTI kernel time, median of 20), for the modes it names, and saved as raw fp32 to
<dir>/rows-s<seed>.f32 for the timeline probe (MLOPS_PROBE_ROWS). Usage: python3 s55_rowsweep.py DIR [N]."""
import json
import statistics
import sys

import torch

sys.path.insert(0, "tools/testing")
import mlops.vocab as mv  # noqa: E402
from mlops_bench import Bench, graphed  # noqa: E402

V = 151936
MODES = {"top_p0.9": dict(temperature=0.8, top_p=0.9),
         "top_k50_top_p0.9_min_p0.05": dict(temperature=0.8, top_k=50, top_p=0.9, min_p=0.05),
         "temperature": dict(temperature=0.8)}
out, n = sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else 16
b = Bench("vocab", results_dir=out)
res = {m: [] for m in MODES}
for seed in range(1001, 1001 + n):
    gen = torch.Generator(device="cuda").manual_seed(seed)
    z = torch.randn(1, V, device="cuda", generator=gen) * 3
    z.cpu().numpy().tofile(f"{out}/rows-s{seed}.f32")
    for mode, cfg in MODES.items():
        s = mv.Sampler(1, V, device="cuda", seed=1, **cfg)
        toks = torch.empty(1, dtype=torch.int32, device="cuda")
        replay = graphed(lambda: s(z, tokens=toks))
        t = b.time(replay, flush=False, reps=200)
        kt = b.kernel_time(replay, flush=False, reps=20)
        row = dict(seed=seed, mode=mode, us=round(t * 1e6, 2), cupti_us=None if kt is None else round(kt * 1e6, 2),
                   token=int(toks.item()))
        res[mode].append(row)
        print(json.dumps(row), flush=True)
for mode, rows in res.items():
    us = sorted(r["us"] for r in rows)
    print(f"{mode}: {len(us)} rows, events us min {us[0]:.2f} median {statistics.median(us):.2f} max {us[-1]:.2f}; "
          f"seed 1001 {rows[0]['us']:.2f}")
