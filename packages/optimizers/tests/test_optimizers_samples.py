"""CPU (CI; GPU where present): the sample training loop runs and learns."""

import pathlib
import runpy

SAMPLE = pathlib.Path(__file__).resolve().parents[1] / "samples" / "train_small.py"


def test_train_small_sample_learns():
    first, final = runpy.run_path(str(SAMPLE))["main"]()
    assert final < 0.2 * first, (first, final)
