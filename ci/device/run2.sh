#!/bin/bash
# Device run 7: vocab GPU suite again (Sampler device fix overlaid), sanitizer; full optimizers bench; vocab sampling bench.
set -x
W=.carry/run2/sm90; T=/tmp/mlops-sm90
python3 -m pip install -q --no-index --no-deps --no-compile --target $T $W/*.whl
cp packages/vocab/python/mlops/vocab/*.py $T/mlops/vocab/   # the fix of commit "Sampler(device='cuda')"
export PYTHONPATH=$T:$PWD/tools/testing MLOPS_TEST_CUDA=system PYTHONUNBUFFERED=1 MLOPS_ARCH_TAG=sm90 MLOPS_BENCH_OUT=$OUT
timeout 150 python3 -m pytest -v --tb=short -p no:cacheprovider packages/vocab/tests/test_vocab_gpu.py > $OUT/pytest-vocab-gpu.log 2>&1
echo "vocab gpu rc=$?" >> $OUT/summary.txt
for tool in memcheck racecheck; do
timeout 60 compute-sanitizer --tool $tool --error-exitcode 9 python3 -m pytest -q -p no:cacheprovider -k sanitizer_subset packages/vocab/tests/test_vocab_gpu.py > $OUT/sanitizer-vocab-$tool.log 2>&1
echo "vocab $tool rc=$?" >> $OUT/summary.txt
done
timeout 170 python3 packages/optimizers/bench/bench_optimizers.py > $OUT/bench-optimizers.log 2>&1
echo "bench optimizers rc=$?" >> $OUT/summary.txt
timeout 90 python3 packages/vocab/bench/bench_vocab.py --only sampling > $OUT/bench-vocab-sampling.log 2>&1
echo "bench vocab sampling rc=$?" >> $OUT/summary.txt
cat $OUT/summary.txt; tail -3 $OUT/pytest-vocab-gpu.log; grep -h ERROR.SUMMARY $OUT/sanitizer-*.log
