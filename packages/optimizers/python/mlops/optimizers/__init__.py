"""mlops.optimizers: multi-tensor AdamW / Adam, SGD, Lion (one launch for any number of
tensors) and Adafactor, for NVIDIA GPUs sm_50 ... sm_90; CPU tensors run the host emulation,
which gives the kernels' bits."""

from . import _ops  # noqa: F401  (registers the torch.library ops torch.compile traces)
from ._base import MultiTensorOptimizer, dynamic_map
from .adafactor import Adafactor
from .clip import clip_grad_norm_
from .optimizers import SGD, Adam, AdamW, Lion

__version__ = "0.1.0"
__all__ = ["SGD", "Adafactor", "Adam", "AdamW", "Lion", "MultiTensorOptimizer", "clip_grad_norm_", "dynamic_map"]
