#!/bin/bash
# Session 3, device run 13 (nvidia-h200-x2). Both GPUs: the optimizers' 2-GPU test for the 8-bit
# case (the bound of 2x the single-GPU 8-bit effect). Then GPU 0: the vocab GPU file to its end (the
# pipe lm_head instances at every M); GPU 1: the sampler GPU file (full-size cluster variants), the
# attention GPU file, racecheck, then ncu of the hot kernels of the perf issues (profile_ops.py).
export PYTHONUNBUFFERED=1 MLOPS_TEST_CUDA=system MLOPS_ARCH_TAG=sm90 NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1
R=$OUT/r; mkdir -p $R; export MLOPS_BENCH_OUT=$R
T=/tmp/m; export PYTHONPATH=$T:$PWD/tools/testing
python3 -m pip install -q --no-index --no-deps --no-compile --upgrade --target $T .carry/gpu/sm90/*.whl
s() { echo "$1 rc=$2 $(tail -1 $R/$1.log | cut -c1-200)" >> $R/summary.txt; }
nvidia-smi --query-gpu=name,driver_version --format=csv > $R/gpus.txt
timeout 60 python3 -m pytest -v --tb=short -p no:cacheprovider -k adamw_8bit packages/optimizers/tests/test_optimizers_distributed.py > $R/opt-dist.log 2>&1; s opt-dist $?
( export CUDA_VISIBLE_DEVICES=0
  timeout ${VT:-300} python3 -m pytest -v --tb=short -p no:cacheprovider --durations=15 packages/vocab/tests/test_vocab_gpu.py > $R/voc-gpu.log 2>&1; s voc-gpu $? ) &
( export CUDA_VISIBLE_DEVICES=1
  timeout 150 python3 -m pytest -v --tb=short -p no:cacheprovider --durations=10 packages/vocab/tests/test_vocab_sampler_gpu.py > $R/voc-sampler.log 2>&1; s voc-sampler $?
  timeout 30 python3 -m pytest -v --tb=short -p no:cacheprovider packages/attention/tests/test_attention_gpu.py > $R/att-gpu.log 2>&1; s att-gpu $?
  timeout 40 compute-sanitizer --tool racecheck --error-exitcode 9 python3 -m pytest -q -p no:cacheprovider -k sanitizer_subset packages/vocab/tests/test_vocab_sampler_gpu.py packages/attention/tests/test_attention_gpu.py > $R/racecheck.log 2>&1; s racecheck $?
  timeout 90 ncu --set full --clock-control none -k regex:'norm_simple_kernel|norm_kernel|rope_kernel|coarse_kernel|refine_kernel|combine_kernel' python3 ci/device/profile_ops.py > $R/ncu.log 2>&1; s ncu $? ) &
wait
cd $OUT && tar czf r.tgz r && cat r/summary.txt
