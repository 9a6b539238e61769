#!/bin/bash
# Issue 3's open measurements (written in session 5, not run: its device time ran out; one H200, ~2 min): ci/device/rope_probe.py alone on
# the machine (run 28 timed decx5 beside two test suites: host-bound events). Wheel: the positional
# sm90 build of commit eb5b807 (rotate_item refactor: the dec / early SASS byte-identical to run 28's).
export PYTHONUNBUFFERED=1 MLOPS_BENCH_OUT=$OUT
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/m .carry/gpu/sm90/mlops_positional-*.whl
PYTHONPATH=/tmp/m:$PWD/tools/testing timeout 100 python3 ci/device/rope_probe.py --tokens 1,32,4096 --variants decx5,dec  # run 29 ran rope_t4096_probe.py of 14cba7d (since renamed and made general; its T = 4096 rows also had stage4 on the fly)
