#!/bin/bash
# Session 15, GPU run 86 (one H200, <= 300 s): confirms the session's two planned changes.
# (1) attention, the wheel of 7ecf8ca (combine_warps_kernel's shorter path of 2ea9528; the split copy of 18c98f8
#     reverted: the sm_90 SASS equals run 84's "new1" wheel kernel for kernel): the whole attention GPU file in 6
#     shards; then bench_attention.py --variants planner over the six issue-6 cases, before (da780c5, .carry/s15a/before)
#     and new in turn, twice.
# (2) vocab, the wheel of 7ecf8ca (the planner's top-p pick above B = 8 is cluster8_tp3): the sampling bench --quick of
#     the planned calls, before (a8d2e8a, cluster8_tp planned) / new / before / new; the sampler GPU file's planned and
#     tp3 tests. Results under $OUT/r/c; DRY=1 prints the commands.
export PYTHONUNBUFFERED=1 MLOPS_TEST_CUDA=system CUDA_CACHE_MAXSIZE=4294967296
R=$OUT/r/c; mkdir -p $R; source ci/device/lib.sh
if [ -n "$DRY" ]; then
  inst() { echo "DRY inst $*"; }; timeout() { shift; "$@"; }
  python3() { echo "DRY python3 $* 1 passed"; }
fi
inst ".carry/s15a/before/mlops_attention-*.whl" /tmp/cab
inst ".carry/s15c/attn/mlops_attention-*.whl" /tmp/can
inst ".carry/s15c/vbefore/mlops_vocab-*.whl" /tmp/cvb
inst ".carry/s15c/vocab/mlops_vocab-*.whl" /tmp/cvn
echo "installed at ${SECONDS}s" >> $R/phases.txt
fshards attn packages/attention/tests/test_attention_gpu.py /tmp/can 6 150
wait; echo "attention tests done at ${SECONDS}s" >> $R/phases.txt
for t in before:cab new:can before:cab new:can; do
  n=a-${t%%:*}-$SECONDS; mkdir -p $R/$n
  MLOPS_BENCH_OUT=$R/$n PYTHONPATH=/tmp/${t#*:}:$PWD/tools/testing timeout 40 python3 \
    packages/attention/bench/bench_attention.py --variants planner > $R/$n.log 2>&1
  echo "bench $n rc=$? at ${SECONDS}s" >> $R/phases.txt
done
for t in before:cvb new:cvn before:cvb new:cvn; do
  n=v-${t%%:*}-$SECONDS; mkdir -p $R/$n
  MLOPS_BENCH_OUT=$R/$n PYTHONPATH=/tmp/${t#*:}:$PWD/tools/testing timeout 30 python3 \
    packages/vocab/bench/bench_vocab.py --only sampling --quick > $R/$n.log 2>&1
  echo "bench $n rc=$? at ${SECONDS}s" >> $R/phases.txt
done
fshards vsampler packages/vocab/tests/test_vocab_sampler_gpu.py /tmp/cvn 2 60 -k "planned or tp3 or staged_variants"
finish phases.txt
