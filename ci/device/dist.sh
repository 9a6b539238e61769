#!/bin/bash
# Device run 10 (nvidia-h200-x2): the optimizers' 2-GPU DDP / FSDP2 test, and the optimizers GPU file (final 8-bit commits).
export PYTHONUNBUFFERED=1 MLOPS_TEST_CUDA=system NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 MLOPS_ARCH_TAG=sm90
T=/tmp/m; python3 -m pip install -q --no-index --no-deps --no-compile --target $T .carry/final/*.whl
export PYTHONPATH=$T:$PWD/tools/testing
nvidia-smi --query-gpu=name,driver_version --format=csv > $OUT/gpus.txt
timeout 200 python3 -m pytest -v --tb=long -p no:cacheprovider packages/optimizers/tests/test_optimizers_distributed.py > $OUT/opt-dist.log 2>&1
echo "opt-dist rc=$? $(tail -1 $OUT/opt-dist.log)" >> $OUT/summary.txt
CUDA_VISIBLE_DEVICES=0 timeout 60 python3 -m pytest -q --tb=short -p no:cacheprovider packages/optimizers/tests/test_optimizers_gpu.py > $OUT/opt-gpu.log 2>&1
echo "opt-gpu rc=$? $(tail -1 $OUT/opt-gpu.log)" >> $OUT/summary.txt
cat $OUT/summary.txt
