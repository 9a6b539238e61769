# Session 55, run 258 (prepared; refused for the budget): MLOPS_SAMPLE_NEAR_FINE=2 (sixteenths where they fit) against
# the (F = 1) default. .carry/s55f: base/ (0007653's default sm90 wheel), f2/ (0007653 with
# CUDAFLAGS=-DMLOPS_SAMPLE_NEAR_FINE=2), stp_base.gz / stp_f2.gz (0007653's probe, -DMLOPS_PROBE_T1024, without / with
# the macro). ci/device/s55e.sh's steps, in 3 rounds (the budget).
NEW=f2 CARRY=.carry/s55f ROUNDS=3 END=260 bash ci/device/s55e.sh
