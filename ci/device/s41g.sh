#!/bin/bash
# Prepared in session 40 for the next device call. Run once, cut short: GPU run 206 (session 40, an H100, `END=200`, the
# budget's last 188 s): the bench A/B came back in its logs (docs/vocab.md "Session 40"), the probes and tests did not. list_near's K loads a lane a round on the global-slice
# forms (MLOPS_SAMPLE_GSL_LIST_LOADS, sample_cluster_wide_top_p.cuh), and the H200 figures of session 40's default build
# (runs 203 - 205 were on an H100). Carry .carry/s41g, built here from 6405a57 in a fresh worktree: before/ (the default
# build: K = 1) and new/ (CUDAFLAGS=-DMLOPS_SAMPLE_GSL_LIST_LOADS=4), sm90 vocab wheels of `python3 -m nox -s gpu_build
# -- --tags sm90 --package vocab` (a fresh build dir each), and the timeline probes stp_before / stp_new (nvcc [-D...]
# -O3 -std=c++17 -arch=sm_90 -fmad=false -I... bench/sample_timeline_probe.cu).
# 1. the probes before / new in turn, 3 rounds, at B = 64 and 32; 2. ncu of new's top-p cluster2_tp3g launch (B = 64,
# launch 110; --kernel-name-base mangled); 3. the sampling bench before / new / before / new (B = 1, 8, 31, 32, 40, 48,
# 64, 66; the five modes; the planned call and cluster2_tp3g / cluster8_tp3 named: B = 31 - 39 is the planner's open
# question, docs/vocab.md "Session 40"); 4. test_vocab_sampler_gpu.py whole on new (6 shards) and the tp3g sanitizer
# subset, to END s (580 unless set). If new wins and its tests pass: MLOPS_SAMPLE_GSL_LIST_LOADS's default to 4.
# Results in $OUT/v.tgz. `DRY=1 OUT=/tmp/x bash ci/device/s41g.sh` runs the shell logic with the GPU commands echoed.
# Since session 41 the steps live in ci/device/s41h.sh (the same probes, ncu, bench and tests, taking the carry and the
# batches from the environment; its ncu runs both sides): this call is that script on .carry/s41g.
CARRY=${CARRY:-.carry/s41g} PROBE_B=${PROBE_B:-"64 32"} BATCHES=${BATCHES:-1,8,31,32,40,48,64,66} END=${END:-580} \
  exec bash ci/device/s41h.sh
