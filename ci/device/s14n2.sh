#!/bin/bash
# Session 14b, norm device call (planned as GPU run 81; one H200, at most 60 s): the candidate r16lx4wh (r16lx4wg whose
# bf16 INT8 table int8_tab is staged in shared memory once a CTA; variant 32, planned nowhere) beside the planned
# picks, in one sm_90 wheel of this tree (.carry/s14norm2/, nox -s gpu_build -- --tags sm90 --package norm; the other
# kernels' SASS is that of the wheel before, so the planned and g rows are the old kernels), into a fresh --target.
# (1) alone: bench_norm.py's harness (Bench.time = CUDA events, L2 flushed, 150 us lead; Bench.kernel_time = CUPTI),
#     bf16 HF order with a weight, 2048x4096 and 16384x4096: y alone (planned) and INT8 planned / by r16lx4we /
#     r16lx4wg / r16lx4wh / r16lx2g, the list twice (two processes, each at most 15 s) for the noise;
# (2) the GPU tests that name r16lx4wh (-k r16lx4wh: every bf16 / fp16 value as a block amax, so both sides of the
#     table's range; the INT8 non-finite tests; the generic variant tests) under sm_90, two shards, to the end.
# Results under $OUT/r/norm2/ (and $OUT/r/norm2.tgz); the summary lines are printed at the end.
# DRY=1: the shell logic only (no GPU, no python runs), for a check on a machine without a GPU.
export PYTHONUNBUFFERED=1 MLOPS_TEST_CUDA=system CUDA_CACHE_MAXSIZE=4294967296
R=$OUT/r/norm2; mkdir -p $R/bench; source ci/device/lib.sh
if [ -n "$DRY" ]; then  # stand-ins for what needs the GPU machine
  inst() { echo "DRY inst $*"; mkdir -p $2; }; nvidia-smi() { echo "DRY nvidia-smi"; }; timeout() { shift; "$@"; }
  python3() { echo "DRY python3 $* (PYTHONPATH=$PYTHONPATH MLOPS_SHARD=$MLOPS_SHARD) 1 passed"; }
fi
END=${END:-60}
N=/tmp/s14n2; rm -rf $N
git rev-parse HEAD > $R/commit.txt 2>/dev/null
ls -l .carry/s14norm2/ > $R/wheels.txt 2>&1
inst ".carry/s14norm2/mlops_norm-*.whl" $N
echo "install rc=$? [${SECONDS}s]" >> $R/summary.txt
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv > $R/gpu.txt 2>&1
cat > /tmp/s14n2_bench.py <<'PY'
import sys
import torch
from mlops_bench import Bench
import mlops.norm as mn
rnd = sys.argv[1]
ops = mn._ops
b = Bench("norm", lead_us=150.0)
b.header()
names = [v["name"] for v in mn.norm_variants()]
sms = torch.cuda.get_device_properties(0).multi_processor_count
dt = torch.bfloat16
cases = [("planned", None), ("planned", "int8")] + [(v, "int8") for v in ("r16lx4we", "r16lx4wg", "r16lx4wh", "r16lx2g")]
for T, H in ((2048, 4096), (16384, 4096)):
    g = torch.Generator(device="cuda").manual_seed(0)
    x = torch.randn(T, H, device="cuda", dtype=dt, generator=g)
    w = torch.randn(H, device="cuda", dtype=dt, generator=g)
    e = x.element_size()
    qb = {None: T * H * e, "int8": T * H + T * H // 16 * 4}
    for name, q in cases:
        var = {} if name == "planned" else {"variant": name}
        kw = {} if q is None else {"quant": q}
        plan = names[ops.C.plan_call(T, H, ops._KIND["rms"], ops._DTYPE[dt], False, ops._QUANT[q], sms)]
        fn = lambda: mn.rms_norm(x, w, **kw, **var)  # noqa: E731
        kt = b.kernel_time(fn)
        t = b.time(fn)
        case = "rms_norm" if q is None else f"rms_norm+{q}"
        b.record(case=case + ("" if name == "planned" else "_variant"), shape=f"{T}x{H}", round=rnd,
                 impl=plan if name == "planned" else name, seconds=t, bytes=T * H * e + H * e + qb[q],
                 planner=plan, kernel_us=round(kt * 1e6, 2) if kt else None)
PY
for rnd in 1 2; do  # alone on the GPU, two processes
  lim=$((END - 30 - SECONDS)); [ $lim -gt 15 ] && lim=15
  if [ $lim -lt 8 ]; then echo "bench round $rnd skipped (time) [${SECONDS}s]" >> $R/summary.txt; continue; fi
  MLOPS_BENCH_OUT=$R/bench PYTHONPATH=$N:$PWD/tools/testing timeout $lim python3 /tmp/s14n2_bench.py $rnd >> $R/bench.log 2>&1
  echo "bench round $rnd rc=$? rows=$(grep -c '"case"' $R/bench.log) [${SECONDS}s]" >> $R/summary.txt
done
L=$((END - 3 - SECONDS)); [ $L -lt 15 ] && L=15
shards sm90 norm $N 2 $L -k r16lx4wh
wait; echo "tests done [${SECONDS}s] (limit ${L}s)" >> $R/summary.txt
sort $R/tests.txt > $R/tests-sorted.txt 2>/dev/null
cd $OUT/r && tar czf norm2.tgz norm2 && cat norm2/summary.txt norm2/tests-sorted.txt
