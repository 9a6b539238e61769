"""mlops.norm: RMSNorm and LayerNorm for NVIDIA GPUs sm_50 ... sm_90 (CPU tensors run the
host emulation, which gives the same bits)."""

from ._ops import NormOutput, layer_norm, norm, norm_variants, rms_norm
from .modules import LayerNorm, RMSNorm

__version__ = "0.1.0"
__all__ = ["norm", "rms_norm", "layer_norm", "RMSNorm", "LayerNorm", "norm_variants", "NormOutput"]
