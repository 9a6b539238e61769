#!/bin/bash
# Builds an A/B carry for ci/device/s47a.sh on this machine: for each side "name[:FLAGS]" one sm_90 vocab wheel of REV
# (default HEAD) with CUDAFLAGS=FLAGS (space-separated -D... joined by commas) in <carry>/<name>/, and its timeline
# probe (bench/sample_timeline_probe.cu, -DMLOPS_PROBE_T1024 and the same flags) gzipped as <carry>/stp_<name>.gz.
# Each build starts from an empty build dir: a reused CMakeCache keeps the CUDAFLAGS of its first configure
# (noxfile.py _build_wheels). About 2.5 min a side on 2 cores. Needs `pip install nox`.
#   bash ci/device/carry_sides.sh .carry/s56a base f2:-DMLOPS_SAMPLE_NEAR_FINE=2 \
#     f2ww:-DMLOPS_SAMPLE_NEAR_FINE=2,-DMLOPS_SAMPLE_WARP_WALK=1
# Session 57: the ignored .carry/s56a of session 56 was gone with the machine's files and was rebuilt from bad381c by
# these steps (then written down here).
set -e
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
CARRY=$(realpath -m "$1"); shift
REV=${REV:-HEAD}
WT=$(mktemp -d /tmp/carry-sides.XXXX)
git -C "$ROOT" worktree add -q --detach "$WT" "$REV"
trap 'git -C "$ROOT" worktree remove --force "$WT"' EXIT
mkdir -p "$CARRY"
cd "$WT"
for side in "$@"; do
  name=${side%%:*}
  flags=""
  [ "$name" != "$side" ] && flags=${side#*:} && flags=${flags//,/ }
  rm -rf build .carry/gpu
  CUDAFLAGS="$flags" python3 -m nox -s gpu_build -- --tags sm90 --package vocab > "$CARRY/build-$name.log" 2>&1
  rm -rf "${CARRY:?}/$name" && mkdir -p "$CARRY/$name" && cp .carry/gpu/sm90/mlops_vocab-*.whl "$CARRY/$name/"
  # shellcheck disable=SC2086  # the flags split into words
  nvcc -O3 -std=c++17 -arch=sm_90 -fmad=false -DMLOPS_PROBE_T1024 $flags -Ipackages/vocab/src \
    -Ipackages/vocab/include -Ipackages/common/include -o "$CARRY/stp_$name" packages/vocab/bench/sample_timeline_probe.cu
  gzip -f "$CARRY/stp_$name"
  echo "$name ($flags): $(ls "$CARRY/$name")"
done
