# Session 55, run 255 (planned): the B = 1 call's time over 16 seeded rows (ci/device/s55_rowsweep.py: the bench's way,
# seeds 1001 .. 1016; seed 1001 is bench_vocab.py's row) and the timeline probe (stp_s55.gz) on each row, B = 1.
# .carry/s55: base/ (the default wheel) and stp_s55.gz. Raw rows of seeds 1001 .. 1004 come back for the host runner.
export PYTHONUNBUFFERED=1
C=.carry/s55; R=$OUT; source ci/device/lib.sh
inst "$C/base/mlops_vocab-*.whl" /tmp/j-base
gunzip -c $C/stp_s55.gz > /tmp/stp && chmod +x /tmp/stp
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv > $R/gpu.txt 2>&1
mkdir -p /tmp/rs
PYTHONPATH=/tmp/j-base timeout 300 python3 ci/device/s55_rowsweep.py /tmp/rs 16 > $R/rowsweep.txt 2>&1
echo "rowsweep rc=$? [${SECONDS}s]"
for f in /tmp/rs/rows-s*.f32; do
  s=$(basename $f .f32); MLOPS_PROBE_ROWS=$f timeout 60 /tmp/stp 1 > $R/probe-$s.txt 2>&1; echo "$s rc=$? [${SECONDS}s]"
done
mkdir -p $R/rows; cp /tmp/rs/rows-s100[1-4].f32 $R/rows/
