# Session 55: a NEAR_FINE build (side NEW, default nf) against the default (base). Run 257: `bash ci/device/s55e.sh`
# (.carry/s55e: base/ = 042a945's default sm90 wheel, nf/ = 042a945 with CUDAFLAGS=-DMLOPS_SAMPLE_NEAR_FINE=1,
# stp_base.gz / stp_nf.gz = 042a945's probe, -DMLOPS_PROBE_T1024, without / with the macro; 4 rounds, END=300).
# Prepared (run 258): `NEW=f2 CARRY=.carry/s55f ROUNDS=3 END=260 bash ci/device/s55e.sh` (ci/device/s55f.sh).
# 1. ci/device/s47a.sh: the probes on their own rows, the bench's planned call (B = 1, 8, 64) in ROUNDS alternating
# rounds, ab-$NEW.txt, the sampler GPU file whole on NEW (6 shards) and the sanitizers on the wide / tp3 subset;
# 2. and 3. ci/device/rows_sweep.sh on both sides: bench_vocab.py --row-seeds 16 and the probes on the rows of seeds
# 1001 / 1006. Everything in $OUT/v.tgz and $OUT/rows/.
export PYTHONUNBUFFERED=1
NEW=${NEW:-nf}
CARRY=${CARRY:-.carry/s55e} SIDES="base $NEW" PROBES="base $NEW" TEST_SIDE=$NEW ROUNDS=${ROUNDS:-4} END=${END:-300} \
  SAN_K="test_cluster_sanitizer_subset and (wide or tp3) and not tp3g" bash ci/device/s47a.sh
bash ci/device/rows_sweep.sh "base $NEW"
