#!/bin/bash
# Session 33, fifth call (one H200, <= 400 s): H 2048's quantized outputs at many rows. r8lx2g / r8lx4wg (8-unit rows on
# 2 / 4 warps a row with the g epilogues) beside r16lw (the pick before: one warp a row, the first NVFP4 epilogue) and
# the planned call (NVFP4 -> r8lx2g in this wheel), bench_norm.py --variants at 256 / 2048 / 16384 x 2048, two
# processes; test_norm_gpu.py -k r8lx (every lean test at H 2048 and the generic ones), the planner tests; memcheck +
# racecheck of one call of each new kernel. Wheel: .carry/s33n5/sm90. Everything under /tmp/rn5, returned as $OUT/n5.tgz.
export PYTHONUNBUFFERED=1 MLOPS_TEST_CUDA=system
R=/tmp/rn5
rm -rf $R; mkdir -p $R
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/nn .carry/s33n5/sm90/mlops_norm-*.whl
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv > $R/gpu.txt
for i in 1 2; do
  mkdir -p $R/round$i
  MLOPS_BENCH_OUT=$R/round$i PYTHONPATH=/tmp/nn:$PWD/tools/testing timeout 100 python3 packages/norm/bench/bench_norm.py \
    --shapes 256x2048,2048x2048,16384x2048 --variants --variant-names r8lx2g,r8lx4wg,r16lw,r16l > $R/round$i.log 2>&1
  echo "bench round$i rc=$? at ${SECONDS}s" >> $R/phases.txt
done
L=$((380 - SECONDS)); [ $L -lt 30 ] && L=30
for i in 0 1 2; do
  ( PYTHONPATH=/tmp/nn:$PWD/tools/testing MLOPS_ARCH_TAG=sm90 MLOPS_SHARD=$i/3 timeout $L python3 -m pytest -q --tb=short \
      -p no:cacheprovider -p mlops_shard packages/norm/tests/test_norm_gpu.py -k r8lx > $R/tests-$i.log 2>&1
    echo "tests sm90 shard $i/3 rc=$? $(grep -E 'passed|failed|error' $R/tests-$i.log | tail -1 | cut -c1-140) at ${SECONDS}s" >> $R/tests.txt ) &
done
( PYTHONPATH=/tmp/nn:$PWD/tools/testing timeout $L python3 -m pytest -q --tb=short -p no:cacheprovider \
    packages/norm/tests/test_norm_numerics.py -k planner > $R/tests-planner.log 2>&1
  echo "tests planner rc=$? $(tail -1 $R/tests-planner.log | cut -c1-140)" >> $R/tests.txt ) &
cat > $R/sanitize.py <<'PY'
import torch
import mlops.norm as mn
for dt in (torch.bfloat16, torch.float16):
    x, w = torch.randn(5, 2048).to(dt).cuda(), torch.randn(2048).to(dt).cuda()
    s = torch.tensor(0.02, device="cuda")
    for v in ("r8lx2g", "r8lx4wg"):
        for kw in ({}, {"quant": "int8"}, {"quant": "nvfp4"}, {"quant": "fp8"}, {"quant": "fp8", "scale": s}):
            mn.rms_norm(x, w, variant=v, **kw)
torch.cuda.synchronize()
print("sanitize calls done")
PY
for tool in memcheck racecheck; do
  ( timeout $L env PYTHONPATH=/tmp/nn compute-sanitizer --tool $tool --error-exitcode 9 python3 $R/sanitize.py \
      > $R/sanitizer-$tool.log 2>&1
    echo "sanitizer $tool rc=$? $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY|calls done' $R/sanitizer-$tool.log | tr '\n' ' ' | cut -c1-160) at ${SECONDS}s" >> $R/phases.txt ) &
done
wait
sort $R/tests.txt > $R/tests-sorted.txt
grep -h "^FAILED\|^ERROR" $R/*.log 2>/dev/null | head -20 > $R/failures.txt
python3 - > $R/summary.txt <<'PY'
import glob, json
rows = {}
for rnd in ("round1", "round2"):
    for f in glob.glob(f"/tmp/rn5/{rnd}/*.jsonl"):
        for l in open(f):
            r = json.loads(l)
            c = r.get("case", "")
            if r.get("impl") == "mlops" and c in ("rms_norm", "rms_norm+int8", "rms_norm+nvfp4", "rms_norm+fp8", "rms_norm+fp8_static"):
                rows.setdefault((r["shape"], c.replace("rms_norm", "") or "y"), {}).setdefault("planned", []).append(r["us"])
            if c.endswith("_variant") and not c.startswith("add"):
                rows.setdefault((r["shape"], c[8:-8] or "y"), {}).setdefault(r["impl"], []).append(r["us"])
for (shape, case), v in rows.items():
    print(f"{shape:10s} {case:12s}", "  ".join(f"{k}={'/'.join(str(u) for u in us)}" for k, us in v.items()))
PY
cat $R/gpu.txt $R/phases.txt $R/tests-sorted.txt $R/failures.txt $R/summary.txt
cd /tmp && tar czf $OUT/n5.tgz rn5
