"""The test-shard plugin (tools/testing/mlops_shard.py): n shards cover every test exactly once, and
a real pytest run of a sharded file selects the expected tests."""
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tools" / "testing"))
from mlops_shard import shard_slice  # noqa: E402


@pytest.mark.parametrize("count", [0, 1, 5, 12, 97])
@pytest.mark.parametrize("n", [1, 3, 12])
def test_shards_partition_the_items(count, n):
    seen = [k for i in range(n) for k in shard_slice(count, f"{i}/{n}")]
    assert seen == list(range(count))  # contiguous, in order, each once
    sizes = [len(shard_slice(count, f"{i}/{n}")) for i in range(n)]
    assert max(sizes) - min(sizes) <= 1


def test_bad_spec_is_named():
    with pytest.raises(ValueError, match="MLOPS_SHARD"):
        shard_slice(10, "3/3")


def test_pytest_runs_one_shard(tmp_path):
    (tmp_path / "test_many.py").write_text(
        "import pytest\n@pytest.mark.parametrize('k', range(10))\ndef test_k(k):\n    print('ran', k)\n")
    env = dict(os.environ, MLOPS_SHARD="1/3", PYTHONPATH=str(ROOT / "tools" / "testing"))
    p = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "mlops_shard", "-p", "no:cacheprovider",
                        "-s", str(tmp_path / "test_many.py")], capture_output=True, text=True, env=env, cwd=tmp_path)
    assert p.returncode == 0, p.stdout + p.stderr
    ran = sorted(int(k) for k in re.findall(r"ran (\d+)", p.stdout))
    assert ran == [3, 4, 5]  # 10 tests over 3 shards: 0-2, 3-5, 6-9
    assert "3 passed, 7 deselected" in p.stdout


def test_shards_split_the_k_selection(tmp_path):
    """-k deselects first, then the shards split what is left (device run 28 sharded the whole file)."""
    (tmp_path / "test_sel.py").write_text(
        "import pytest\n@pytest.mark.parametrize('k', range(12))\ndef test_a(k):\n    print('ran a', k)\n"
        "@pytest.mark.parametrize('k', range(4))\ndef test_b(k):\n    print('ran b', k)\n")
    got = []
    for i in range(2):
        env = dict(os.environ, MLOPS_SHARD=f"{i}/2", PYTHONPATH=str(ROOT / "tools" / "testing"))
        p = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "mlops_shard", "-p", "no:cacheprovider", "-s",
                            "-k", "test_b", str(tmp_path / "test_sel.py")], capture_output=True, text=True, env=env,
                           cwd=tmp_path)
        assert p.returncode == 0, p.stdout + p.stderr
        got.append(sorted(int(k) for k in re.findall(r"ran b (\d+)", p.stdout)))
        assert "ran a" not in p.stdout
    assert got == [[0, 1], [2, 3]]
