#!/bin/bash
# Session 15, GPU run 88 (one H200, <= 200 s): the norm planner at few rows. bench_norm.py --variants over T in {1, 8,
# 128} x H in {2048, 4096, 8192} (bf16, events, L2 flushed) for the candidate variants, on the wheel of 3a5c619
# (.carry/s15n/new; plan_call unchanged since 9f19bb4): run 84 read 128x4096 INT8 / NVFP4 planned (w8c2: plan_call's
# few-rows return) at 17.1-17.5 / 20.0-20.4 µs against y's 6.7-7.3 and r16lx2k's 7.9 / r16lx4wk's 7.0-7.2.
# Results: $OUT/m/bench/*.jsonl, $OUT/m/bench.log.
export PYTHONUNBUFFERED=1
mkdir -p $OUT/m/bench
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/nm .carry/s15n/new/mlops_norm-*.whl
V=w8c2,w4c2,w2c2,w8,r8,r16,r16l,r16lw,r16lx2,r16lx4w,r16lx2e,r16lx4we,r16lx2f,r16lx4wf,r16lx2g,r16lx4wg,r16lx2k,r16lx4wk
MLOPS_BENCH_OUT=$OUT/m/bench PYTHONPATH=/tmp/nm:$PWD/tools/testing timeout 180 python3 packages/norm/bench/bench_norm.py \
  --variants --variant-names $V --shapes 1x4096,8x4096,128x4096,1x2048,8x2048,128x2048,1x8192,8x8192,128x8192 \
  > $OUT/m/bench.log 2>&1
echo "bench rc=$? at ${SECONDS}s"
python3 - $OUT/m/bench <<'PY'
import glob, json, sys, collections
best = collections.defaultdict(list)
for f in glob.glob(sys.argv[1] + "/*.jsonl"):
    for l in open(f):
        r = json.loads(l)
        if "us" not in r: continue
        c = r["case"]
        if c.endswith("_variant"): best[(r["shape"], c[:-8])].append((r["us"], r["impl"], r.get("planner")))
        elif r.get("impl") == "mlops": best[(r["shape"], c)].insert(0, (r["us"], "PLANNED", None))
for (shape, case), v in sorted(best.items()):
    pl = [x for x in v if x[1] == "PLANNED"]; vs = sorted(x for x in v if x[1] != "PLANNED")
    print(shape, case, "planned", pl[0][0] if pl else "-", "(%s)" % (vs[0][2] if vs else "-"), "| best", vs[:4])
PY
