"""pytest plugin: run one contiguous shard of the collected tests (MLOPS_SHARD="i/n", 0 <= i < n).

Why: under a virtual-arch build (compute_61 / compute_80 PTX) the driver JIT-compiles each kernel
on its first launch, seconds a kernel, in one process at a time; norm's GPU file (200+ kernel
instances) ran 8 % of its tests in 280 s that way (device run 24). n processes on n cores, each
given a contiguous slice (neighbouring tests share kernels: the parametrizations put the variant
outermost), and one JIT cache (CUDA_CACHE_PATH, CUDA_CACHE_MAXSIZE) compile the kernels in
parallel. Every test still runs exactly once over the n shards.

    MLOPS_SHARD=3/12 python -m pytest -p mlops_shard packages/norm/tests/test_norm_gpu.py [-k EXPR]

With -k / -m the shards split the selected tests.
"""
import os

import pytest


def shard_slice(count: int, spec: str) -> range:
    """The indices of shard i of n over count items: contiguous, sizes differing by at most one."""
    i, n = (int(v) for v in spec.split("/"))
    if not 0 <= i < n:
        raise ValueError(f"MLOPS_SHARD={spec!r}: expected i/n with 0 <= i < n")
    return range(count * i // n, count * (i + 1) // n)


# trylast: after -k / -m have deselected (device run 28 sharded first: 3 of 6 shards held no
# selected test and one held most of them)
@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(config, items):
    spec = os.environ.get("MLOPS_SHARD")
    if not spec:
        return
    keep = shard_slice(len(items), spec)
    deselected = [it for k, it in enumerate(items) if k not in keep]
    items[:] = [items[k] for k in keep]
    config.hook.pytest_deselected(items=deselected)
