#!/bin/bash
# Session 19, the lead's second device call (one H200, END_S = 540 s of the script). Wheels in .carry/s19b/ (built here,
# nox -s gpu_build, each in a separate worktree of b746ae1):
#   abl-N/   attention with packages/attention/bench/probes/ablate.patch at MLOPS_FBLA_ABLATE = N: phases of the planned
#            refine left out (1 P V, 2 scores, 4 the exp of p, 8 the partial's slice sums, 16 the q digits; 3 and 31
#            their unions). Wrong bits by design: timing only (docs/attention.md "Session 19").
#   norm/    norm sm90 (ln_bench.py: the planned LayerNorm call beside the named ln variants: ln4wp planned since f6afa58)
#   ptx/<tag>/  norm as sm_90 SASS from compute_80 / 70 / 61 PTX (tags c80s / c70s / c61s), for ci/device/s18p.sh
# (A) quiet GPU: bench_attention.py --variants planner of the base wheel (.carry/s19b/base: run 101s attn-base), every abl-N,
#     base again; ln_bench.py;
# (B) s18p.sh's lower-arch tests: K="lean_layer_norm or lean_row_variant or lean_nvfp4_nonfinite or planned_few_rows",
#     5 shards a tag.
# Results: $OUT/r19b.tgz, $OUT/summary.txt. DRY=1: prints what it would run.
export PYTHONUNBUFFERED=1 MLOPS_TEST_CUDA=system
OUT=${OUT:-/tmp}
R=/tmp/r19b
source ci/device/lib.sh
call_setup 540 phases.txt tests.txt
inst ".carry/s19b/base/mlops_attention-*.whl" /tmp/s19b-base
ABL=$(cd .carry/s19b && ls -d abl-* 2>/dev/null | sed 's/abl-//' | sort -n)
[ -n "$DRY" ] && ABL="1 2 3"
for n in $ABL; do inst ".carry/s19b/abl-$n/mlops_attention-*.whl" /tmp/s19b-abl$n; done
inst ".carry/s19b/norm/mlops_norm-*.whl" /tmp/s19b-norm
gpu_info
RESERVE=400 attn_bench /tmp/s19b- base base-1 30 10
for n in $ABL; do RESERVE=380 attn_bench /tmp/s19b- abl$n abl$n 30 10; done
RESERVE=360 attn_bench /tmp/s19b- base base-2 30 10
L=$((END - 330 - SECONDS)); [ $L -gt 45 ] && L=45
if [ $L -gt 12 ]; then
  mkdir -p $R/ln
  MLOPS_BENCH_OUT=$R/ln PYTHONPATH=/tmp/s19b-norm:$PWD/tools/testing timeout $L python3 ci/device/ln_bench.py new > $R/ln.log 2>&1
  echo "ln_bench rc=$? at ${SECONDS}s" >> $R/phases.txt
fi
# (B): the lower archs' LayerNorm / row-variant tests (s18p.sh writes under $OUT/r/p)
L=$((END - 20 - SECONDS)); [ $L -gt 300 ] && L=300
echo "ptx tests start at ${SECONDS}s, limit ${L}s" >> $R/phases.txt
OUT=$R PTX=.carry/s19b/ptx LIMIT_S=$L N=5 K="lean_layer_norm or lean_row_variant or lean_nvfp4_nonfinite or planned_few_rows" \
  bash ci/device/s18p.sh > $R/ptx.log 2>&1
echo "ptx tests rc=$? at ${SECONDS}s" >> $R/phases.txt
[ -n "$DRY" ] && { cat $R/phases.txt; tail -5 $R/ptx.log; exit 0; }
python3 ci/device/bench_rows.py $R > $R/bench.txt
cat $R/phases.txt $R/r/p/tests-sorted.txt $R/r/p/failures.txt $R/bench.txt > $OUT/summary.txt
(cd /tmp && tar czf $OUT/r19b.tgz r19b)
cat $OUT/summary.txt
