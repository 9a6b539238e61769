#!/bin/bash
# Session 45, run 219: the paired A/B that run 218 left open. Two sm90 vocab wheels of 76168ac (.carry/s45a: new/ the
# default, early/ with CUDAFLAGS=-DMLOPS_SAMPLE_EARLY_DRAW=1), the sampling bench (planned call + cluster2_tp3g, B = 1,
# 8, 64, the five modes) in ROUNDS alternating rounds new, early, new, early ... (run 218's two calls a side left B = 64
# top-p and penalties + top-p within the call-to-call spread: 4 - 5 us between two calls of identical SASS), then the
# ab table (before = new). Results in $OUT/v.tgz. `DRY=1 OUT=/tmp/x bash ci/device/s45a.sh`: the shell logic.
# Run 222: CARRY=.carry/s45d SIDES="s44 s45" (the first side is the ab table's before): session 44's default (76168ac)
# against session 45's (both forms on).
export PYTHONUNBUFFERED=1
R=/tmp/s45a-r/v; rm -rf $R; mkdir -p $R $OUT; source ci/device/lib.sh; dry_stubs
C=${CARRY:-.carry/s45a} SIDES=${SIDES:-new early}
for s in $SIDES; do rm -rf /tmp/j-$s; inst "$C/$s/mlops_vocab-*.whl" /tmp/j-$s; echo "install $s rc=$? [${SECONDS}s]" >> $R/summary.txt; done
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv > $R/gpu.txt 2>&1
sampling_rounds ${ROUNDS:-4} $SIDES
mkdir -p $R/ab
set -- $SIDES
for d in $R/bench-$1-*/; do d=${d%/}; ln -s ../$(basename $d) $R/ab/bench-before-${d##*-}; done
for d in $R/bench-$2-*/; do d=${d%/}; ln -s ../$(basename $d) $R/ab/bench-new-${d##*-}; done
python3 ci/device/bench_ab.py $R/ab > $R/ab.txt 2>&1
(cd $R/.. && tar czf $OUT/v.tgz v)
