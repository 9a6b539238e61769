# Session 55: a NEAR_FINE build (side NEW, default nf) against the default (base). Run 257: `bash ci/device/s55e.sh`
# (.carry/s55e: base/ = 042a945's default sm90 wheel, nf/ = 042a945 with CUDAFLAGS=-DMLOPS_SAMPLE_NEAR_FINE=1,
# stp_base.gz / stp_nf.gz = 042a945's probe, -DMLOPS_PROBE_T1024, without / with the macro; 4 rounds, END=300).
# Prepared (run 258): `NEW=f2 CARRY=.carry/s55f ROUNDS=3 END=260 bash ci/device/s55e.sh` (ci/device/s55f.sh).
# 1. ci/device/s47a.sh: the probes on their own rows, the bench's planned call (B = 1, 8, 64) in ROUNDS alternating
# rounds, ab-$NEW.txt, the sampler GPU file whole on NEW (6 shards) and the sanitizers on the wide / tp3 subset;
# 2. bench_vocab.py --row-seeds 16 (top-p, penalties + top-p) on each side; 3. the probes on the rows of seeds 1001
# (a [6, 7) crossing) and 1006 ([7, 8)). Everything in $OUT/v.tgz and $OUT/rows/.
export PYTHONUNBUFFERED=1
NEW=${NEW:-nf}
CARRY=${CARRY:-.carry/s55e} SIDES="base $NEW" PROBES="base $NEW" TEST_SIDE=$NEW ROUNDS=${ROUNDS:-4} END=${END:-300} \
  SAN_K="test_cluster_sanitizer_subset and (wide or tp3) and not tp3g" bash ci/device/s47a.sh
mkdir -p $OUT/rows /tmp/rs
for s in base $NEW; do
  PYTHONPATH=/tmp/j-$s MLOPS_BENCH_OUT=$OUT/rows/sweep-$s timeout 150 python3 packages/vocab/bench/bench_vocab.py \
    --only sampling --batches 1 --modes top_p0.9,penalties_top_p0.9 --variants cluster16_wide --row-seeds 16 \
    > $OUT/rows/sweep-$s.log 2>&1
  echo "sweep $s rc=$? [${SECONDS}s]"
done
python3 ci/device/s55_rows.py /tmp/rs 1001 1006
for s in base $NEW; do
  for r in 1001 1006; do
    MLOPS_PROBE_ROWS=/tmp/rs/rows-s$r.f32 timeout 60 /tmp/stp_$s 1 > $OUT/rows/probe-$s-s$r.txt 2>&1
    echo "probe $s s$r rc=$? [${SECONDS}s]"
  done
done
grep -h '"rows"\|rows",' $OUT/rows/sweep-*/vocab-*.jsonl | cut -c1-400
