#!/bin/bash
# Session 7, device run 38 (one H200): norm wheels of 2bd1338 (the "f" variants' near vote fixed for NaN
# scales) on sm_90 and compute_80: the two f variants' tests and the non-finite test (4 shards each); then
# positional's GPU file under compute_80 alone in 8 shards (run 37 ran it beside norm and hit the limit).
export PYTHONUNBUFFERED=1 MLOPS_TEST_CUDA=system CUDA_CACHE_MAXSIZE=4294967296
R=$OUT/r; mkdir -p $R; source ci/device/lib.sh
inst ".carry/gpu/sm90/mlops_norm-*.whl" /tmp/t-norm
inst ".carry/gpu/c80/mlops_norm-*.whl" /tmp/c80-norm
inst ".carry/gpu/c80/mlops_positional-*.whl" /tmp/c80-positional
TT=$PWD/tools/testing
K="r16lx2f or r16lx4wf or nonfinite"
shards sm90 norm /tmp/t-norm 4 120 -k "$K"
shards c80 norm /tmp/c80-norm 4 120 -k "$K"
wait; echo "norm done at ${SECONDS}s" >> $R/phases.txt
shards c80 positional /tmp/c80-positional 8 $((560 - SECONDS))
wait; echo "positional done at ${SECONDS}s" >> $R/phases.txt
sort $R/tests.txt > $R/tests-sorted.txt
cd $OUT && tar czf r.tgz r && cat r/phases.txt r/tests-sorted.txt; rm -rf r
