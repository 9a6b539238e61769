#!/bin/bash
# Session 40's call: the global-slice near pass in float4 loads (MLOPS_SAMPLE_GSL_QUADS, sample_cluster_wide_top_p.cuh),
# chunk_draw's unfiltered pass with D loads a lane a trip (MLOPS_SAMPLE_GSL_DRAW_LOADS, sample_cluster_draw.cuh) and both
# with fewer instructions an element (MLOPS_SAMPLE_GSL_LEAN).
# Carry .carry/s40g, built here in a fresh worktree: before/ (0c1ac42's default build: U = 0, the strided pass) and
# q1/ q2/ q4/ (0c1ac42: sm90 vocab wheels of `python3 -m nox -s gpu_build -- --tags sm90 --package vocab` with
# CUDAFLAGS=-DMLOPS_SAMPLE_GSL_QUADS=U, a fresh build dir each), q2d2/ q4d4/ (c9c3b13, CUDAFLAGS="-DMLOPS_SAMPLE_GSL_QUADS=U
# -DMLOPS_SAMPLE_GSL_DRAW_LOADS=D"; D = 1 is 0c1ac42's pass), and the timeline probes stp_q0 / 1 / 2 / 4 (0c1ac42) and
# stp_q2d2 / q4d4 (c9c3b13) (nvcc -D... -O3 -std=c++17 -arch=sm_90 -fmad=false -I... bench/sample_timeline_probe.cu);
# q2Ld2/ q4Ld4/ and stp_q2Ld2 / stp_q4Ld4 the same with -DMLOPS_SAMPLE_GSL_LEAN=1 (276c2fb).
# 1. the probes, q0 q2 q4 q2d2 q4d4 q2Ld2 q4Ld4 in turn, 2 rounds, at B = 64 (2 CTAs a row on the global-slice forms)
#    and 32 (4) (PR rounds: 2 unless set);
# 2. ncu of one cluster2_tp3g launch of the probe at B = 64 (35 a case: top-p is launch 110, temperature 10): top-p on
#    the builds in NCU ("q0 q4Ld4" unless set); the details page and the SASS stall digest (ci/device/ncu_digest.py);
# 3. the sampling bench of before and q4Ld4, in turn, two rounds each (B = 1, 8, 31, 32, 40, 48, 64, 66; temperature,
#    top-k 50, the combination, top-p, penalties + top-p; the planned call and cluster2_tp3g / cluster8_tp3 named),
#    then q2, q4, q2d2, q4d4 and q2Ld2 one round at B = 32, 48, 64;
#    and the probes' fastest build (BEST, from their top-p cluster2_tp3g rows) in summary.txt; with ONE=1, PART=b's
#    tests of q4Ld4 (the build with every new path) in the time left (at least 100 s).
# PART=b TW=<wheel dir> (the next call, the machine warm): test_vocab_sampler_gpu.py whole on that wheel (6 shards) and
#    racecheck / memcheck of its tp3g sanitizer subset.
# Ran once: GPU run 203 (session 40, an H100: `ONE=1 PR=1 NCU=q4Ld4 END=400`; its ncu matched no kernel, the -k regex
# being of the demangled name until --kernel-name-base mangled was added) and run 204 (the probes q0 / q2Ld2 / q4Ld4
# twice more and the bench of before / q2Ld2 twice, by hand on the same machine). Results in $OUT/v.tgz. `DRY=1 OUT=/tmp/x bash ci/device/s40g.sh` runs the shell logic with the GPU commands echoed.
export PYTHONUNBUFFERED=1 MLOPS_TEST_CUDA=system
R=$OUT/r/v; mkdir -p $R; source ci/device/lib.sh; dry_stubs
C=.carry/s40g
[ -n "$DRY" ] && ncu() { echo "DRY ncu $*"; }
for w in before q1 q2 q4 q2d2 q4d4 q2Ld2 q4Ld4; do
  rm -rf /tmp/s40g-$w; inst "$C/$w/mlops_vocab-*.whl" /tmp/s40g-$w; echo "install $w rc=$? [${SECONDS}s]" >> $R/summary.txt
