# Session 55, run 254 (planned): the timeline probe (stp_s55.gz: this commit's probe, -DMLOPS_PROBE_T1024, default marks) on its
# own rows and on the bench's (MLOPS_PROBE_ROWS: ci/device/s55_rows.py), with row 0's %globaltimer span; CUPTI events again.
export PYTHONUNBUFFERED=1
C=.carry/s55; R=$OUT; source ci/device/lib.sh
inst "$C/base/mlops_vocab-*.whl" /tmp/j-base
gunzip -c $C/stp_s55.gz > /tmp/stp && chmod +x /tmp/stp
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv > $R/gpu.txt 2>&1
python3 ci/device/s55_rows.py /tmp; echo "rows rc=$?"; ls -la /tmp/rows-*
PYTHONPATH=/tmp/j-base timeout 120 python3 ci/device/s55_events.py > $R/events.txt 2>&1; echo "events rc=$? [${SECONDS}s]"
for k in 1 2; do
  timeout 100 /tmp/stp 1 8 > $R/probe-own-$k.txt 2>&1; echo "own rc=$? [${SECONDS}s]"
  MLOPS_PROBE_ROWS=/tmp/rows-b1.f32 timeout 100 /tmp/stp 1 > $R/probe-bench1-$k.txt 2>&1; echo "b1 rc=$? [${SECONDS}s]"
  MLOPS_PROBE_ROWS=/tmp/rows-b8.f32 timeout 100 /tmp/stp 8 > $R/probe-bench8-$k.txt 2>&1; echo "b8 rc=$? [${SECONDS}s]"
done
