#!/bin/bash
# Session 10, device run 58 (one H200). attention wheels of 3ff987e (qhat_inv's 2^-96 guard: tiny q gets zero q
# digits), sm90 / c80 / c61, built from a clean worktree: the whole attention GPU file on sm_90 (4 shards) and the
# tiny-q test under compute_80 and compute_61 (JIT), and norm's lean tests (the packed y of run 56) under compute_70
# and compute_75 builds of 3ff987e (mul.rn.f16x2 for fp16, bf16 on the fp32 path), 3 shards each, at once.
export PYTHONUNBUFFERED=1 MLOPS_TEST_CUDA=system CUDA_CACHE_MAXSIZE=4294967296
R=$OUT/r; mkdir -p $R; source ci/device/lib.sh
for t in sm90 c80 c61; do inst ".carry/gpu/$t/mlops_attention-*.whl" /tmp/$t-attention; done
for t in c70 c75; do inst ".carry/gpu/$t/mlops_norm-*.whl" /tmp/$t-norm; done
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv > $R/gpu.txt
shards sm90 attention /tmp/sm90-attention 4 400
shards c80 attention /tmp/c80-attention 1 400 -k tiny
shards c61 attention /tmp/c61-attention 1 400 -k tiny
shards c70 norm /tmp/c70-norm 3 450 -k lean
shards c75 norm /tmp/c75-norm 3 450 -k lean
wait; echo "done at ${SECONDS}s" >> $R/summary.txt
sort $R/tests.txt > $R/tests-sorted.txt
cd $OUT && tar czf r.tgz r && cat r/summary.txt r/tests-sorted.txt; rm -rf r
