"""CPU (CI): mlops/rope.cuh compiles under NVRTC (no standard headers there) to PTX for the
archs NVRTC 13 targets, with and without -fmad (the header's arithmetic is explicit IEEE
operations, so contraction cannot change it), and includes nothing. The GPU half
(test_positional_gpu.py) runs this PTX through cupy and compares bits with the host emulation."""

import pytest

from positional_nvrtc import INCLUDE, KERNEL_SOURCE, KERNELS, compile_ptx, find_nvrtc

needs_nvrtc = pytest.mark.skipif(find_nvrtc() is None,
                                 reason="libnvrtc not found: pip install nvidia-cuda-nvrtc==13.0.88 (test pin)")


def test_header_includes_nothing():
    """NVRTC has no <stdint.h> / <math.h> / <cuda_runtime.h>: the header must stand alone."""
    text = (INCLUDE / "mlops" / "rope.cuh").read_text()
    assert "#include" not in text


@needs_nvrtc
@pytest.mark.parametrize("arch", ["compute_75", "compute_80", "compute_90"])
@pytest.mark.parametrize("fmad", ["true", "false"])
def test_rope_cuh_compiles_under_nvrtc(arch, fmad):
    res, log, ptx = compile_ptx(KERNEL_SOURCE, arch, extra=(f"--fmad={fmad}",))
    assert res == 0, log
    text = ptx.decode(errors="replace")
    for k in KERNELS:
        assert f".entry {k}(" in text
    # the double-precision cos/sin and the explicit roundings are in the code, not folded away
    assert "fma.rn.f64" in text and "mul.rn.f32" in text
    # the fp32 rotation is never contracted into an fma, whatever --fmad says
    assert "fma.rn.f32" not in text
    if arch != "compute_75":
        assert "cvt.rn.bf16x2.f32" in text  # the sm_80 conversion path


def test_wheel_ships_the_header():
    """The installed package carries the same rope.cuh, for NVRTC users of a pip install."""
    import pathlib

    import mlops.positional as mp

    shipped = pathlib.Path(mp.include_path()) / "mlops" / "rope.cuh"
    assert shipped.read_text() == (INCLUDE / "mlops" / "rope.cuh").read_text()


@needs_nvrtc
def test_nvrtc_reports_a_broken_program():
    """The harness is not vacuous: a program with an error fails with a log."""
    res, log, _ = compile_ptx(KERNEL_SOURCE + "\nthis is not C++;\n", "compute_90")
    assert res != 0 and "error" in log
