#!/bin/bash
# Session 18, the lead's one device call (one H200; the session's device budget was 895 s, so everything in one call,
# bounded to END_S = 540 s of the script). Wheels in .carry/s18/ (built here: nox -s gpu_build -- --tags sm90):
#   norm/        c78dd6e's norm (the lean LayerNorm kernels ln1 / ln2 / ln4w / ln4wp and the planner after run 98)
#   attn-before/ c78dd6e's attention (session 17's refine cuts, run 98's "ffaca57")
#   attn-new/    the same + session 17 a2's cuts (lop3 plane-pair merge, kCB plane offsets, P V digit stores)
#   vocab/       c78dd6e's vocab (for the LM head floor; optional)
#   norm-c80/    c78dd6e's norm for compute_80 (PTX, JIT-compiled here; optional)
# (A) quiet GPU: bench_attention.py --variants planner before / new (one round each), ci/device/ln_bench.py on norm;
# (B) at once: the whole test_norm_gpu.py (12 shards) and test_attention_gpu.py on attn-new (6 shards); compute-sanitizer
#     racecheck + memcheck of ci/device/ln_sanitize.py (norm), s15a_sanitize.py and s17a_sanitize.py (attn-new); the
#     r32 and LayerNorm lean kernels under compute_80 PTX (-k "lean8k or lean_layer_norm", one process: run 96 had nine
#     processes JIT-compiling the same PTX at once and most printed nothing);
# (C) quiet GPU: bench_attention.py before / new again, ln_bench.py again, floor_probe.py --only lm_head.
# Results: $OUT/r18.tgz (everything) and $OUT/summary.txt. DRY=1: prints what it would run.
export PYTHONUNBUFFERED=1 MLOPS_TEST_CUDA=system CUDA_CACHE_MAXSIZE=4294967296
OUT=${OUT:-/tmp}
R=/tmp/r18; rm -rf $R; mkdir -p $R; touch $R/phases.txt $R/tests.txt $R/summary.txt
source ci/device/lib.sh
END=${END_S:-540}
C=.carry/s18
dry_stubs
inst "$C/norm/mlops_norm-*.whl" /tmp/s18n
inst "$C/attn-before/mlops_attention-*.whl" /tmp/s18ab
inst "$C/attn-new/mlops_attention-*.whl" /tmp/s18an
ls $C/vocab/mlops_vocab-*.whl > /dev/null 2>&1 && inst "$C/vocab/mlops_vocab-*.whl" /tmp/s18v
ls $C/norm-c80/mlops_norm-*.whl > /dev/null 2>&1 && inst "$C/norm-c80/mlops_norm-*.whl" /tmp/s18nc80
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv > $R/gpu.txt
echo "installed at ${SECONDS}s" >> $R/phases.txt
# left RESERVE: seconds to END less RESERVE, at most $1 (a step's own cap); 0 when under 12
left() { local L=$((END - ${RESERVE:-0} - SECONDS)); [ $L -gt $1 ] && L=$1; [ $L -lt 12 ] && L=0; echo $L; }
# abench WHICH ROUND: one bench_attention.py --variants planner call of attn-WHICH (at most 30 s)
abench() {
  local L=$(left 30) t=/tmp/s18a${1:0:1}
  [ $L = 0 ] && { echo "abench $1-$2 skipped at ${SECONDS}s" >> $R/phases.txt; return; }
  mkdir -p $R/attn-$1-$2
  MLOPS_BENCH_OUT=$R/attn-$1-$2 PYTHONPATH=$t:$PWD/tools/testing timeout $L python3 \
    packages/attention/bench/bench_attention.py --variants planner > $R/attn-$1-$2.log 2>&1
  echo "abench $1-$2 rc=$? at ${SECONDS}s" >> $R/phases.txt
}
# lnbench ROUND: ci/device/ln_bench.py (bf16 LayerNorm with a bias, 12 shapes: planned, F.layer_norm, ln variants)
lnbench() {
  local L=$(left 32)
  [ $L = 0 ] && { echo "lnbench $1 skipped at ${SECONDS}s" >> $R/phases.txt; return; }
  mkdir -p $R/ln-$1
  MLOPS_BENCH_OUT=$R/ln-$1 PYTHONPATH=/tmp/s18n:$PWD/tools/testing timeout $L python3 ci/device/ln_bench.py new \
    > $R/ln-$1.log 2>&1
  echo "lnbench $1 rc=$? at ${SECONDS}s" >> $R/phases.txt
}
# sani TARGET SCRIPT LABEL LIMIT: racecheck and memcheck of a script, each in the background
sani() {
  local tool
  for tool in racecheck memcheck; do
    ( PYTHONPATH=$1 timeout $4 compute-sanitizer --tool $tool --error-exitcode 9 python3 $2 > $R/$3-$tool.log 2>&1
      echo "sanitizer $3 $tool rc=$? $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY|failed' $R/$3-$tool.log | tr '\n' ' ' | cut -c1-200) at ${SECONDS}s" >> $R/phases.txt ) &
  done
}
# (A)
RESERVE=400 abench before 1
RESERVE=370 abench new 1
RESERVE=340 lnbench 1
# (B): to END - 100 s, at most 330 s
L=$((END - 100 - SECONDS)); [ $L -gt 330 ] && L=330; [ $L -lt 60 ] && L=60
echo "tests start at ${SECONDS}s, limit ${L}s" >> $R/phases.txt
shards sm90 norm /tmp/s18n 12 $L
shards sm90 attention /tmp/s18an 6 $L
[ -d /tmp/s18nc80 ] || [ -n "$DRY" ] && shards c80 norm /tmp/s18nc80 1 $L -k "lean8k or lean_layer_norm"
sani /tmp/s18n ci/device/ln_sanitize.py ln $L
sani /tmp/s18an ci/device/s15a_sanitize.py s15a $L
sani /tmp/s18an ci/device/s17a_sanitize.py s17a $L
wait; echo "tests done at ${SECONDS}s" >> $R/phases.txt
# (C)
RESERVE=70 abench before 2
RESERVE=40 abench new 2
RESERVE=15 lnbench 2
L=$(left 25)
if [ -d /tmp/s18v ] && [ $L != 0 ]; then
  mkdir -p $R/floor
  PYTHONPATH=/tmp/s18n:/tmp/s18v:$PWD/tools/testing timeout $L python3 ci/device/floor_probe.py --only lm_head \
    --out $R/floor > $R/floor.log 2>&1
  echo "floor rc=$? at ${SECONDS}s" >> $R/phases.txt
fi
[ -n "$DRY" ] && { cat $R/phases.txt; exit 0; }
collect
python3 ci/device/bench_rows.py $R > $R/summary.txt
cat $R/phases.txt $R/tests-sorted.txt $R/failures.txt $R/sanitizer.txt > $OUT/summary-head.txt
cp $R/summary.txt $OUT/summary.txt
(cd /tmp && tar czf $OUT/r18.tgz r18)
cat $OUT/summary-head.txt
