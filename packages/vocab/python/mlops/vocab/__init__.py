"""mlops.vocab: embedding rows, the BF16 LM head for 1 .. 8 tokens and token sampling without sorting,
for NVIDIA GPUs sm_50 ... sm_90 (CPU tensors run the host emulation, which gives the same bits)."""

from ._embed import EmbedOutput, embed, embed_variants
from ._lm_head import LmHeadOutput, decode_best, lm_head, lm_head_variant_runs, lm_head_variants
from ._sampler import (SampleOutput, Sampler, pack_configs, row_weights, sample_variant_runs, sample_variant_runs_as,
                       sample_variants)

__version__ = "0.1.0"
__all__ = ["embed", "lm_head", "Sampler", "embed_variants", "lm_head_variants", "sample_variants", "EmbedOutput",
           "LmHeadOutput", "SampleOutput", "decode_best", "lm_head_variant_runs", "pack_configs", "row_weights",
           "sample_variant_runs", "sample_variant_runs_as"]
