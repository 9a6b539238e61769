#!/bin/bash
# Session 16, GPU run 90 (one H200, <= 400 s): ncu source-level profiles (warp-stall sampling per SASS instruction)
# of the planned kernels of the open latency targets, on the wheels of 7ecf8ca (.carry/s15c: the planned attention /
# vocab kernels unchanged since): attention refine_mma4_kernel + combine_warps_kernel at B1 L4K / L16K and B8 L16K
# (3+3 exact), the vocab sampler at B = 1 (profile_vocab.py --cases s16: temperature, top-k, top-p, combination).
# ACASES="1_4096 8_16384" picks the attention cases (B_L). Results in $OUT/r.tgz (r/, the .ncu-rep files left out: the
# call returns at most a few files): <name>-details.txt (ncu's details page), <name>-source.csv (SASS with the stall samples).
export PYTHONUNBUFFERED=1
R=/tmp/r; mkdir -p $R
inst() { python3 -m pip install -q --no-index --no-deps --no-compile --target $2 $1; }
inst ".carry/s15c/attn/mlops_attention-*.whl" /tmp/a
inst ".carry/s15c/vocab/mlops_vocab-*.whl" /tmp/v
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv > $R/gpu.txt
prof() {  # prof NAME PYTHONPATH NCU-ARGS... -- PROGRAM ARGS...
  local n=$1 pp=$2; shift 2
  PYTHONPATH=$pp timeout 150 ncu --set full --clock-control none --import-source no -f -o $R/$n "$@" > $R/$n.log 2>&1
  echo "$n rc=$? at ${SECONDS}s" >> $R/phases.txt
  ncu -i $R/$n.ncu-rep --page details --print-units base > $R/$n-details.txt 2>&1
  ncu -i $R/$n.ncu-rep --page source --csv --print-source sass > $R/$n-source.csv 2>&1
}
for c in ${ACASES:-1_4096 1_16384 8_16384}; do set -- ${c/_/ }
  prof attn-b$1-l$2 /tmp/a -k regex:"refine_mma4_kernel|combine_warps_kernel" --launch-skip 1 -c 2 \
    python3 packages/attention/bench/profile_decode.py --B $1 --L $2 --variant planner --exact
done
prof vocab-b1 /tmp/v -k regex:sample_cluster_kernel python3 packages/vocab/bench/profile_vocab.py --cases s16 --no-lm-head
ls -la $R >> $R/phases.txt; cat $R/phases.txt
cd /tmp && tar czf $OUT/r.tgz --exclude="*.ncu-rep" r
