#!/bin/bash
# Session 14, GPU run 79 (one H200, <= 520 s): the session's three packages in turn, each part alone on the GPU while
# it benches.
# (1) norm: bench_norm.py --shapes 2048x4096,16384x4096 on the sm90 wheel of 9f19bb4 (.carry/s14norm), the planned
#     rows of the new plan (r16lx2g / r16lx4wg) beside y and the torch peers (<= 70 s);
# (2) attention: ci/device/s14a.sh (mma_pv4r, the refine with the thread index read again: bench, ncu, tests,
#     sanitizers; <= 190 s);
# (3) vocab: ci/device/s14v.sh (the tk / tp sampler forms with fewer spills, before / new: bench, tests, sanitizers;
#     <= 240 s).
# Results: $OUT/r/norm, $OUT/r/attn, $OUT/r/vocab (each part's own files), tarred into $OUT/r.tgz at the end.
export PYTHONUNBUFFERED=1 MLOPS_TEST_CUDA=system
mkdir -p $OUT/r/norm/bench
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/n14 .carry/s14norm/mlops_norm-*.whl
MLOPS_BENCH_OUT=$OUT/r/norm/bench PYTHONPATH=/tmp/n14:$PWD/tools/testing timeout 70 python3 \
  packages/norm/bench/bench_norm.py --shapes 2048x4096,16384x4096 > $OUT/r/norm/bench.log 2>&1
echo "norm bench rc=$? at ${SECONDS}s"
grep -h '"us"' $OUT/r/norm/bench/*.jsonl | python3 -c '
import json, sys
for l in sys.stdin:
    r = json.loads(l); print(r.get("shape"), "|", r.get("case"), "|", r.get("impl"), "|", r.get("us"), "|", r.get("kernel_us"))'
bash ci/device/s14a.sh > $OUT/r/attn-call.log 2>&1; echo "attention part rc=$? at ${SECONDS}s"
tail -60 $OUT/r/attn-call.log
bash ci/device/s14v.sh > $OUT/r/vocab-call.log 2>&1; echo "vocab part rc=$? at ${SECONDS}s"
tail -60 $OUT/r/vocab-call.log
(cd $OUT && tar czf r.tgz r && rm -rf r)
