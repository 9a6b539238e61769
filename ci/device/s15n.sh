#!/bin/bash
# Session 15, norm device call (one H200, <= 240 s, aimed at ~190): the "k" candidates (variants 33-35: r16lx2k /
# r16lx4wk / r16lx4wk2 = r16lx2g / r16lx4wg with the epilogue's global reads, w, int8_tab and NVFP4's global factor,
# prefetched right after the x loads, into L1 ("k") or L2 only ("k2"); planned nowhere) against the planned calls.
# Wheels (sm_90, nox -s gpu_build -- --tags sm90 --package norm): .carry/s15n/before/ (fb771c0, the tree before) and
# .carry/s15n/new/ (this change), each into its own fresh --target.
# (1) alone on the GPU: bench_norm.py's harness (Bench.time = CUDA events, L2 flushed, 150 us lead; Bench.kernel_time
#     = CUPTI), bf16 HF order with a weight, no y beside a quantized output, 2048x4096 / 16384x4096 / 128x4096: y,
#     INT8 and NVFP4 planned, and by name INT8 / NVFP4 by r16lx4wg / r16lx2g / the k variants, y by r16lx2 / r16lx2k
#     / r16lx4wk (does y gain from the prefetch too?; at 128 rows the planned calls and INT8 / NVFP4 by r16lx4wk /
#     r16lx2k only); before, new, before, new (four processes, <= 25 s before / 38 s new; the before wheel skips
#     the k names);
# (2) the GPU tests that name a k variant (-k "r16lx2k or r16lx4wk": r16lx4wk2 matches too) under sm_90, 4 shards,
#     <= 60 s;
# (3) compute-sanitizer memcheck and racecheck of r16lx4wk (2501x4096 bf16: y, INT8, NVFP4 with and without a
#     global factor, FP8 dynamic / static) and r16lx2k (INT8, NVFP4), <= 22 s each.
# Results under $OUT/r/n/ (and $OUT/r/n.tgz); the summary and the bench rows are printed at the end.
# DRY=1: the shell logic only (no GPU, no python runs), for a check on a machine without a GPU.
export PYTHONUNBUFFERED=1 MLOPS_TEST_CUDA=system CUDA_CACHE_MAXSIZE=4294967296
R=$OUT/r/n; mkdir -p $R/bench; source ci/device/lib.sh
if [ -n "$DRY" ]; then  # stand-ins for what needs the GPU machine
  inst() { echo "DRY inst $*"; mkdir -p $2; }; nvidia-smi() { echo "DRY nvidia-smi"; }; timeout() { shift; "$@"; }
  python3() { echo "DRY python3 $* (PYTHONPATH=$PYTHONPATH MLOPS_SHARD=$MLOPS_SHARD) 1 passed"; }
  compute-sanitizer() { echo "DRY compute-sanitizer $* ERROR SUMMARY: 0 errors"; }
