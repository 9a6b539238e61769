#!/bin/bash
# Session 4, device run 19 (nvidia-h200): ncu --set full of the kernels behind every missed target
# (ci/device/profile_ops.py), with the wheels of run 18 (.carry/gpu/sm90, built at 30a8f12 + a42658e),
# clocks not locked (--clock-control none) so the durations are the ones the benches see.
export PYTHONUNBUFFERED=1
R=$OUT/r; mkdir -p $R
T=/tmp/m; export PYTHONPATH=$T:$PWD/tools/testing
python3 -m pip install -q --no-index --no-deps --no-compile --upgrade --target $T .carry/gpu/sm90/*.whl
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,clocks.max.mem --format=csv > $R/gpu.txt
timeout 420 ncu --set full --clock-control none --profile-from-start off --import-source no \
  -o $R/s4 python3 ci/device/profile_ops.py norm int8 rope attention sample lm_head > $R/ncu.log 2>&1
echo "ncu rc=$?" >> $R/gpu.txt
ncu -i $R/s4.ncu-rep --page details --print-units base > $R/details.txt 2>&1
ncu -i $R/s4.ncu-rep --page raw --csv --metrics gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum,dram__throughput.avg.pct_of_peak_sustained_elapsed,sm__throughput.avg.pct_of_peak_sustained_elapsed,launch__grid_size,launch__block_size,launch__registers_per_thread,smsp__warps_active.avg.pct_of_peak_sustained_active > $R/summary.csv 2>&1
cd $OUT && tar czf r.tgz r && tail -5 r/ncu.log && cat r/gpu.txt && wc -l r/details.txt r/summary.csv
