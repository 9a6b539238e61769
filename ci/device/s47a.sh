#!/bin/bash
# Session 47, run 230: the staged near pass by 16-byte loads (MLOPS_SAMPLE_WIDE_QUADS) and the B = 1 forms at 1024
# threads. .carry/s47a: base/ (91e725a's default sm90 wheel) and wq4/ (the same with CUDAFLAGS=-DMLOPS_SAMPLE_WIDE_QUADS=4),
# the timeline probes stp_base / stp_wq4 / stp_wq2 (nvcc -O3 -std=c++17 -arch=sm_90 -fmad=false -DMLOPS_PROBE_T1024
# [-DMLOPS_SAMPLE_WIDE_QUADS=U] bench/sample_timeline_probe.cu: B = 8 and 1, the t1024 cases at B = 1).
# Also cq/ (948136a, -DMLOPS_SAMPLE_COUNT_QUADS=1: the round counts by 16-byte remote loads) and both/ (948136a with
# both macros), their probes stp_cq / stp_both; the probes travel gzipped (stp_<side>.gz: the carry's 64 MiB).
# 1. the probes, 3 rounds; 2. the sampling bench (planned call + cluster2_tp3g, B = 1, 8, 64) in ROUNDS alternating
# rounds of SIDES and an ab table of each side against the first (ab-<side>.txt); 3. test_vocab_sampler_gpu.py whole on
# TEST_SIDE (both) in 6 shards and the sanitizers on the staged wide / tp3 / tk cluster subset, to END s. Results in
# $OUT/v.tgz.
# `DRY=1 OUT=/tmp/x bash ci/device/s47a.sh`: the shell logic.
# Run 236: CARRY=.carry/s47c SIDES="base wl" PROBES="base wl" TEST_SIDE=wl ROUNDS=4 END=400 (wl: 0173b37 with
# -DMLOPS_SAMPLE_WIDE_LEAN=1; its probes with -DMLOPS_SAMPLE_NEAR_MARKS); run 237: CARRY=.carry/s47d SIDES="base fin"
# PROBES="base fin" TEST_SIDE=fin ROUNDS=5 END=420 (fin: 7b2818a's default). Session 48: run 238 CARRY=.carry/s48a
# SIDES="base n1 new" PROBES="base n1 new" TEST_SIDE=new ROUNDS=5 END=470, run 239 CARRY=.carry/s48b SIDES="base win"
# PROBES="base win" TEST_SIDE=win ROUNDS=4 END=340 SAN_K="test_cluster_sanitizer_subset and (wide or tk) and not tp3g"
# (docs/vocab.md "Session 48"). Session 49: run 241 CARRY=.carry/s49a SIDES="base p1" PROBES="base p1" TEST_SIDE=p1
# ROUNDS=4 END=400 SAN_K="test_cluster_sanitizer_subset and (tk or tp3g)", run 242 CARRY=.carry/s49b SIDES="base n8 p1"
# PROBES="base n8 p1" TEST_SIDE=n8 ROUNDS=4 END=420 (same SAN_K), run 243 CARRY=.carry/s49c SIDES="base n8 n8b"
# PROBES="base n8 n8b" TEST_SIDE=n8b ROUNDS=4 END=420 (same SAN_K) (docs/vocab.md "Session 49").
# Session 50 (prepared; no machine came): CARRY=.carry/s50a SIDES="n8 fw ftw" PROBES="n8 fw ftw" TEST_SIDE=ftw ROUNDS=4
# END=380 SAN_K="test_cluster_sanitizer_subset and tk and not tp3g" (docs/vocab.md "Session 50"). Session 51 (prepared;
# no machine came): the same CARRY with ftwl (12a8225, FINISH2 = 8, TOPP_WARP = 1, LIST_DRAW = 1) and ftwld (4e00995,
# those and TK_TOPP_DRAW = 1), SIDES="n8 fw ftw ftwl ftwld" PROBES="n8 fw ftw ftwl ftwld" TEST_SIDE=ftwld ROUNDS=4
# END=460 (docs/vocab.md "Session 51"). Session 52: CARRY=.carry/s52a (n8, ftwld, and ftwldo = 54b7ccd with the four
# macros, tk_level2_finish out of line; probes n8 / ftwl / ftwld / ftwldo) SIDES="n8 ftwld ftwldo" PROBES="n8 ftwl ftwld
# ftwldo" TEST_SIDE=ftwldo ROUNDS=4 END=300 SAN_K="test_cluster_sanitizer_subset and tk and not tp3g": run 245 (the
# working tree and a carry of 64 MiB at most: ftw's and fw's sides did not fit beside the four). Next:
# CARRY=.carry/s52b SIDES="ftwldo d52" PROBES="ftwldo d52" TEST_SIDE=d52 ROUNDS=4 END=300 (same SAN_K; d52 = LIST_DRAW off):
# run 246 (session 53). Session 53's next: CARRY=.carry/s53a SIDES="base wg both" PROBES="base both" TEST_SIDE=both
# ROUNDS=4 END=330 (the default SAN_K; wg = TK_WINDOW_GUESS, both = it and TP3_WARPS; docs/vocab.md "Session 53"): run 247;
# run 249: CARRY=.carry/s53c SIDES="base ts" PROBES="base ts" TEST_SIDE=ts ROUNDS=5 END=300 (SAN_K tk; ts = TK_TOPP_SPLIT).
# Run 250: CARRY=.carry/s53d SIDES="base ds" PROBES="base ds" TEST_SIDE=ds ROUNDS=5 END=300 (SAN_K tk; ds = TK_DRAW_SPLIT, reverted).
# Next (prepared, four starts refused): CARRY=.carry/s53e SIDES="base w0" PROBES="base w0" TEST_SIDE=w0 ROUNDS=4 END=250
# SAN_K="test_cluster_sanitizer_subset and (wide or tp3) and not tp3g" (w0 = TP3_WARPS=2; probes with TP3_MARKS).
# Session 54, run 251: CARRY=.carry/s54a SIDES="base w0 mk both" PROBES="base w0 mk" TEST_SIDE=both ROUNDS=4 END=380 (that
# SAN_K; mk = MASK_DRAW_KEPT, on since; both = it and TP3_WARPS=2).
# Next: CARRY=.carry/s54b SIDES="base pz" PROBES="base pz" TEST_SIDE=pz ROUNDS=5 END=330 (that SAN_K; pz = MASK_DRAW_PREZERO,
# both probes with DRAW_MARKS).
export PYTHONUNBUFFERED=1 MLOPS_TEST_CUDA=system
R=/tmp/s47a-r/v; rm -rf $R; mkdir -p $R $OUT; source ci/device/lib.sh; dry_stubs
snap() { (cd $R/.. && tar czf $OUT/v.tgz v); }
C=${CARRY:-.carry/s47a} SIDES=${SIDES:-base wq4 cq both} PROBES=${PROBES:-base wq4 wq2 cq both} T=${TEST_SIDE:-both}
for s in $PROBES; do gunzip -c $C/stp_$s.gz > /tmp/stp_$s && chmod +x /tmp/stp_$s; done
for s in $SIDES; do rm -rf /tmp/j-$s; inst "$C/$s/mlops_vocab-*.whl" /tmp/j-$s; echo "install $s rc=$? [${SECONDS}s]" >> $R/summary.txt; done
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv > $R/gpu.txt 2>&1
for k in 1 2 3; do
  for s in $PROBES; do
    exe=/tmp/stp_$s; [ -n "$DRY" ] && exe="echo DRY $exe"
    timeout 60 $exe 8 1 > $R/timeline-$s-$k.log 2>&1; summ timeline-$s-$k $?
  done
done
snap
sampling_rounds ${ROUNDS:-3} $SIDES
set -- $SIDES
first=$1; shift
for s in "$@"; do  # bench_ab.py's before / new pairs: the first side against each
  mkdir -p $R/ab-$s
  for d in $R/bench-$first-*/; do d=${d%/}; ln -s ../$(basename $d) $R/ab-$s/bench-before-${d##*-}; done
  for d in $R/bench-$s-*/; do d=${d%/}; ln -s ../$(basename $d) $R/ab-$s/bench-new-${d##*-}; done
  python3 ci/device/bench_ab.py $R/ab-$s > $R/ab-$s.txt 2>&1
done
snap
L=$((${END:-540} - SECONDS)); [ $L -gt 300 ] && L=300
if [ $L -ge 100 ]; then
  fshards vocab-sampler packages/vocab/tests/test_vocab_sampler_gpu.py /tmp/j-$T 6 $L
  ksanitize vocab /tmp/j-$T $L packages/vocab/tests/test_vocab_sampler_gpu.py \
    "${SAN_K:-test_cluster_sanitizer_subset and (wide or tp3 or tk) and not tp3g}"
fi
collect
snap
cat $R/gpu.txt $R/summary.txt $R/tests-sorted.txt $R/failures.txt
