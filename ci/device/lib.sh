# Shared by the session-7 device scripts (ci/device/s7*.sh), sourced after R (the results folder) is set.
# inst WHEEL_GLOB TARGET: one package into its own --target (a second install into the same target skips mlops/).
inst() { python3 -m pip install -q --no-index --no-deps --no-compile --target $2 $1; }
# shards TAG PKG TARGET N LIMIT [pytest args...]: the package's GPU test file in N contiguous shards at once
# (tools/testing/mlops_shard.py), one JIT cache a tag, a summary line a shard in $R/tests.txt.
shards() {
  for ((i = 0; i < $4; i++)); do
    ( PYTHONPATH=$3:$PWD/tools/testing MLOPS_ARCH_TAG=$1 MLOPS_SHARD=$i/$4 CUDA_CACHE_PATH=/tmp/jit-$1 timeout $5 \
        python3 -m pytest -q --tb=short -p no:cacheprovider -p mlops_shard packages/$2/tests/test_$2_gpu.py "${@:6}" \
        > $R/$1-$2-$i.log 2>&1
      echo "$1 $2 shard $i rc=$? $(grep -E 'passed|failed|error' $R/$1-$2-$i.log | tail -1 | cut -c1-120)" >> $R/tests.txt ) &
  done
}
# Session 8 (s8*.sh), the attention mma_pv runs: the three wheels, the GPU's clocks, the smoke test of mma_pv,
# then (when it passed) the target bench alone: mma_setup; mma_smoke && mma_bench. mma_ncu: one B8 L16K launch.
mma_setup() {
  for t in sm90 c80 c61; do inst ".carry/gpu/$t/mlops_attention-*.whl" /tmp/$t-attention; done
  nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv > $R/gpu.txt
}
mma_smoke() {
  PYTHONPATH=/tmp/sm90-attention:$PWD/tools/testing timeout 120 python3 -m pytest -q --tb=short -p no:cacheprovider \
    packages/attention/tests/test_attention_gpu.py -k "mma_pv and 3+3 and 128 and 4" > $R/smoke.log 2>&1
  echo "smoke rc=$? $(tail -1 $R/smoke.log | cut -c1-150) at ${SECONDS}s" >> $R/phases.txt
  grep -q " passed" $R/smoke.log && ! grep -q "failed" $R/smoke.log
}
mma_bench() {
  PYTHONPATH=/tmp/sm90-attention:$PWD/tools/testing timeout 200 python3 packages/attention/bench/bench_attention.py \
    --targets --variants imma_occ+coarse_imma,mma_pv+coarse_imma --kernel-time > $R/bench.log 2>&1
  echo "bench rc=$? at ${SECONDS}s" >> $R/phases.txt
}
mma_ncu() {
  PYTHONPATH=/tmp/sm90-attention timeout 120 ncu --set full --import-source no -k regex:refine_mma --launch-skip 1 -c 1 \
    -o $R/mma-b8 python3 packages/attention/bench/profile_decode.py --B 8 --L 16384 --variant mma_pv+coarse_imma --exact \
    > $R/ncu-b8.log 2>&1
  echo "ncu rc=$? at ${SECONDS}s" >> $R/phases.txt
  ncu -i $R/mma-b8.ncu-rep --page details --print-units base > $R/details-b8.txt 2>&1
}
# The bench's rows as "shape | impl | us | kernel_us | frac_copy_bw", after the results are tarred (from $OUT).
mma_rows() {
  python3 -c '
import json
for l in open("r/bench.log"):
    r = json.loads(l) if l.startswith("{") else {}
    if "us" in r: print(r["shape"], "|", r["impl"], "|", r["us"], "|", r.get("kernel_us"), "|", r.get("frac_copy_bw"))'
}
# mma_tests N END: attention's GPU file on sm_90 in N shards (every variant) and mma_pv's tests under compute_80 /
# compute_61 in 3 shards each, bounded to end by END seconds of the script; then wait (background jobs too).
mma_tests() {
  local L=$(($2 - SECONDS)); [ $L -gt 300 ] && L=300
  shards sm90 attention /tmp/sm90-attention $1 $L
  shards c80 attention /tmp/c80-attention 3 $L -k mma_pv
  shards c61 attention /tmp/c61-attention 3 $L -k mma_pv
  wait; echo "tests done at ${SECONDS}s" >> $R/phases.txt
  sort $R/tests.txt > $R/tests-sorted.txt
}
# mma_sanitize: ci/device/fbla_sanitize.py (mma_pv alone) under compute-sanitizer racecheck, then memcheck.
mma_sanitize() {
  for tool in racecheck memcheck; do
    PYTHONPATH=/tmp/sm90-attention timeout 240 compute-sanitizer --tool $tool --error-exitcode 9 \
      python3 ci/device/fbla_sanitize.py > $R/sanitizer-$tool.log 2>&1
    echo "sanitizer $tool rc=$? $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY|failed' $R/sanitizer-$tool.log | tr '\n' ' ' | cut -c1-200) at ${SECONDS}s" >> $R/phases.txt
  done
}
# Session 9 (s9b / s9c.sh), the sampler A/B runs: the new vocab wheel (.carry/gpu/sm90) into /tmp/m and the one
# before it (.carry/before) into /tmp/b, then the sampling bench of each, alone and in turn (bench-before /
# bench-new under $R), a summary line each (summ NAME RC: the log's last pytest-style line and the elapsed time).
summ() { echo "$1 rc=$2 $(grep -E 'passed|failed|error' $R/$1.log | tail -1 | cut -c1-200) [${SECONDS}s]" >> $R/summary.txt; }
vocab_ab() {
  mkdir -p $R/bench-before $R/bench-new
  inst ".carry/gpu/sm90/mlops_vocab-*.whl" /tmp/m
  inst ".carry/before/mlops_vocab-*.whl" /tmp/b
  local v=cluster16_wide,cluster16_gather,cluster8_wide,cluster8_lean t
  for t in before:/tmp/b new:/tmp/m; do
    MLOPS_BENCH_OUT=$R/bench-${t%%:*} PYTHONPATH=${t#*:}:$PWD/tools/testing timeout $1 python3 \
      packages/vocab/bench/bench_vocab.py --only sampling --variants $v > $R/bench-${t%%:*}.log 2>&1
    summ bench-${t%%:*} $?
  done
}
# vocab_sanitize LIMIT: racecheck then memcheck of the wide / lean cluster sampler subset, on the wheel in /tmp/m.
vocab_sanitize() {
  local tool
  for tool in racecheck memcheck; do
    PYTHONPATH=/tmp/m:$PWD/tools/testing MLOPS_ARCH_TAG=sm90 timeout $1 compute-sanitizer --tool $tool --error-exitcode 9 \
      python3 -m pytest -q --tb=short -p no:cacheprovider -k "sanitizer_subset and (wide or lean)" \
      packages/vocab/tests/test_vocab_sampler_gpu.py > $R/vocab-$tool.log 2>&1
    summ vocab-$tool $?
  done
}
# Session 13. fshards LABEL FILE TARGET N LIMIT [pytest args...]: any test file (a path from the repo root) in N
# contiguous shards at once on sm_90, one summary line a shard in $R/tests.txt (shards above is the per-package
# form with an arch tag).
fshards() {
  local i
  for ((i = 0; i < $4; i++)); do
    ( PYTHONPATH=$3:$PWD/tools/testing MLOPS_ARCH_TAG=sm90 MLOPS_SHARD=$i/$4 CUDA_CACHE_PATH=/tmp/jit-sm90 timeout $5 \
        python3 -m pytest -q --tb=short -p no:cacheprovider -p mlops_shard $2 "${@:6}" > $R/$1-$i.log 2>&1
      echo "$1 shard $i/$4 rc=$? $(grep -E 'passed|failed|error' $R/$1-$i.log | tail -1 | cut -c1-140)" >> $R/tests.txt ) &
  done
}
# finish [FILES...]: after the background jobs, the sorted shard lines and the logs' FAILED / ERROR lines, then
# $OUT/r.tgz of $R and the named files of $R printed (the call's output), $R removed.
finish() {
  wait
  sort $R/tests.txt > $R/tests-sorted.txt 2>/dev/null
  grep -h "^FAILED\|^ERROR" $R/*.log 2>/dev/null | head -20 > $R/failures.txt
  (cd $R/.. && tar czf r.tgz $(basename $R) && cd $R && cat "$@" tests-sorted.txt failures.txt 2>/dev/null)
  rm -rf $R
}
# Session 16: the sanitizer passes and the wrap-up that the s14-s16 parts each wrote out (duplicates D1-D4).
# ksanitize LABEL TARGET LIMIT FILE K: compute-sanitizer racecheck and memcheck of `pytest FILE -k K` on sm_90, both in
# the background, a summ line each ($R/summary.txt) and their logs as $R/LABEL-{racecheck,memcheck}.log.
# SAN (optional): the tools, "racecheck memcheck" unless set (session 37).
ksanitize() {
  local tool
  for tool in ${SAN:-racecheck memcheck}; do
    ( PYTHONPATH=$2:$PWD/tools/testing MLOPS_ARCH_TAG=sm90 timeout $3 compute-sanitizer --tool $tool --error-exitcode 9 \
        python3 -m pytest -q --tb=short -p no:cacheprovider -k "$5" $4 > $R/$1-$tool.log 2>&1
      summ $1-$tool $? ) &
  done
}
# ssanitize TARGET LIMIT SCRIPT: racecheck then memcheck of a python script (e.g. ci/device/s15a_sanitize.py) in one
# background job, a line each in $R/phases.txt; logs $R/sanitizer-{racecheck,memcheck}.log.
ssanitize() {
  ( for tool in racecheck memcheck; do
      PYTHONPATH=$1 timeout $2 compute-sanitizer --tool $tool --error-exitcode 9 python3 $3 > $R/sanitizer-$tool.log 2>&1
      echo "sanitizer $tool rc=$? $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY|failed' $R/sanitizer-$tool.log | tr '\n' ' ' | cut -c1-200) at ${SECONDS}s" >> $R/phases.txt
    done ) &
}
# collect: after the background jobs, the sorted shard lines, the logs' FAILED / ERROR lines and the sanitizers'
# summary lines ($R/tests-sorted.txt, failures.txt, sanitizer.txt); $R stays (the caller tars it).
collect() {
  wait
  sort $R/tests.txt > $R/tests-sorted.txt 2>/dev/null
  grep -h "^FAILED\|^ERROR" $R/*.log 2>/dev/null | head -20 > $R/failures.txt
  grep -h "ERROR SUMMARY\|RACECHECK SUMMARY" $R/*racecheck.log $R/*memcheck.log 2>/dev/null | sort | uniq -c > $R/sanitizer.txt
}
# Session 18. dry_stubs: with DRY set, the commands a device script runs become echoes (inst, nvidia-smi, python3,
# compute-sanitizer, tar; timeout passes its command through), so `DRY=1 bash ci/device/<script>.sh` checks the shell
# logic here. Call it after sourcing this file (it replaces inst). s16a / s16a2 / s17a / s18.sh wrote it out each.
dry_stubs() {
  [ -n "$DRY" ] || return 0
  inst() { echo "DRY inst $*"; }
  nvidia-smi() { echo DRY; }
  timeout() { shift; "$@"; }
  python3() { echo "DRY python3 $* (tag=$MLOPS_ARCH_TAG shard=$MLOPS_SHARD) 1 passed"; }
  compute-sanitizer() { echo "DRY compute-sanitizer $*"; }
  tar() { echo "DRY tar $*"; }
}
# Session 18. attn_bench PREFIX WHICH LABEL CAP MIN [ARGS...]: one `bench_attention.py --variants planner [ARGS]` call
# of the wheel installed in PREFIX$WHICH, at most CAP s and not past END - RESERVE (skipped with under MIN s left); rows
# in $R/bench-LABEL/, log $R/bench-LABEL.log, a line in $R/phases.txt. s16a / s16a2 / s17a.sh each wrote it out;
# ARGS since session 20 (s20g / s20h.sh: --kernel-time).
attn_bench() {
  local L=$((END - ${RESERVE:-0} - SECONDS)); [ $L -gt $4 ] && L=$4
  if [ $L -lt $5 ]; then echo "bench $3 skipped (${L}s left) at ${SECONDS}s" >> $R/phases.txt; return; fi
  mkdir -p $R/bench-$3
  MLOPS_BENCH_OUT=$R/bench-$3 PYTHONPATH=$1$2:$PWD/tools/testing timeout $L python3 \
    packages/attention/bench/bench_attention.py --variants planner "${@:6}" > $R/bench-$3.log 2>&1
  echo "bench $3 ($2) rc=$? at ${SECONDS}s" >> $R/phases.txt
}
# Session 19. call_setup END_DEFAULT FILES...: the start of a lead's device call, after R is set and this file sourced:
# $R emptied and made, FILES touched in it, END from END_S (else END_DEFAULT), dry_stubs (DRY=1). s19 / s19b / s19d.sh.
call_setup() {
  rm -rf $R; mkdir -p $R
  local f
  for f in "${@:2}"; do touch $R/$f; done
  END=${END_S:-$1}
  dry_stubs
}
# gpu_info: the GPU's name, driver and clocks into $R/gpu.txt, and the install phase's end into $R/phases.txt.
gpu_info() {
  nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv > $R/gpu.txt
  echo "installed at ${SECONDS}s" >> $R/phases.txt
}
# Session 20. attn_tests_tail TARGET NAME: the end of an attention A/B call (s19d / s20.sh), after its benches: the whole
# test_attention_gpu.py in 5 shards and racecheck / memcheck of s17a_sanitize.py on the wheel in TARGET, at once, to
# END - 15 s (40 - 150 s); then (not DRY) $OUT/summary.txt (phases, tests, failures, sanitizers, bench_rows.py's rows),
# $OUT/NAME.tgz of $R, and the summary printed.
attn_tests_tail() {
  local L=$((END - 15 - SECONDS)); [ $L -gt 150 ] && L=150; [ $L -lt 40 ] && L=40
  echo "tests start at ${SECONDS}s, limit ${L}s" >> $R/phases.txt
  shards sm90 attention $1 5 $L
  ssanitize $1 $L ci/device/s17a_sanitize.py
  wait; echo "tests done at ${SECONDS}s" >> $R/phases.txt
  [ -n "$DRY" ] && { cat $R/phases.txt; exit 0; }
  collect
  python3 ci/device/bench_rows.py $R > $R/bench.txt
  cat $R/phases.txt $R/tests-sorted.txt $R/failures.txt $R/sanitizer.txt $R/bench.txt > $OUT/summary.txt
  (cd /tmp && tar czf $OUT/$2.tgz $(basename $R))
  cat $OUT/summary.txt
}
# Session 21. attn_bench_tail NAME: the end of a bench-only A/B call (s20h / s21b / s21d.sh): (DRY: the phases, then exit)
# bench_rows.py's rows, $OUT/NAME.tgz of $R, $OUT/summary.txt (phases and rows), printed.
attn_bench_tail() {
  [ -n "$DRY" ] && { cat $R/phases.txt; exit 0; }
  python3 ci/device/bench_rows.py $R > $R/bench.txt
  (cd /tmp && tar czf $OUT/$1.tgz $(basename $R))
  cat $R/phases.txt $R/bench.txt > $OUT/summary.txt
  cat $OUT/summary.txt
}
# Session 22. attn_timeline TARGET: bench/probes/timeline.py on the timeline wheel installed in TARGET (90 s at most),
# its output in $R/timeline.txt (raw tables under $R/timeline/) and $OUT/timeline.txt, a line in $R/phases.txt.
attn_timeline() {
  mkdir -p $R/timeline
  PYTHONPATH=$1 timeout 90 python3 packages/attention/bench/probes/timeline.py $R/timeline > $R/timeline.txt 2>&1
  echo "timeline rc=$? at ${SECONDS}s" >> $R/phases.txt
  cp $R/timeline.txt $OUT/timeline.txt 2>/dev/null
}
# Session 23. attn_span TARGET: bench/probes/span.py on the span wheel installed in TARGET (80 s at most, 30 calls a case),
# its output in $R/span.txt (raw tables under $R/span/) and $OUT/span.txt, a line in $R/phases.txt.
attn_span() {
  mkdir -p $R/span
  PYTHONPATH=$1 timeout 80 python3 packages/attention/bench/probes/span.py $R/span 30 > $R/span.txt 2>&1
  echo "span rc=$? at ${SECONDS}s" >> $R/phases.txt
  cp $R/span.txt $OUT/span.txt 2>/dev/null
}
# attn_ab PREFIX BASE NEW: an A/B of two attention wheels installed at PREFIX<name> (session 23 g's order): the planner's
# cases --quick three times each and the full cases twice each, interleaved, 40 s at most a bench.
attn_ab() {
  local t a
  for t in $2-q1 $3-q1 $3-q2 $2-q2 $2-q3 $3-q3 $2-f1 $3-f1 $3-f2 $2-f2; do
    case $t in *-q*) a=--quick;; *) a=;; esac
    attn_bench $1 ${t%-*} $t 40 8 $a
  done
}
# attn_c75s TARGET: the c75s wheel's subset of test_attention_gpu.py (the MMA by shuffles + DP4A, the portable
# staging, the planner) in 2 shards, within what is left of the call less the tests tail's share.
attn_c75s() {
  local L=$((END - 15 - SECONDS)); [ $L -gt 170 ] && L=170; [ $L -lt 40 ] && L=40
  fshards c75s packages/attention/tests/test_attention_gpu.py $1 2 $L -k "mma_pv or warps or items or stage or planner"
}
# ncu_prof NAME PYTHONPATH NCU-ARGS... -- PROGRAM ARGS...: an ncu --set full profile into $R/NAME.ncu-rep, with its details
# page ($R/NAME-details.txt) and its SASS source page as CSV ($R/NAME-source.csv, what ci/device/ncu_lines.py reads).
ncu_prof() {
  local n=$1 pp=$2; shift 2
  PYTHONPATH=$pp timeout 120 ncu --set full --clock-control none --import-source no -f -o $R/$n "$@" > $R/$n.log 2>&1
  echo "$n rc=$? at ${SECONDS}s" >> $R/phases.txt
  ncu -i $R/$n.ncu-rep --page details --print-units base > $R/$n-details.txt 2>&1
  ncu -i $R/$n.ncu-rep --page source --csv --print-source sass > $R/$n-source.csv 2>&1
}
# attn_abn PREFIX NAME...: bench_attention.py's planner cases for several wheels interleaved: the quick cases twice
# (forward, then backward order), the full cases twice (the same).
attn_abn() {
  local p=$1 n a; shift
  local fw=("$@") bw=() i
  for ((i = ${#fw[@]} - 1; i >= 0; i--)); do bw+=("${fw[$i]}"); done
  for n in "${fw[@]}"; do attn_bench $p $n $n-q1 40 8 --quick; done
  for n in "${bw[@]}"; do attn_bench $p $n $n-q2 40 8 --quick; done
  for n in "${fw[@]}"; do attn_bench $p $n $n-f1 40 8; done
  for n in "${bw[@]}"; do attn_bench $p $n $n-f2 40 8; done
}
# Session 28. inst_named PREFIX: each wheel of W ("name=folder ...") into PREFIX<name>, the names into the array `names`
# (attn_abn's arguments). s27ab.sh, s28a.sh, s28b.sh.
inst_named() {
  names=()
  local nw
  for nw in $W; do
    inst "${nw#*=}/mlops_attention-*.whl" $1${nw%%=*}
    names+=("${nw%%=*}")
  done
}
# Session 28. attn_timelines PREFIX: ci/device/s15p.py (torch.profiler: the decodes' kernels in situ, 20 calls after an
# L2 flush) on each wheel named in TL (installed in PREFIX<name>), into $R/timeline-<name>.txt / .jsonl.
attn_timelines() {
  local n
  for n in $TL; do
    PYTHONPATH=$1$n timeout 100 python3 ci/device/s15p.py $R/timeline-$n.jsonl attention > $R/timeline-$n.txt 2>&1
    echo "timeline $n rc=$? at ${SECONDS}s" >> $R/phases.txt
  done
}
# Session 35. The parts of a vocab sampler A/B call that s34v / s34r.sh wrote out each (they call these now).
# ab_install DIR: the vocab wheels DIR/new/ and DIR/before/ into $N and $B (set by the caller), a summary line each,
# the wheels' listing and the GPU's clocks.
ab_install() {
  ls -l $1/new/ $1/before/ > $R/wheels.txt 2>&1
  inst "$1/new/mlops_vocab-*.whl" $N; echo "install new rc=$? [${SECONDS}s]" >> $R/summary.txt
  inst "$1/before/mlops_vocab-*.whl" $B; echo "install before rc=$? [${SECONDS}s]" >> $R/summary.txt
  nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv > $R/gpu.txt 2>&1
}
# For wheels installed in $B (before) and $N (new): timeline_ab ROUNDS: bench/sample_timeline_probe.cu built from the kernel header before
# (.carry/probe_old/, carried) and from the tree, run before / new, ROUNDS times; a summ line each.
timeline_ab() {
  local F="-O3 -std=c++17 -arch=sm_90 -fmad=false -Ipackages/vocab/src -Ipackages/vocab/include -Ipackages/common/include" k
  (nvcc $F -o /tmp/stp packages/vocab/bench/sample_timeline_probe.cu &
   nvcc -I.carry/probe_old $F -o /tmp/stp_old packages/vocab/bench/sample_timeline_probe.cu & wait)
  for ((k = 1; k <= $1; k++)); do
    timeout 60 /tmp/stp_old > $R/timeline-before-$k.log 2>&1; summ timeline-before-$k $?
    timeout 60 /tmp/stp > $R/timeline-new-$k.log 2>&1; summ timeline-new-$k $?
  done
}
# bench_ab LIMIT [bench_vocab.py args...]: `bench_vocab.py --only sampling --quick ARGS` of $B and $N, alone on the GPU,
# before / new / before / new, at most LIMIT s each; rows in $R/bench-{before,new}-{1,2}/, a summ line each.
bench_ab() {
  local t side tgt name
  for t in before-1:$B new-1:$N before-2:$B new-2:$N; do
    IFS=: read -r side tgt <<< "$t"; name=bench-$side; mkdir -p $R/$name
    MLOPS_BENCH_OUT=$R/$name PYTHONPATH=$tgt:$PWD/tools/testing timeout $1 python3 \
      packages/vocab/bench/bench_vocab.py --only sampling --quick "${@:2}" > $R/$name.log 2>&1
    summ $name $?
  done
}
# sampling_rounds N SIDE...: the sampling bench (the planned call and cluster2_tp3g, B = 1, 8, 64, the five modes) on
# each side's wheel in /tmp/j-<side>, N rounds of the sides in turn (a paired A/B: sessions 45 and 47), into
# $R/bench-<side>-<round>/ and a summ line each.
sampling_rounds() {
  local k s name
  for ((k = 1; k <= $1; k++)); do
    for s in "${@:2}"; do
      name=bench-$s-$k; mkdir -p $R/$name
      MLOPS_BENCH_OUT=$R/$name PYTHONPATH=/tmp/j-$s:$PWD/tools/testing timeout 100 python3 \
        packages/vocab/bench/bench_vocab.py --only sampling --quick --batches 1,8,64 --variants cluster2_tp3g \
        --modes temperature,top_k50,top_k50_top_p0.9_min_p0.05,top_p0.9,penalties_top_p0.9 > $R/$name.log 2>&1
      summ $name $?
    done
  done
}
