#!/bin/bash
# Session 16, helper n (one H200, <= 240 s): issue 2 at H = 8192, few rows. The 32-unit lean kernels r32lx4we /
# r32lx4wf / r32lx4wg (four warps a row, 8 units a warp), planned below 2 rows an SM at H = 8192.
#   (1) bench A/B: bench_norm.py's planned rows at T 1 / 8 / 128 / 2048 x H 8192 (and 4096 as a control), y and every
#       quantized output, before (.carry/s16n/before: f1b75f6's wheel, the norm sources of HEAD before the change)
#       and new (.carry/s16n/new) in turn, twice (interleaved: the spread); then the new wheel's --variants rows of
#       r32lx4we / wf / wg at the H = 8192 shapes (w8, the old pick, is the before rows there).
#   (2) the GPU tests of what changed (test_norm_gpu.py -k lean8k / r32lx4w in test_dtypes_and_shapes; the planner
#       tests of test_norm_numerics.py) in 4 shards, (3) memcheck + racecheck of one call of each new kernel
#       (bf16 / fp16, y and every quantized output, the three variants at 3x8192), alongside the shards.
# Everything under /tmp/rn, returned as $OUT/n.tgz; a short summary printed. DRY=1: print the commands only.
export PYTHONUNBUFFERED=1 MLOPS_TEST_CUDA=system
R=/tmp/rn
run() { if [ -n "$DRY" ]; then echo "+ $*"; else "$@"; fi; }
runlog() { local f=$1; shift; if [ -n "$DRY" ]; then echo "+ $* > $f"; else "$@" > $f 2>&1; fi; }
rm -rf $R; mkdir -p $R
inst() { run python3 -m pip install -q --no-index --no-deps --no-compile --target $2 $1; }
inst ".carry/s16n/before/mlops_norm-*.whl" /tmp/nb16
inst ".carry/s16n/new/mlops_norm-*.whl" /tmp/nn16
[ -z "$DRY" ] && nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv > $R/gpu.txt
S=1x8192,8x8192,128x8192,2048x8192,1x4096,8x4096,128x4096,2048x4096
bench() {  # bench NAME TARGET LIMIT [bench args...]
  local n=$1-$SECONDS t=$2 l=$3; shift 3
  mkdir -p $R/$n
  if [ -n "$DRY" ]; then
    echo "+ MLOPS_BENCH_OUT=$R/$n PYTHONPATH=$t:$PWD/tools/testing timeout $l python3 packages/norm/bench/bench_norm.py $*"
    return
  fi
  MLOPS_BENCH_OUT=$R/$n PYTHONPATH=$t:$PWD/tools/testing timeout $l python3 packages/norm/bench/bench_norm.py "$@" \
    > $R/$n.log 2>&1
  echo "bench $n rc=$? at ${SECONDS}s" >> $R/phases.txt
}
for t in before:/tmp/nb16 new:/tmp/nn16 before:/tmp/nb16 new:/tmp/nn16; do
  bench ${t%%:*} ${t#*:} 36 --shapes $S
done
bench variants /tmp/nn16 45 --shapes 1x8192,8x8192,128x8192,2048x8192 --variants \
  --variant-names r32lx4we,r32lx4wf,r32lx4wg
# (2) tests: 4 shards of the selected GPU tests, the planner tests; (3) the sanitizers, at the same time
L=$((228 - SECONDS)); [ $L -lt 20 ] && L=20
K="lean8k or (dtypes_and_shapes and r32lx4w)"
for ((i = 0; i < 4; i++)); do
  if [ -n "$DRY" ]; then
    echo "+ PYTHONPATH=/tmp/nn16:$PWD/tools/testing MLOPS_ARCH_TAG=sm90 MLOPS_SHARD=$i/4 timeout $L python3 -m pytest" \
      "-q --tb=short -p no:cacheprovider -p mlops_shard packages/norm/tests/test_norm_gpu.py -k \"$K\""
    continue
  fi
  ( PYTHONPATH=/tmp/nn16:$PWD/tools/testing MLOPS_ARCH_TAG=sm90 MLOPS_SHARD=$i/4 timeout $L python3 -m pytest -q \
      --tb=short -p no:cacheprovider -p mlops_shard packages/norm/tests/test_norm_gpu.py -k "$K" > $R/tests-$i.log 2>&1
    echo "tests shard $i/4 rc=$? $(grep -E 'passed|failed|error' $R/tests-$i.log | tail -1 | cut -c1-140)" >> $R/tests.txt ) &
done
cat > $R/sanitize.py <<'EOF'
# One call of each new kernel: r32lx4we / wf / wg at 3x8192, bf16 and fp16, y alone and every quantized output.
import torch
import mlops.norm as mn
for dt in (torch.bfloat16, torch.float16):
    x, w = torch.randn(3, 8192).to(dt).cuda(), torch.randn(8192).to(dt).cuda()
    s = torch.tensor(0.02, device="cuda")
    for v in ("r32lx4we", "r32lx4wf", "r32lx4wg"):
        for kw in ({}, {"quant": "int8"}, {"quant": "nvfp4"}, {"quant": "fp8"}, {"quant": "fp8", "scale": s}):
            mn.rms_norm(x, w, variant=v, **kw)
torch.cuda.synchronize()
print("sanitize calls done")
EOF
for tool in memcheck racecheck; do  # both at once, beside the shards
  if [ -n "$DRY" ]; then
    echo "+ timeout $L env PYTHONPATH=/tmp/nn16 compute-sanitizer --tool $tool --error-exitcode 9 python3 $R/sanitize.py"
    continue
  fi
  ( timeout $L env PYTHONPATH=/tmp/nn16 compute-sanitizer --tool $tool --error-exitcode 9 python3 $R/sanitize.py \
      > $R/sanitizer-$tool.log 2>&1
    echo "sanitizer $tool rc=$? $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY|calls done' $R/sanitizer-$tool.log | tr '\n' ' ' | cut -c1-160) at ${SECONDS}s" >> $R/phases.txt ) &
done
runlog $R/planner.log timeout $L env PYTHONPATH=/tmp/nn16:$PWD/tools/testing python3 -m pytest -q --tb=short \
  -p no:cacheprovider packages/norm/tests/test_norm_numerics.py -k "planner"
[ -z "$DRY" ] && echo "planner tests rc=$? $(tail -1 $R/planner.log | cut -c1-140)" >> $R/tests.txt
wait
[ -n "$DRY" ] && exit 0
sort $R/tests.txt > $R/tests-sorted.txt
grep -h "^FAILED\|^ERROR" $R/*.log 2>/dev/null | head -20 > $R/failures.txt
# summary: the planned rows (us) by case and shape, one line a bench run
python3 - > $R/summary.txt <<'EOF'
import glob, json, os
for d in sorted(glob.glob("/tmp/rn/*-*/"), key=lambda p: int(p.rstrip("/").rsplit("-", 1)[1])):
    rows = {}
    for f in glob.glob(d + "*.jsonl"):
        for l in open(f):
            r = json.loads(l)
            if r.get("impl") == "mlops" and r.get("case") in ("rms_norm", "rms_norm+int8", "rms_norm+nvfp4", "rms_norm+fp8", "rms_norm+fp8_static"):
                rows.setdefault(r["shape"], {})[r["case"].replace("rms_norm", "") or "y"] = r["us"]
            if r.get("case", "").endswith("_variant") and not r["case"].startswith("add"):
                rows.setdefault(r["shape"] + " " + r["impl"], {})[r["case"][8:-8] or "y"] = r["us"]
    print(os.path.basename(d.rstrip("/")))
    for k, v in rows.items():
        print("  ", k, " ".join(f"{c}={u}" for c, u in v.items()))
EOF
cat $R/phases.txt $R/tests-sorted.txt $R/failures.txt $R/summary.txt
cd /tmp && tar czf $OUT/n.tgz rn
