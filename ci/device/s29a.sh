#!/bin/bash
# Session 29's device call: s28b.sh's benches / timelines / tests for wheels that differ only in the environment:
# a name cN[pM] runs its wheel with MLOPS_FBLA_STAGED_C=N and MLOPS_FBLA_STAGED_PF=M (the experiment builds' choice of
# staged combine, 0 = the warps combine as before; M its L2 prefetch distance in tiles). W, TL (timelines), NCU (ncu --set full of the B8 L128K planner decode's last combine), NCU_REF (its refine's), T (the
# name whose wheel runs test_attention_gpu.py + the sanitizers; unset: none), T_C75S (a c75s wheel's folder: its subset
# of the GPU tests), NCU_INSITU (names: the staged combine's counters with the refine's L2), E_<name> (more environment
# for that name's runs), N. Results: $OUT/$N.tgz, $OUT/summary.txt.
export PYTHONUNBUFFERED=1 MLOPS_TEST_CUDA=system
OUT=${OUT:-/tmp}
R=/tmp/$N
source ci/device/lib.sh
call_setup ${END_S:-520} phases.txt tests.txt
inst_named /tmp/$N-
[ -n "$T_C75S" ] && inst "$T_C75S/mlops_attention-*.whl" /tmp/$N-c75s
gpu_info
staged_c() { local x=${1#c}; case $1 in c[0-9]*) echo ${x%%p*};; *) echo 128;; esac; }
staged_pf() { case $1 in *p[0-9]*) echo ${1##*p};; *) echo 0;; esac; }
# envs NAME: the environment of NAME's runs: the two above, then whatever E_NAME holds ("VAR=value ...")
envs() { local v=E_$1; echo "MLOPS_FBLA_STAGED_C=$(staged_c $1) MLOPS_FBLA_STAGED_PF=$(staged_pf $1) ${!v}"; }
for n in $TL; do
  env $(envs $n) PYTHONPATH=/tmp/$N-$n timeout 100 python3 ci/device/s15p.py $R/timeline-$n.jsonl \
    attention > $R/timeline-$n.txt 2>&1
  echo "timeline $n rc=$? at ${SECONDS}s" >> $R/phases.txt
done
eval "orig_$(declare -f attn_bench)"
# BENCH_ARGS (e.g. "--lengths 32768,65536 --batches 1,8"): every bench's arguments instead of attn_abn's (--quick)
attn_bench() {
  unset MLOPS_FBLA_EXP_PDL MLOPS_FBLA_EXP_MINP; export $(envs $2)
  if [ -n "$BENCH_ARGS" ]; then orig_attn_bench "${@:1:5}" $BENCH_ARGS; else orig_attn_bench "$@"; fi
}
attn_abn /tmp/$N- "${names[@]}"
for n in $NCU; do
  unset MLOPS_FBLA_EXP_PDL MLOPS_FBLA_EXP_MINP; export $(envs $n)
  k=combine_warps; [ "$MLOPS_FBLA_STAGED_C" = 0 ] || k=combine_staged
  # the planner's decode is profile_decode.py's last: its combine is the last one of that name
  ncu_prof ncu-$n /tmp/$N-$n -k regex:$k --launch-skip $([ $k = combine_warps ] && echo 1 || echo 0) -c 1 \
    python3 packages/attention/bench/profile_decode.py --B 8 --L 131072 --variant planner --exact
done
# NCU_REF (session 31): names whose B8 L128K planner decode's kEarly refine ncu profiles (--set full, its source page for
# ci/device/ncu_lines.py against a local -lineinfo compile of the same sources)
for n in $NCU_REF; do
  unset MLOPS_FBLA_EXP_PDL MLOPS_FBLA_EXP_MINP; export $(envs $n)
  ncu_prof ncu-ref-$n /tmp/$N-$n -k regex:refine_mma4_kernel -c 1 \
    python3 packages/attention/bench/profile_decode.py --B 8 --L 131072 --variant planner --exact
  grep -E "^    (Duration|DRAM Throughput|Issue Slots Busy|Executed Ipc Active|Registers Per)" $R/ncu-ref-$n-details.txt \
    | sed "s/^/ncu-ref $n: /" >> $R/phases.txt
  rm -f $R/ncu-ref-$n.ncu-rep  # (the details and source pages are kept)
done
# NCU_INSITU: the planner's B8 L128K combine (staged) with the L2 as the refine left it (--cache-control none), a few
# counters (their first pass sees the real L2)
for n in $NCU_INSITU; do
  env $(envs $n) PYTHONPATH=/tmp/$N-$n timeout 90 ncu --cache-control none --clock-control none -k regex:combine_staged \
    -c 1 --metrics gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum,lts__t_sector_hit_rate.pct \
    python3 packages/attention/bench/profile_decode.py --B 8 --L 131072 --variant planner --exact > $R/ncu-insitu-$n.txt 2>&1
  echo "ncu insitu $n rc=$? at ${SECONDS}s" >> $R/phases.txt
  grep -E "passes|gpu__time|dram__bytes|lts__t_sector" $R/ncu-insitu-$n.txt | sed "s/^/insitu $n: /" >> $R/phases.txt
done
unset MLOPS_FBLA_STAGED_C MLOPS_FBLA_STAGED_PF MLOPS_FBLA_EXP_PDL MLOPS_FBLA_EXP_MINP
[ -n "$DRY" ] || for n in $TL; do grep -A4 "B8 L128K\|B1 L16K\|B1 L128K" $R/timeline-$n.txt | sed "s/^/$n: /" >> $R/phases.txt; done
[ -n "$DRY" ] || for n in $NCU; do grep -E "^    (Duration|DRAM Throughput|Memory Throughput|Registers Per|Achieved Occ|Theoretical Occ|L2 Hit|Mem Busy|Max Bandwidth|Dynamic Shared)" $R/ncu-$n-details.txt | sed "s/^/ncu $n: /" >> $R/phases.txt; done
[ -n "$T_C75S" ] && attn_c75s /tmp/$N-c75s
if [ -n "$T" ]; then
  MLOPS_FBLA_STAGED_C=$(staged_c $T) attn_tests_tail /tmp/$N-$T $N
else
  attn_bench_tail $N
fi
