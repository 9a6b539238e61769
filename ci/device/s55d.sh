# Session 55, run 256 (planned): bench_vocab.py's row sweep (--row-seeds 16: B = 1's planned call on the rows of seeds
# 1001 .. 1016, bench_row_sweep) for four modes, with the default wheel (.carry/s55/base), results in $OUT/bench/.
export PYTHONUNBUFFERED=1
C=.carry/s55; R=$OUT; source ci/device/lib.sh
inst "$C/base/mlops_vocab-*.whl" /tmp/j-base
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv > $R/gpu.txt 2>&1
PYTHONPATH=/tmp/j-base MLOPS_BENCH_OUT=$R/bench timeout 400 python3 packages/vocab/bench/bench_vocab.py --only sampling \
  --batches 1 --modes top_p0.9,penalties_top_p0.9,top_k50_top_p0.9_min_p0.05,temperature --variants cluster16_wide \
  --row-seeds 16 > $R/bench.log 2>&1
echo "bench rc=$? [${SECONDS}s]"
