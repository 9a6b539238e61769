#!/bin/bash
# Session 7, device run 36 (one H200). (1) norm's Python call overhead case alone first (bench_norm.py
# --overhead-only: our 1x4096 call beside torch's one-kernel ops from Python, the host's floor measured the
# same way). (2) CUDA 11.8 builds (sm_90 SASS) of norm, vocab and optimizers: their GPU test files in
# contiguous shards at once (tools/testing/mlops_shard.py), with the compute_80 PTX build of positional
# (this session's and session 6's dec changes had run under sm_90 / compute_61 only). (3) With the GPU
# warm from (2): the decode probe again, alone (run 35 ran it on a cold machine), T = 1 ... 32, 4096 and
# 32768 (copy-bandwidth fraction). (4) ncu of one planned decode launch at T = 1, on the fly (details and
# per-SASS-instruction source page) and from the cache (details): why on the fly (one DRAM round trip and
# an fp64 sincos) runs ~0.45 us longer than the cache path's two round trips. Phases bounded by SECONDS.
export PYTHONUNBUFFERED=1 MLOPS_TEST_CUDA=system CUDA_CACHE_MAXSIZE=4294967296
R=$OUT/r; mkdir -p $R; source ci/device/lib.sh; export MLOPS_BENCH_OUT=$R
for p in norm positional; do inst ".carry/gpu/sm90/mlops_$p-*.whl" /tmp/t-$p; done
for p in norm vocab optimizers; do inst ".carry/gpu/sm90cu118/mlops_$p-*.whl" /tmp/u-$p; done
inst ".carry/gpu/c80/mlops_positional-*.whl" /tmp/c80-positional
TT=$PWD/tools/testing
PYTHONPATH=/tmp/t-norm:$TT timeout 90 python3 packages/norm/bench/bench_norm.py --overhead-only > $R/overhead.log 2>&1
echo "norm overhead rc=$? at ${SECONDS}s" >> $R/phases.txt
shards sm90cu118 norm /tmp/u-norm 3 220
shards sm90cu118 vocab /tmp/u-vocab 6 220
shards sm90cu118 optimizers /tmp/u-optimizers 2 220
shards c80 positional /tmp/c80-positional 4 220
wait
echo "tests done at ${SECONDS}s" >> $R/phases.txt
PYTHONPATH=/tmp/t-positional:$TT timeout $((480 - SECONDS)) python3 ci/device/rope_probe.py --tokens 1,4,8,16,32 --blocks 3 --graph > $R/probe.log 2>&1
echo "probe decode rc=$? at ${SECONDS}s" >> $R/phases.txt
PYTHONPATH=/tmp/t-positional:$TT timeout $((560 - SECONDS)) python3 ci/device/rope_probe.py --tokens 4096,32768 --blocks 2 >> $R/probe.log 2>&1
echo "probe prefill rc=$? at ${SECONDS}s" >> $R/phases.txt
N="ncu --set full -k regex:rope_kernel --launch-skip 5 --launch-count 1"
export PYTHONPATH=/tmp/t-positional:$TT
timeout 60 $N --page details --csv python3 ci/device/rope_ncu.py --fly > $R/ncu-fly-details.csv 2> $R/ncu-fly.err
timeout 60 $N --page source --print-source sass --csv python3 ci/device/rope_ncu.py --fly > $R/ncu-fly-source.csv 2>> $R/ncu-fly.err
timeout 50 $N --page details --csv python3 ci/device/rope_ncu.py > $R/ncu-cache-details.csv 2> $R/ncu-cache.err
echo "ncu done at ${SECONDS}s" >> $R/phases.txt
sort $R/tests.txt > $R/tests-sorted.txt
cd $OUT && tar czf r.tgz r && cat r/phases.txt r/tests-sorted.txt; rm -rf r
