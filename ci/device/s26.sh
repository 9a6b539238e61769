#!/bin/bash
# Session 26's first device call: a timing probe of two fragment-ordered K forms, before building either (the session
# 19 way: packages/attention/bench/probes/fo_probe.patch). Wheels (.carry/, sm90, `nox -s gpu_build -- --tags sm90
# --package attention` in a worktree of 4d7f0b3 with the probe applied): base = 84edc6e's wheel (.carry/s25/new, the
# same attention sources as 4d7f0b3), fo2 = the kEarly / mma_pv4 refine's K scores read as session 18 (f)'s
# two-accumulator FO layout (coarse and fine fields apart), fow = the K scores read as whole 6-bit codes in V's tile
# form (one accumulator). The records are still bit planes, so fo2 / fow give wrong outputs: timing only.
# bench_attention.py --variants planner --lengths 131072,16384 base / fo2 / fow interleaved, three rounds.
# Results: $OUT/r26.tgz, $OUT/summary.txt.
export PYTHONUNBUFFERED=1
OUT=${OUT:-/tmp}
R=/tmp/r26
source ci/device/lib.sh
call_setup 300 phases.txt
inst ".carry/s25/new/mlops_attention-*.whl" /tmp/s26-base
inst ".carry/s26/fo2/mlops_attention-*.whl" /tmp/s26-fo2
inst ".carry/s26/fow/mlops_attention-*.whl" /tmp/s26-fow
gpu_info
for t in base-1 fo2-1 fow-1 fow-2 fo2-2 base-2 base-3 fo2-3 fow-3; do
  attn_bench /tmp/s26- ${t%-*} $t 40 8 --lengths 131072,16384
done
attn_bench_tail r26
