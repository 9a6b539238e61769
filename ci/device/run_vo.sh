#!/bin/bash
# Device run: vocab + optimizers on sm90 (GPU files + C API tests first, then sanitizer, then the rest).
set -x
W=.carry/run1/sm90; T=/tmp/mlops-sm90
python3 -m pip install -q --no-index --no-deps --no-compile --target $T $W/*.whl
export PYTHONPATH=$T:$PWD/tools/testing MLOPS_TEST_CUDA=system PYTHONUNBUFFERED=1 MLOPS_ARCH_TAG=sm90
nvidia-smi --query-gpu=name,driver_version --format=csv > $OUT/gpu.txt
timeout 200 python3 -m pytest -v --tb=short -p no:cacheprovider packages/vocab/tests/test_vocab_gpu.py packages/optimizers/tests/test_optimizers_gpu.py packages/vocab/tests/test_vocab_c_api.py packages/optimizers/tests/test_optimizers_c_api.py > $OUT/pytest-gpu.log 2>&1
echo "gpu rc=$?" >> $OUT/summary.txt
for tool in memcheck racecheck; do
timeout 90 compute-sanitizer --tool $tool --error-exitcode 9 python3 -m pytest -q -p no:cacheprovider -k sanitizer_subset packages/vocab/tests/test_vocab_gpu.py packages/optimizers/tests/test_optimizers_gpu.py > $OUT/sanitizer-$tool.log 2>&1
echo "$tool rc=$?" >> $OUT/summary.txt
done
timeout 150 python3 -m pytest -v --tb=short -p no:cacheprovider packages/vocab/tests packages/optimizers/tests --deselect packages/optimizers/tests/test_optimizers_distributed.py > $OUT/pytest-rest.log 2>&1
echo "rest rc=$?" >> $OUT/summary.txt
cat $OUT/summary.txt; tail -5 $OUT/pytest-gpu.log
