# Shared by the session-7 device scripts (ci/device/s7*.sh), sourced after R (the results folder) is set.
# inst WHEEL_GLOB TARGET: one package into its own --target (a second install into the same target skips mlops/).
inst() { python3 -m pip install -q --no-index --no-deps --no-compile --target $2 $1; }
# shards TAG PKG TARGET N LIMIT [pytest args...]: the package's GPU test file in N contiguous shards at once
# (tools/testing/mlops_shard.py), one JIT cache a tag, a summary line a shard in $R/tests.txt.
shards() {
  for ((i = 0; i < $4; i++)); do
    ( PYTHONPATH=$3:$PWD/tools/testing MLOPS_ARCH_TAG=$1 MLOPS_SHARD=$i/$4 CUDA_CACHE_PATH=/tmp/jit-$1 timeout $5 \
        python3 -m pytest -q --tb=short -p no:cacheprovider -p mlops_shard packages/$2/tests/test_$2_gpu.py "${@:6}" \
        > $R/$1-$2-$i.log 2>&1
      echo "$1 $2 shard $i rc=$? $(grep -E 'passed|failed|error' $R/$1-$2-$i.log | tail -1 | cut -c1-120)" >> $R/tests.txt ) &
  done
}
