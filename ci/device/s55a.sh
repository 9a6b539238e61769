# Session 55, run 253: what a B = 1 Sampler call's CUPTI time holds that the timeline probe's marks do not. .carry/s55: base/ (the default
# sm90 wheel, as .carry/s54b/base) and stp_base.gz (its probe, DRAW_MARKS). CUPTI events of one graphed call a mode (B = 1, 8),
# ncu (--clock-control none) of those calls and of the probe's launches.
export PYTHONUNBUFFERED=1
C=.carry/s55; R=$OUT; source ci/device/lib.sh
inst "$C/base/mlops_vocab-*.whl" /tmp/j-base
gunzip -c $C/stp_base.gz > /tmp/stp_base && chmod +x /tmp/stp_base
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv > $R/gpu.txt 2>&1
PYTHONPATH=/tmp/j-base timeout 120 python3 ci/device/s55_events.py > $R/events.txt 2>&1; echo "events rc=$? [${SECONDS}s]"
M=gpu__time_duration.sum,launch__grid_size,launch__cluster_dim_x,launch__shared_mem_per_block_dynamic,launch__shared_mem_per_block_static,launch__registers_per_thread,launch__block_size,sm__cycles_elapsed.max,smsp__cycles_active.avg
N=3 PYTHONPATH=/tmp/j-base timeout 200 ncu --clock-control none --metrics $M --csv python3 ci/device/s55_events.py > $R/ncu-events.csv 2>&1; echo "ncu events rc=$? [${SECONDS}s]"
timeout 200 ncu --clock-control none --metrics $M --csv --launch-skip 0 --launch-count 400 /tmp/stp_base 1 > $R/ncu-probe.csv 2>&1; echo "ncu probe rc=$? [${SECONDS}s]"
/tmp/stp_base 1 > $R/probe.txt 2>&1; echo "probe rc=$? [${SECONDS}s]"
