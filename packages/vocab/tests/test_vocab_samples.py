"""CPU: the Python sample runs (on the host emulation here) and prints four steps of four tokens."""

import pathlib
import subprocess
import sys

SAMPLE = pathlib.Path(__file__).resolve().parents[1] / "samples" / "python" / "decode_step.py"


def test_decode_step_sample_runs():
    r = subprocess.run([sys.executable, str(SAMPLE)], capture_output=True, text=True, timeout=300,
                       env={"CUDA_VISIBLE_DEVICES": "", "PATH": "/usr/bin:/bin"})
    assert r.returncode == 0, r.stderr
    lines = [ln for ln in r.stdout.splitlines() if ln.startswith("step ")]
    assert len(lines) == 4 and all("flags [0, 0, 0, 0]" in ln and "oov 0" in ln for ln in lines), r.stdout
