# The row sweep and the row probes of sessions 55 / 56 on the sides given (their wheels installed in /tmp/j-<side> and
# probes at /tmp/stp_<side> by ci/device/s47a.sh): bench_vocab.py --row-seeds 16 (top-p, penalties + top-p, B = 1's
# cluster16_wide), then the timeline probe on the rows of seeds 1001 (a [6, 7) crossing) and 1006 ([7, 8)).
# Results in $OUT/rows/. `bash ci/device/rows_sweep.sh "base nf"`.
mkdir -p $OUT/rows /tmp/rs
for s in $1; do
  PYTHONPATH=/tmp/j-$s MLOPS_BENCH_OUT=$OUT/rows/sweep-$s timeout 150 python3 packages/vocab/bench/bench_vocab.py \
    --only sampling --batches 1 --modes top_p0.9,penalties_top_p0.9 --variants cluster16_wide --row-seeds 16 \
    > $OUT/rows/sweep-$s.log 2>&1
  echo "sweep $s rc=$? [${SECONDS}s]"
done
python3 ci/device/s55_rows.py /tmp/rs 1001 1006
for s in $1; do
  for r in 1001 1006; do
    MLOPS_PROBE_ROWS=/tmp/rs/rows-s$r.f32 timeout 60 /tmp/stp_$s 1 > $OUT/rows/probe-$s-s$r.txt 2>&1
    echo "probe $s s$r rc=$? [${SECONDS}s]"
  done
done
grep -h '"rows"\|rows",' $OUT/rows/sweep-*/vocab-*.jsonl | cut -c1-400