done
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv > $R/gpu.txt 2>&1
run_probe() {  # run_probe Q LABEL BATCHES...
  local exe=$C/stp_q$1; [ -n "$DRY" ] && exe="echo DRY $exe"
  timeout 120 $exe "${@:3}" > $R/timeline-$2.log 2>&1; summ timeline-$2 $?
}
nc() {  # nc PROBE CASE LAUNCH: ncu of the probe's cluster2_tp3g launch LAUNCH (B = 64; 35 launches a case)
  local exe=$C/stp_$1 o=ncu-$1-$2; [ -n "$DRY" ] && exe="echo DRY $exe"
  timeout 150 ncu --set full --import-source no --kernel-name-base mangled -k regex:ILi2ELi1024ENS1_8Tp3gForm --launch-skip $3 -c 1 \
    -o $R/$o $exe 64 > $R/$o.log 2>&1; summ $o $?
  ncu -i $R/$o.ncu-rep --page details --print-units base > $R/$o-details.txt 2>&1
  ncu -i $R/$o.ncu-rep --page source --csv --print-source sass > $R/$o-source.csv 2>&1
  python3 ci/device/ncu_digest.py $R/$o-source.csv --top 30 > $R/$o-digest.txt 2>&1
  rm -f $R/$o-source.csv
}
if [ "${PART:-a}" = b ]; then  # PART=b TW=<wheel>: the tests (step 4) of the wheel the defaults will build
  fshards vocab-sampler packages/vocab/tests/test_vocab_sampler_gpu.py /tmp/s40g-$TW 6 300
  ksanitize vocab /tmp/s40g-$TW 300 packages/vocab/tests/test_vocab_sampler_gpu.py "sanitizer_subset and tp3g"
  collect
  (cd $OUT/r && tar czf $OUT/v.tgz v)
  cat $R/summary.txt $R/tests-sorted.txt $R/failures.txt $R/sanitizer.txt
  exit 0
fi
for k in $(seq ${PR:-2}); do for q in 0 2 4 2d2 4d4 2Ld2 4Ld4; do run_probe $q q$q-$k 64 32; done; done
for q in ${NCU-q0 q4Ld4}; do nc $q top-p 110; done
bench() {  # bench WHEEL ROUND BATCHES
  local name=bench-$1-$2; mkdir -p $R/$name
  MLOPS_BENCH_OUT=$R/$name PYTHONPATH=/tmp/s40g-$1:$PWD/tools/testing timeout 150 python3 \
    packages/vocab/bench/bench_vocab.py --only sampling --quick --batches $3 \
    --modes temperature,top_k50,top_k50_top_p0.9_min_p0.05,top_p0.9,penalties_top_p0.9 \
    --variants cluster2_tp3g,cluster8_tp3 > $R/$name.log 2>&1
  summ $name $?
}
for k in 1 2; do for w in before q4Ld4; do bench $w $k 1,8,31,32,40,48,64,66; done; done
for w in q2 q4 q2d2 q4d4 q2Ld2; do bench $w 1 32,48,64; done
# the fastest build by the probes: the median over rounds of top-p cluster2_tp3g's row 0 "end" (us)
BEST=$(python3 - $R <<'EOF' 2>> $R/summary.txt
import glob, re, statistics, sys
t = {}
for f in glob.glob(sys.argv[1] + "/timeline-q*-*.log"):
    q = re.search(r"timeline-q(\w+)-\d", f).group(1)
    blk = open(f).read().split("top-p 0.9, cluster2_tp3g (")[1:]
    m = re.search(r"\n  end +\d+ +\d+ +([\d.]+)", blk[0]) if blk else None
    if m: t.setdefault(q, []).append(float(m.group(1)))
med = {q: statistics.median(v) for q, v in t.items() if q != "0"}
print(min(med, key=med.get) if med else "2")
print("probe medians", {q: statistics.median(v) for q, v in t.items()}, file=sys.stderr)
EOF
)
echo "probes' best: q$BEST [${SECONDS}s]" >> $R/summary.txt
# ONE=1: the tests of q4Ld4 (PART=b's) in this call, to END s of the call (580 unless set: a call may take ~590)
L=$((${END:-580} - SECONDS)); [ $L -gt 300 ] && L=300
if [ -n "$ONE" ] && [ $L -ge 100 ]; then
  fshards vocab-sampler packages/vocab/tests/test_vocab_sampler_gpu.py /tmp/s40g-q4Ld4 6 $L
  ksanitize vocab /tmp/s40g-q4Ld4 $L packages/vocab/tests/test_vocab_sampler_gpu.py "sanitizer_subset and tp3g"
  collect
fi
(cd $OUT/r && tar czf $OUT/v.tgz v)
cat $R/summary.txt $R/tests-sorted.txt $R/failures.txt $R/sanitizer.txt 2>/dev/null
