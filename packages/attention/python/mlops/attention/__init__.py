"""mlops.attention: the FBLA compressed KV cache (6-bit codes: K in a coarse and a fine region, both with V in
the tensor-core fragments' order; a BF16 sink and filling group) and its decode attention for NVIDIA GPUs sm_61 ... sm_90 (DP4A).
CPU tensors run the host emulation, which gives the same bits. docs/attention.md describes the
format, the numerics and the error bound of the skip."""

from ._ops import (BLOCK, DEFAULT_GAP, GROUP, MODES, PV_FORMS, CacheFullError, FBLACache, append, decode, decode_at, empty,
                   decode_scratch_views, decode_variants, encode, record_layout, scratch_bytes)
from .reference import dequantize, fake_quantize, reference_decode, unpack_codes

__version__ = "0.1.0"


def struct_layout() -> dict:
    """offsetof / sizeof of the fields of mlops_fbla_cache as compiled (tests check the docs against it)."""
    from ._native import C

    return dict(C.struct_layout())


__all__ = ["FBLACache", "CacheFullError", "empty", "append", "encode", "decode", "decode_at", "dequantize",
           "reference_decode", "fake_quantize", "unpack_codes", "scratch_bytes", "record_layout", "decode_scratch_views",
           "decode_variants", "struct_layout",
           "MODES", "PV_FORMS", "DEFAULT_GAP", "GROUP", "BLOCK"]
