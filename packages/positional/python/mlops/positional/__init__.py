"""mlops.positional: rotary position embeddings for NVIDIA GPUs sm_50 ... sm_90 (CPU tensors run
the host emulation, which gives the same bits). The device header mlops/rope.cuh is installed
with the C archive for kernels that fuse RoPE (and NVRTC programs)."""

from ._ops import apply_rope, build_cos_sin_cache, rope_variants
from .frequencies import ROPE_TYPES, RopeConfig, rope_config, rope_parameters
from .modules import RotaryEmbedding, cos_sin_cache_from_config

__version__ = "0.1.0"


def include_path() -> str:
    """The folder holding mlops/rope.cuh (shipped in the wheel), for NVRTC / cupy:
    options=("-I" + mlops.positional.include_path(),) and #include "mlops/rope.cuh"."""
    import os

    return os.path.join(os.path.dirname(__file__), "include")

__all__ = ["apply_rope", "build_cos_sin_cache", "cos_sin_cache_from_config", "RotaryEmbedding", "rope_parameters",
           "rope_config", "RopeConfig", "ROPE_TYPES", "include_path", "rope_variants"]
