#!/bin/bash
# Session 16, helper n2 (one H200, <= 200 s): issue 2's INT8 gap to y. The lx4w kernels' INT8 unit-pair epilogue
# (r16lx4we at H 4096, r32lx4we at H 8192: one inf-inverse check a unit pair, one scale store a lane; same bits).
#   (1) bench A/B: bench_norm.py's planned rows at 2048x4096, 2048x8192, 256x8192, 1x8192, 16384x4096, 16384x8192,
#       y and every quantized output, before (.carry/s16n2b/before: e992ff2's wheel, the norm sources of 4811b03) and
#       new (.carry/s16n2b/new) in turn, twice (interleaved: the spread).
#   (2) the GPU tests of the lean kernels touched (test_norm_gpu.py: lean8k, and the r16lx4w / r16lx4we / r32lx4w
#       rows of the lean_ tests) in 4 shards, (3) memcheck + racecheck of one INT8 call of r16lx4we / r32lx4we
#       (bf16 / fp16, y with and without, a tiny block beside a normal one), beside the shards.
# Everything under /tmp/rn2, returned as $OUT/n2.tgz; a short summary printed. DRY=1: print the commands only.
export PYTHONUNBUFFERED=1 MLOPS_TEST_CUDA=system
R=/tmp/rn2
run() { if [ -n "$DRY" ]; then echo "+ $*"; else "$@"; fi; }
rm -rf $R; mkdir -p $R
inst() { run python3 -m pip install -q --no-index --no-deps --no-compile --target $2 $1; }
inst ".carry/s16n2b/before/mlops_norm-*.whl" /tmp/nb162
inst ".carry/s16n2b/new/mlops_norm-*.whl" /tmp/nn162
[ -z "$DRY" ] && nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv > $R/gpu.txt
S=2048x4096,2048x8192,256x8192,1x8192,16384x4096,16384x8192
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
for t in before:/tmp/nb162 new:/tmp/nn162 before:/tmp/nb162 new:/tmp/nn162; do
  bench ${t%%:*} ${t#*:} 34 --shapes $S
done
# (2) tests: 4 shards of the selected GPU tests; (3) the sanitizers, at the same time
L=$((195 - SECONDS)); [ $L -lt 20 ] && L=20
K="lean8k or (lean_ and (r16lx4we or r16lx4w- or r16lx4w] or r32lx4w))"
for ((i = 0; i < 4; i++)); do
  if [ -n "$DRY" ]; then
    echo "+ PYTHONPATH=/tmp/nn162:$PWD/tools/testing MLOPS_ARCH_TAG=sm90 MLOPS_SHARD=$i/4 timeout $L python3 -m pytest" \
      "-q --tb=short -p no:cacheprovider -p mlops_shard packages/norm/tests/test_norm_gpu.py -k \"$K\""
    continue
  fi
  ( PYTHONPATH=/tmp/nn162:$PWD/tools/testing MLOPS_ARCH_TAG=sm90 MLOPS_SHARD=$i/4 timeout $L python3 -m pytest -q \
      --tb=short -p no:cacheprovider -p mlops_shard packages/norm/tests/test_norm_gpu.py -k "$K" > $R/tests-$i.log 2>&1
    echo "tests shard $i/4 rc=$? $(grep -E 'passed|failed|error' $R/tests-$i.log | tail -1 | cut -c1-140)" >> $R/tests.txt ) &
done
cat > $R/sanitize.py <<'EOF'
# One INT8 call of each changed planned kernel (r16lx4we at 3x4096, r32lx4we at 3x8192), bf16 and fp16, with and
# without y; row 1 has a tiny block (amax ~1e-38: inf inverse) beside normal ones (the unit pair's cold path).
import torch
import mlops.norm as mn
for dt in (torch.bfloat16, torch.float16):
    for H, v in ((4096, "r16lx4we"), (8192, "r32lx4we")):
        x, w = torch.randn(3, H).to(dt).cuda(), torch.randn(H).to(dt).cuda()
        if dt == torch.bfloat16:
            x[1, 16:32] = 1e-38
        mn.rms_norm(x, w, variant=v, quant="int8")
        mn.rms_norm(x, w, variant=v, quant="int8", return_y=True)
torch.cuda.synchronize()
print("sanitize calls done")
EOF
for tool in memcheck racecheck; do  # both at once, beside the shards
  if [ -n "$DRY" ]; then
    echo "+ timeout $L env PYTHONPATH=/tmp/nn162 compute-sanitizer --tool $tool --error-exitcode 9 python3 $R/sanitize.py"
    continue
  fi
  ( timeout $L env PYTHONPATH=/tmp/nn162 compute-sanitizer --tool $tool --error-exitcode 9 python3 $R/sanitize.py \
      > $R/sanitizer-$tool.log 2>&1
    echo "sanitizer $tool rc=$? $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY|calls done' $R/sanitizer-$tool.log | tr '\n' ' ' | cut -c1-160) at ${SECONDS}s" >> $R/phases.txt ) &
done
wait
[ -n "$DRY" ] && exit 0
sort $R/tests.txt > $R/tests-sorted.txt
grep -h "^FAILED\|^ERROR" $R/*.log 2>/dev/null | head -20 > $R/failures.txt
# summary: the planned rows (us) by case and shape, one line a bench run
python3 - > $R/summary.txt <<'EOF'
import glob, json, os
for d in sorted(glob.glob("/tmp/rn2/*-*/"), key=lambda p: int(p.rstrip("/").rsplit("-", 1)[1])):
    rows = {}
    for f in glob.glob(d + "*.jsonl"):
        for l in open(f):
            r = json.loads(l)
            if r.get("impl") == "mlops" and r.get("case") in ("rms_norm", "rms_norm+int8", "rms_norm+nvfp4", "rms_norm+fp8", "rms_norm+fp8_static"):
                rows.setdefault(r["shape"], {})[r["case"].replace("rms_norm", "") or "y"] = r["us"]
    print(os.path.basename(d.rstrip("/")))
    for k, v in rows.items():
        print("  ", k, " ".join(f"{c}={u}" for c, u in v.items()))
EOF
cat $R/phases.txt $R/tests-sorted.txt $R/failures.txt $R/summary.txt
cd /tmp && tar czf $OUT/n2.tgz rn2
