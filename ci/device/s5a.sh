#!/bin/bash
# Session 5, device run 25 (nvidia-h200), a probe before the kernel round: ncu --set full (with SASS
# source counters) of the positional decode kernels (T=1 / 32, planned, cache and on the fly) beside
# torch mul_ of the same bytes at T=1 / 32 / 4096, and of the norm kernels at 2048x4096 (plain, INT8,
# FP8 dynamic, NVFP4, planned). Wheels: .carry/gpu/sm90 (commit a955706's sources = HEAD's kernels).
export PYTHONUNBUFFERED=1
R=$OUT/r; mkdir -p $R
T=/tmp/m; python3 -m pip install -q --no-index --no-deps --no-compile --target $T .carry/gpu/sm90/mlops_{norm,positional}-*.whl
export PYTHONPATH=$T
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,clocks.sm --format=csv > $R/gpu.txt
timeout 300 ncu --set full --import-source yes --clock-control none --profile-from-start off -f -o $R/probe \
  python3 ci/device/profile_ops.py rope_decode norm2048 > $R/ncu.log 2>&1; echo "ncu rc=$?" >> $R/gpu.txt
ncu -i $R/probe.ncu-rep --page details > $R/details.txt 2>&1
ncu -i $R/probe.ncu-rep --page raw --csv --metrics gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum,smsp__average_warp_latency_issue_stalled_long_scoreboard,sm__warps_active.avg.pct_of_peak_sustained_active > $R/raw.csv 2>&1
ncu -i $R/probe.ncu-rep --page source --csv --print-source sass -k regex:rope > $R/rope_sass.csv 2>&1
ncu -i $R/probe.ncu-rep --page source --csv --print-source sass -k regex:norm > $R/norm_sass.csv 2>&1
rm -f $R/probe.ncu-rep.bak; ls -la $R >> $R/gpu.txt
cd $OUT && tar czf r.tgz r && cat r/gpu.txt && tail -c 2500 r/ncu.log; rm -rf r