fi
END=${END:-235}
B=/tmp/s15nb; N=/tmp/s15nn; rm -rf $B $N
git rev-parse HEAD > $R/commit.txt 2>/dev/null
ls -l .carry/s15n/before/ .carry/s15n/new/ > $R/wheels.txt 2>&1
inst ".carry/s15n/before/mlops_norm-*.whl" $B; echo "install before rc=$? [${SECONDS}s]" >> $R/summary.txt
inst ".carry/s15n/new/mlops_norm-*.whl" $N; echo "install new rc=$? [${SECONDS}s]" >> $R/summary.txt
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv > $R/gpu.txt 2>&1
cat > /tmp/s15n_bench.py <<'PY'
import sys
import torch
from mlops_bench import Bench
import mlops.norm as mn
rnd, wheel = sys.argv[1], sys.argv[2]
ops = mn._ops
b = Bench("norm", lead_us=150.0)
b.header()
names = [v["name"] for v in mn.norm_variants()]
sms = torch.cuda.get_device_properties(0).multi_processor_count
dt = torch.bfloat16
Q = ("r16lx4wg", "r16lx4wk", "r16lx4wk2", "r16lx2g", "r16lx2k")
planned = [("planned", q) for q in (None, "int8", "nvfp4")]
cases = planned + [(v, None) for v in ("r16lx2", "r16lx2k", "r16lx4wk")] + [(v, q) for q in ("int8", "nvfp4") for v in Q]
few = planned + [(v, q) for q in ("int8", "nvfp4") for v in ("r16lx4wk", "r16lx2k")]  # 128 rows: below the lean rows
for T, H in ((2048, 4096), (16384, 4096), (128, 4096)):
    g = torch.Generator(device="cuda").manual_seed(0)
    x = torch.randn(T, H, device="cuda", dtype=dt, generator=g)
    w = torch.randn(H, device="cuda", dtype=dt, generator=g)
    e = x.element_size()
    qb = {None: T * H * e, "int8": T * H + T * H // 16 * 4, "nvfp4": T * H // 2 + T * H // 16}
    for name, q in (few if T == 128 else cases):
        if name != "planned" and name not in names:
            continue  # the before wheel has no k variant
        var = {} if name == "planned" else {"variant": name}
        kw = {} if q is None else {"quant": q}
        plan = names[ops.C.plan_call(T, H, ops._KIND["rms"], ops._DTYPE[dt], False, ops._QUANT[q], sms)]
        fn = lambda: mn.rms_norm(x, w, **kw, **var)  # noqa: E731
        kt = b.kernel_time(fn)
        t = b.time(fn)
        case = "rms_norm" if q is None else f"rms_norm+{q}"
        b.record(case=case + ("" if name == "planned" else "_variant"), shape=f"{T}x{H}", round=rnd, wheel=wheel,
                 impl=plan if name == "planned" else name, seconds=t, bytes=T * H * e + H * e + qb[q],
                 planner=plan, kernel_us=round(kt * 1e6, 2) if kt else None)
PY
for rw in 1:before:$B 1:new:$N 2:before:$B 2:new:$N; do  # alone on the GPU, interleaved processes
  rnd=${rw%%:*}; t=${rw#*:}; wh=${t%%:*}; dir=${t#*:}
  cap=25; [ $wh = new ] && cap=38  # the new wheel times ~39 cases, the before one ~21
  lim=$((END - 100 - SECONDS)); [ $lim -gt $cap ] && lim=$cap
  if [ $lim -lt 10 ]; then echo "bench $wh round $rnd skipped (time) [${SECONDS}s]" >> $R/summary.txt; continue; fi
  MLOPS_BENCH_OUT=$R/bench PYTHONPATH=$dir:$PWD/tools/testing timeout $lim python3 /tmp/s15n_bench.py $rnd $wh \
    >> $R/bench.log 2>&1
  echo "bench $wh round $rnd rc=$? rows=$(grep -c '"case"' $R/bench.log) [${SECONDS}s]" >> $R/summary.txt
done
cat > /tmp/s15n_san.py <<'PY'
import torch
import mlops.norm as mn
g = torch.Generator(device="cuda").manual_seed(1)
x = torch.randn(2501, 4096, device="cuda", dtype=torch.bfloat16, generator=g)
w = torch.randn(4096, device="cuda", dtype=torch.bfloat16, generator=g)
s = torch.tensor([0.02], device="cuda")
for v, kws in (("r16lx4wk", ({}, {"quant": "int8"}, {"quant": "nvfp4"}, {"quant": "nvfp4", "scale": s},
                               {"quant": "fp8"}, {"quant": "fp8", "scale": s})),
               ("r16lx2k", ({"quant": "int8"}, {"quant": "nvfp4"}))):
    for kw in kws:
        mn.rms_norm(x, w, variant=v, **kw)
torch.cuda.synchronize()
print("sanitize calls done")
PY
L=$((END - 45 - SECONDS)); [ $L -gt 60 ] && L=60; [ $L -lt 20 ] && L=20
shards sm90 norm $N 4 $L -k "r16lx2k or r16lx4wk"
wait; echo "tests done [${SECONDS}s] (limit ${L}s)" >> $R/summary.txt
sort $R/tests.txt > $R/tests-sorted.txt 2>/dev/null
for tool in memcheck racecheck; do
  L=$((END - 3 - SECONDS)); [ $L -gt 22 ] && L=22
  if [ $L -lt 8 ]; then echo "sanitizer $tool skipped (time) [${SECONDS}s]" >> $R/summary.txt; continue; fi
  PYTHONPATH=$N timeout $L compute-sanitizer --tool $tool --error-exitcode 9 python3 /tmp/s15n_san.py \
    > $R/sanitizer-$tool.log 2>&1
  echo "sanitizer $tool rc=$? $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY|calls done' $R/sanitizer-$tool.log | tr '\n' ' ' | cut -c1-160) [${SECONDS}s]" >> $R/summary.txt
done
cd $OUT/r && tar czf n.tgz n && cat n/summary.txt n/tests-sorted.txt
python3 - <<'PY' 2>/dev/null
import json
for l in open("n/bench.log"):
    r = json.loads(l) if l.startswith("{") else {}
    if "us" in r: print(r.get("wheel"), r.get("round"), r["shape"], r["case"], r["impl"], r["us"], r.get("kernel_us"))
PY
