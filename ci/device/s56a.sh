# Session 56: NEAR_FINE=2 (f2, session 55's prepared side) and WARP_WALK (ww) against the default (base), and both (f2ww).
# .carry/s56a: base/ and f2/ (session 55's .carry/s55f: 0007653's default sm90 wheel, and it with
# CUDAFLAGS=-DMLOPS_SAMPLE_NEAR_FINE=2; 0007653's kernels are 6082368's default), ww/ (6082368 with
# -DMLOPS_SAMPLE_WARP_WALK=1), f2ww/ (6082368 with both macros), stp_<side>.gz their timeline probes (-DMLOPS_PROBE_T1024).
# 1. ci/device/s47a.sh: the probes on their own rows, the bench's planned call (B = 1, 8, 64) in ROUNDS alternating
# rounds, ab-<side>.txt against base, the sampler GPU file whole on f2ww (6 shards) and the sanitizers on the wide / tp3
# subset; 2. bench_vocab.py --row-seeds 16 (top-p, penalties + top-p) on each side; 3. the probes on the rows of seeds
# 1001 (a [6, 7) crossing) and 1006 ([7, 8)). Everything in $OUT/v.tgz and $OUT/rows/.
export PYTHONUNBUFFERED=1
SIDES=${SIDES:-base f2 ww f2ww}
CARRY=${CARRY:-.carry/s56a} SIDES="$SIDES" PROBES="$SIDES" TEST_SIDE=${TEST_SIDE:-f2ww} ROUNDS=${ROUNDS:-3} \
  END=${END:-330} SAN_K="test_cluster_sanitizer_subset and (wide or tp3) and not tp3g" bash ci/device/s47a.sh
mkdir -p $OUT/rows /tmp/rs
for s in $SIDES; do
  PYTHONPATH=/tmp/j-$s MLOPS_BENCH_OUT=$OUT/rows/sweep-$s timeout 150 python3 packages/vocab/bench/bench_vocab.py \
    --only sampling --batches 1 --modes top_p0.9,penalties_top_p0.9 --variants cluster16_wide --row-seeds 16 \
    > $OUT/rows/sweep-$s.log 2>&1
  echo "sweep $s rc=$? [${SECONDS}s]"
done
python3 ci/device/s55_rows.py /tmp/rs 1001 1006
for s in $SIDES; do
  for r in 1001 1006; do
    MLOPS_PROBE_ROWS=/tmp/rs/rows-s$r.f32 timeout 60 /tmp/stp_$s 1 > $OUT/rows/probe-$s-s$r.txt 2>&1
    echo "probe $s s$r rc=$? [${SECONDS}s]"
  done
done
grep -h '"rows"\|rows",' $OUT/rows/sweep-*/vocab-*.jsonl | cut -c1-400
