#!/bin/bash
# Written in session 13 for its last call (run 78), which could not be made (new device loans were paused): run it
# when a machine is lent. FlashInfer's decode beside SDPA and FBLA (issue 6's peer "FlashInfer's decode where it
# can be run"), ncu of the planned B = 64 sampler launches, then the wheels' GPU files where the call has time left.
# Carry: .carry/flashinfer/call1 (flashinfer-python 0.6.18.post1 + apache-tvm-ffi, tools/device_bundle.py),
# .carry/fidec (its batch decode module and its fa2 prefill module, the tensor-core decode's kernels, built
# ahead on the CPU machine for sm_90a by nvcc 13.0: the device builds nothing; docs/attention.md), .carry/s13f
# (the session's final sm90 wheels). FlashInfer's modules go where it looks for AOT ones
# (<package>/data/aot/<uri>/<uri>.so); FLASHINFER_DISABLE_JIT=1 makes a missing one an error, not a build.
# DRY=1: the shell logic only.
export PYTHONUNBUFFERED=1 MLOPS_TEST_CUDA=system CUDA_CACHE_MAXSIZE=4294967296
R=$OUT/r; mkdir -p $R/bench; source ci/device/lib.sh
if [ -n "$DRY" ]; then
  inst() { echo "DRY inst $*"; }; nvidia-smi() { echo DRY; }; timeout() { shift; "$@"; }
  python3() { echo "DRY python3 $* (shard=$MLOPS_SHARD) 1 passed"; }
fi
git rev-parse HEAD > $R/commit.txt 2>/dev/null
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv > $R/gpu.txt
for p in attention vocab norm; do rm -rf /tmp/f-$p; inst ".carry/s13f/mlops_$p-*.whl" /tmp/f-$p; done
if [ -z "$DRY" ]; then FI_WARM=0 . ci/device/flashinfer_setup.sh > $R/fi-setup.log 2>&1; echo "fi setup rc=$? [${SECONDS}s]" >> $R/summary.txt; fi
FI=${FI_TARGET:-/tmp/fi}
for f in .carry/fidec/*.so; do u=$(basename $f .so); mkdir -p $FI/flashinfer/data/aot/$u && cp $f $FI/flashinfer/data/aot/$u/; done
export FLASHINFER_DISABLE_JIT=1
# (1) alone: every issue-6 case (B 1 / 8 x L 4K / 16K / 128K, random q), the planner's pick, SDPA, both FlashInfer forms
MLOPS_BENCH_OUT=$R/bench PYTHONPATH=/tmp/f-attention:$PWD/tools/testing:$PYTHONPATH timeout 200 python3 \
  packages/attention/bench/bench_attention.py --variants planner > $R/bench-attention.log 2>&1
summ bench-attention $?
# (2) ncu of the planned B = 64 sampler launches still above 60 us (profile_vocab.py --cases s13: temperature lean,
#     top-k tk, the combination tk, top-p tp; each after its warm-up launch, both profiled): where their time goes
PYTHONPATH=/tmp/f-vocab timeout 150 ncu --set full --import-source no -k regex:sample_cluster -c 8 -o $R/s13-sampler \
  python3 packages/vocab/bench/profile_vocab.py --no-lm-head --cases s13 > $R/ncu-vocab.log 2>&1
echo "ncu vocab rc=$? [${SECONDS}s]" >> $R/summary.txt
[ -f $R/s13-sampler.ncu-rep ] && ncu -i $R/s13-sampler.ncu-rep --page details --print-units base > $R/ncu-vocab-details.txt 2>&1
rm -f $R/s13-sampler.ncu-rep
# (3) the final wheels' GPU files, 13 processes at once, bounded by the call's end
L=$((${END:-420} - SECONDS)); [ $L -lt 60 ] && L=60
shards sm90 attention /tmp/f-attention 4 $L
shards sm90 norm /tmp/f-norm 5 $L
fshards vocab packages/vocab/tests/test_vocab_gpu.py /tmp/f-vocab 4 $L -k "lm_head or sample"
wait; echo "tests done [${SECONDS}s] (limit ${L}s)" >> $R/summary.txt
grep -h '"case": "decode' $R/bench/*.jsonl 2>/dev/null | python3 -c '
import json, sys
for l in sys.stdin:
    r = json.loads(l)
    print(r.get("shape"), "|", r["impl"], "|", r.get("us"), "|", r.get("frac_copy_bw"), "|", r.get("max_abs_diff_vs_sdpa"), "|", r.get("skipped", ""))' > $R/rows.txt 2>&1
finish gpu.txt summary.txt rows.txt
