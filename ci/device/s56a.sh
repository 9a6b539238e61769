# Session 56: NEAR_FINE=2 (f2, session 55's prepared side), then WARP_WALK with it (f2ww), then PUSH_X=15 with both (all),
# against the default (base): each side one macro more than the one before it.
# .carry/s56a: base/ and f2/ (session 55's .carry/s55f: 0007653's default sm90 wheel, and it with
# CUDAFLAGS=-DMLOPS_SAMPLE_NEAR_FINE=2; 0007653's kernels are 6082368's default), ww/ (6082368 with
# -DMLOPS_SAMPLE_WARP_WALK=1; built, not carried), f2ww/ (6082368 with both macros), all/ (460c89f with
# -DMLOPS_SAMPLE_WARP_WALK=1 -DMLOPS_SAMPLE_NEAR_FINE=2 -DMLOPS_SAMPLE_PUSH_X=15), stp_<side>.gz their timeline probes
# (-DMLOPS_PROBE_T1024).
# 1. ci/device/s47a.sh: the probes on their own rows, the bench's planned call (B = 1, 8, 64) in ROUNDS alternating
# rounds, ab-<side>.txt against base, the sampler GPU file whole on all (6 shards) and the sanitizers on the lean / wide /
# tk / tp3 / tp3g subset (PUSH_X changes every draw_locate); 2. bench_vocab.py --row-seeds 16 (top-p, penalties + top-p) on the SWEEP sides (base, all); 3. the probes on the rows of seeds
# 1001 (a [6, 7) crossing) and 1006 ([7, 8)). Everything in $OUT/v.tgz and $OUT/rows/.
export PYTHONUNBUFFERED=1
SIDES=${SIDES:-base f2 f2ww all}
CARRY=${CARRY:-.carry/s56a} SIDES="$SIDES" PROBES="$SIDES" TEST_SIDE=${TEST_SIDE:-all} ROUNDS=${ROUNDS:-3} \
  END=${END:-360} SAN_K=${SAN_K:-"test_cluster_sanitizer_subset and (lean or wide or tk or tp3)"} bash ci/device/s47a.sh
mkdir -p $OUT/rows /tmp/rs
SWEEP=${SWEEP:-base all}  # the row sweep and the row probes on these sides (the budget)
for s in $SWEEP; do
  PYTHONPATH=/tmp/j-$s MLOPS_BENCH_OUT=$OUT/rows/sweep-$s timeout 150 python3 packages/vocab/bench/bench_vocab.py \
    --only sampling --batches 1 --modes top_p0.9,penalties_top_p0.9 --variants cluster16_wide --row-seeds 16 \
    > $OUT/rows/sweep-$s.log 2>&1
  echo "sweep $s rc=$? [${SECONDS}s]"
done
python3 ci/device/s55_rows.py /tmp/rs 1001 1006
for s in $SWEEP; do
  for r in 1001 1006; do
    MLOPS_PROBE_ROWS=/tmp/rs/rows-s$r.f32 timeout 60 /tmp/stp_$s 1 > $OUT/rows/probe-$s-s$r.txt 2>&1
    echo "probe $s s$r rc=$? [${SECONDS}s]"
  done
done
grep -h '"rows"\|rows",' $OUT/rows/sweep-*/vocab-*.jsonl | cut -c1-400
