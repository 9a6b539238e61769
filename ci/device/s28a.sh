#!/bin/bash
# Session 28's A / B device call (bench only, no tests). One H200, END_S = 400 s. W: the wheels, "name=folder ..." (sm90
# wheels: bench_attention.py --variants planner, interleaved by attn_abn); TL: the wheels whose decode kernels
# ci/device/s15p.py times in situ (torch.profiler: each kernel's duration and the gaps between them, 20 calls after an L2
# flush); NCU: the wheels whose B8 L128K 3+3 exact decode kernels ncu times (--clock-control none); N: the run's name.
# Results: $OUT/$N.tgz, $OUT/summary.txt.
export PYTHONUNBUFFERED=1 MLOPS_TEST_CUDA=system
OUT=${OUT:-/tmp}
R=/tmp/$N
source ci/device/lib.sh
call_setup 400 phases.txt
inst_named /tmp/$N-
gpu_info
attn_timelines /tmp/$N-
attn_abn /tmp/$N- "${names[@]}"
for n in $NCU; do
  # the planner's decode is the script's last: its kernels are the last ones ncu lists
  PYTHONPATH=/tmp/$N-$n timeout 90 ncu --section SpeedOfLight --clock-control none -k regex:"refine|coarse|combine|zero" \
    python3 packages/attention/bench/profile_decode.py --B 8 --L 131072 --variant planner --exact > $R/ncu-kernels-$n.txt 2>&1
  echo "ncu kernels $n rc=$? at ${SECONDS}s" >> $R/phases.txt
done
[ -n "$DRY" ] && { cat $R/phases.txt; exit 0; }
for n in $TL; do cat $R/timeline-$n.txt >> $R/phases.txt; done
for n in $NCU; do grep -E "^  [a-z_]+.*\(|Duration" $R/ncu-kernels-$n.txt | tail -8 | sed "s/^/$n: /" >> $R/phases.txt; done
attn_bench_tail $N
