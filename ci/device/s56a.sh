# Session 56: NEAR_FINE=2 (f2, session 55's prepared side), then WARP_WALK with it (f2ww), then PUSH_X=15 with both (all),
# against the default (base): each side one macro more than the one before it.
# .carry/s56a (rebuilt in session 57 from bad381c, every side from that one tree: session 56's ignored carry was lost):
#   bash ci/device/carry_sides.sh .carry/s56a base f2:-DMLOPS_SAMPLE_NEAR_FINE=2 \
#     f2ww:-DMLOPS_SAMPLE_NEAR_FINE=2,-DMLOPS_SAMPLE_WARP_WALK=1 \
#     all:-DMLOPS_SAMPLE_NEAR_FINE=2,-DMLOPS_SAMPLE_WARP_WALK=1,-DMLOPS_SAMPLE_PUSH_X=15
# (base = the default; bad381c's default kernels are 0007653's but for cluster8_tp3 / cluster16_tp3's two swapped
# instructions, docs/vocab.md "Session 56"); stp_<side>.gz their timeline probes (-DMLOPS_PROBE_T1024). ~11 min.
# 1. ci/device/s47a.sh: the probes on their own rows, the bench's planned call (B = 1, 8, 64) in ROUNDS alternating
# rounds, ab-<side>.txt against base, the sampler GPU file whole on all (6 shards) and the sanitizers on the lean / wide /
# tk / tp3 / tp3g subset (PUSH_X changes every draw_locate); 2. ci/device/rows_sweep.sh on the SWEEP sides (base,
# all): the 16-row sweep and the probes on seeds 1001 / 1006. Everything in $OUT/v.tgz and $OUT/rows/.
export PYTHONUNBUFFERED=1
SIDES=${SIDES:-base f2 f2ww all}
CARRY=${CARRY:-.carry/s56a} SIDES="$SIDES" PROBES="$SIDES" TEST_SIDE=${TEST_SIDE:-all} ROUNDS=${ROUNDS:-3} \
  END=${END:-360} SAN_K=${SAN_K:-"test_cluster_sanitizer_subset and (lean or wide or tk or tp3)"} bash ci/device/s47a.sh
SWEEP=${SWEEP:-base all}  # the row sweep and the row probes on these sides (the budget)
bash ci/device/rows_sweep.sh "$SWEEP"
