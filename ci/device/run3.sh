#!/bin/bash
# Device run 8: the virtual-arch builds (PTX JIT on the H200): GPU test files of each package in each.
export PYTHONUNBUFFERED=1 MLOPS_TEST_CUDA=system
for tag in c61 c75 c80 c70; do
  T=/tmp/mlops-$tag
  python3 -m pip install -q --no-index --no-deps --no-compile --target $T .carry/run3/$tag/*.whl
  cp packages/vocab/python/mlops/vocab/*.py $T/mlops/vocab/
  for pkg in vocab optimizers norm positional; do
    [ -d $T/mlops/$pkg ] || continue
    PYTHONPATH=$T:$PWD/tools/testing MLOPS_ARCH_TAG=$tag timeout 65 python3 -m pytest -v --tb=short -p no:cacheprovider packages/$pkg/tests/test_${pkg}_gpu*.py > $OUT/pytest-$tag-$pkg.log 2>&1
    echo "$tag $pkg rc=$? $(tail -1 $OUT/pytest-$tag-$pkg.log)" >> $OUT/summary.txt
  done
done
cat $OUT/summary.txt
