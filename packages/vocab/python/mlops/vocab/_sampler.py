"""mlops.vocab.Sampler: one token a row without sorting the vocabulary; probability mass counted
in fixed point, so a token depends on (logits, configuration, seed, step) alone. Seeds and steps
live on the device and the step advances there (CUDA-graph friendly)."""

from __future__ import annotations

import math
import struct
from typing import NamedTuple, Optional, Sequence, Union

import torch

from ._common import canonical_device, check_tensor, fail, on_device, ptr, resolve_variant, stream_of
from ._native import C

_VARIANTS = C.sample_variants()
_FIELDS = ("temperature", "top_k", "top_p", "min_p", "repetition_penalty", "presence_penalty", "frequency_penalty")
_DEFAULTS = {"temperature": 1.0, "top_k": 0, "top_p": 1.0, "min_p": 0.0, "repetition_penalty": 1.0,
             "presence_penalty": 0.0, "frequency_penalty": 0.0}
_LAYOUT = "<fiffffff"  # struct mlops_sample_config: 7 fields + reserved, 32 bytes


class SampleOutput(NamedTuple):
    """tokens int32 [B]; logprobs fp32 [B] (log of the chosen token's probability under the distribution
    sampled from; greedy rows: the temperature-1 softmax) or None; flags int32 [B] (1 NaN, 2 +inf,
    4 no logit above -inf: such rows fall back to greedy over their non-NaN logits)."""

    tokens: torch.Tensor
    logprobs: Optional[torch.Tensor]
    flags: torch.Tensor


def sample_variants() -> list[dict]:
    """The sampler instances as data: index, name, threads, split, cluster (CTAs a row in one
    thread-block cluster, sm_90; 0: none). All give the same token."""
    return [dict(v) for v in _VARIANTS]


def sample_variant_runs(variant) -> bool:
    """Whether a variant (name or index) runs as itself on the current CUDA device with this build;
    a cluster variant that cannot (below sm_90, or a build without sm_90 code) runs t1024 instead."""
    return bool(C.sample_variant_runs(resolve_variant("variant", variant, _VARIANTS)))


def sample_variant_runs_as(variant, rows: int, vocab: int) -> str:
    """The name of the variant a call naming `variant` runs for [rows, vocab] logits on the current CUDA
    device: itself, or its fallback (t1024 where a cluster cannot run, cluster8 where clusters of 16
    do not schedule, the unstaged cluster variant where a staged one's slice does not fit)."""
    return _VARIANTS[C.sample_variant_runs_as(resolve_variant("variant", variant, _VARIANTS), rows, vocab)]["name"]


def _check_config(row: int, c: dict):
    t, k, p, mp, rp = c["temperature"], c["top_k"], c["top_p"], c["min_p"], c["repetition_penalty"]
    where = f" (row {row})"
    if not (isinstance(t, (int, float)) and t >= 0 and math.isfinite(t)):
        fail("temperature", f"expected a finite value >= 0 (0: greedy), got {t!r}{where}")
    if not isinstance(k, int) or isinstance(k, bool) or k < 0 or k >= 2**31:
        fail("top_k", f"expected an integer >= 0 (0: off), got {k!r}{where}")
    if not (isinstance(p, (int, float)) and 0 < p <= 1):
        fail("top_p", f"expected a value in (0, 1] (1: off), got {p!r}{where}")
    if not (isinstance(mp, (int, float)) and 0 <= mp <= 1):
        fail("min_p", f"expected a value in [0, 1] (0: off), got {mp!r}{where}")
    if not (isinstance(rp, (int, float)) and rp > 0 and math.isfinite(rp)):
        fail("repetition_penalty", f"expected a finite value > 0 (1: off), got {rp!r}{where}")
    for f in ("presence_penalty", "frequency_penalty"):
        if not (isinstance(c[f], (int, float)) and math.isfinite(c[f])):
            fail(f, f"expected a finite number, got {c[f]!r}{where}")


def pack_configs(configs: Sequence[dict]) -> torch.Tensor:
    """Per-row configurations -> the int32 [B, 8] image of mlops_sample_config[B] (validated)."""
    raw = bytearray()
    for i, c in enumerate(configs):
        unknown = set(c) - set(_FIELDS)
        if unknown:
            fail("config", f"unknown field(s) {sorted(unknown)}; expected {list(_FIELDS)} (row {i})")
        full = {**_DEFAULTS, **c}
        _check_config(i, full)
        raw += struct.pack(_LAYOUT, *(full[f] for f in _FIELDS), 0)
    t = torch.frombuffer(raw, dtype=torch.int32).clone().view(len(configs), 8)
    C.check_configs(t.data_ptr(), len(configs))  # the C API's own check of the same image
    return t


def _sample_impl(logits, configs, seeds, steps, history, history_len, penalty_counts, tokens, logprobs, flags,
                 stats_best, stats_key_hist, workspace, variant: int) -> None:
    B, V = logits.shape

    def run():
        C.sample(logits.is_cuda, stream_of(logits), B, V, logits.data_ptr(), logits.stride(0), configs.data_ptr(),
                 seeds.data_ptr(), steps.data_ptr(), ptr(history), 0 if history is None else history.stride(0),
                 ptr(history_len), ptr(penalty_counts), tokens.data_ptr(), ptr(logprobs), ptr(flags), ptr(stats_best),
                 ptr(stats_key_hist), ptr(workspace), variant)

    on_device(logits, run)


@torch.library.custom_op("mlops_vocab::sample_into",
                         mutates_args=("logits", "steps", "penalty_counts", "tokens", "logprobs", "flags", "workspace"),
                         device_types=("cpu", "cuda"))
def _sample_into(logits: torch.Tensor, configs: torch.Tensor, seeds: torch.Tensor, steps: torch.Tensor,
                 history: Optional[torch.Tensor], history_len: Optional[torch.Tensor],
                 penalty_counts: Optional[torch.Tensor], tokens: torch.Tensor, logprobs: Optional[torch.Tensor],
                 flags: torch.Tensor, stats_best: Optional[torch.Tensor], stats_key_hist: Optional[torch.Tensor],
                 workspace: Optional[torch.Tensor], variant: int) -> None:
    _sample_impl(logits, configs, seeds, steps, history, history_len, penalty_counts, tokens, logprobs, flags,
                 stats_best, stats_key_hist, workspace, variant)


@_sample_into.register_fake
def _(logits, configs, seeds, steps, history, history_len, penalty_counts, tokens, logprobs, flags, stats_best,
      stats_key_hist, workspace, variant):
    return None


Cfg = Union[dict, Sequence[dict]]


class Sampler:
    """Samples one token per row of [B, V] fp32 logits.

    Sampler(batch, vocab, device=..., seed=0, **config) with config one of temperature (0: greedy),
    top_k (0: off), top_p ((0, 1]), min_p ([0, 1]), repetition_penalty, presence_penalty,
    frequency_penalty: one value for every row, or configs=[{...}, ...] per row. seed: an int (row i
    gets seed + i) or a list of per-row seeds. State on the device: seeds, steps (each row's step
    advances by one per call, on the device), configs. Penalties take history ([B, L] int32 token
    ids, -1 or anything outside [0, V) ignored) with history_len [B]; they modify logits in place.
    """

    def __init__(self, batch: int, vocab: int, *, device="cuda", seed: Union[int, Sequence[int]] = 0,
                 configs: Optional[Sequence[dict]] = None, variant=None, **config):
        if not isinstance(batch, int) or batch < 1:
            fail("batch", f"expected a positive integer, got {batch!r}")
        if not isinstance(vocab, int) or vocab < 1:
            fail("vocab", f"expected a positive integer, got {vocab!r}")
        self.batch, self.vocab, self.device = batch, vocab, canonical_device(device)
        self.variant = resolve_variant("variant", variant, _VARIANTS)
        if configs is not None and config:
            fail("configs", "give either configs=[...] per row or keyword values for all rows, not both")
        if configs is None:  # one configuration for every row: packed (and checked) once
            packed = pack_configs([dict(config)]).expand(batch, 8).contiguous()
        else:
            if len(configs) != batch:
                fail("configs", f"expected {batch} per-row configurations, got {len(configs)}")
            packed = pack_configs(configs)
        self.configs = packed.to(self.device)
        self.workspace: Optional[torch.Tensor] = None
        self._plan_for(packed)
        if isinstance(seed, int):
            seeds = [seed + i for i in range(batch)]
        else:
            seeds = list(seed)
            if len(seeds) != batch:
                fail("seed", f"expected {batch} per-row seeds, got {len(seeds)}")
        seeds = [s & 0xFFFFFFFFFFFFFFFF for s in seeds]
        seeds = [s - (1 << 64) if s >= (1 << 63) else s for s in seeds]
        self.seeds = torch.tensor(seeds, dtype=torch.int64, device=self.device)
        self.steps = torch.zeros(batch, dtype=torch.int64, device=self.device)
        self.penalty_counts: Optional[torch.Tensor] = None  # allocated at the first call with a history

    def _plan_for(self, packed: torch.Tensor):
        """The variant of each call kind: named, or (variant=None on a GPU) the planner's pick for these
        configurations with / without the head's statistics and a history (mlops_sample_plan_configs:
        host-side, decided here so a call only looks it up), and the split variant's workspace
        (cleared by each call on the device, so graphs replay it) when a pick needs it."""
        if self.variant >= 0 or self.device.type != "cuda":
            self._plans = {(s, h): self.variant for s in (False, True) for h in (False, True)}
        else:
            props = torch.cuda.get_device_properties(self.device)
            sm, sms = props.major * 10 + props.minor, props.multi_processor_count
            self._plans = {(s, h): C.sample_plan_configs(self.batch, self.vocab, sm, sms, packed.data_ptr(), s, h)
                           for s in (False, True) for h in (False, True)}
        ws = max((C.sample_workspace_bytes(self.batch, self.vocab, v) for v in set(self._plans.values()) if v >= 0),
                 default=0)
        if ws and (self.workspace is None or self.workspace.numel() < ws):
            self.workspace = torch.empty(ws, dtype=torch.uint8, device=self.device)

    def set_configs(self, configs: Sequence[dict]):
        """New per-row configurations (copied into the device tensor in place: graphs keep working)."""
        if len(configs) != self.batch:
            fail("configs", f"expected {self.batch} per-row configurations, got {len(configs)}")
        packed = pack_configs(configs)
        self.configs.copy_(packed)
        self._plan_for(packed)

    def __call__(self, logits: torch.Tensor, *, history: Optional[torch.Tensor] = None,
                 history_len: Optional[torch.Tensor] = None, logprobs: bool = False,
                 tokens: Optional[torch.Tensor] = None, stats=None) -> SampleOutput:
        """stats: the LmHeadOutput of these logits (lm_head(..., stats=True)): rows without penalties
        skip the pass for the max (greedy reads nothing else) and top-k its first radix pass."""
        check_tensor("logits", logits, (torch.float32,), dims=(2,), device=self.device)
        if tuple(logits.shape) != (self.batch, self.vocab):
            fail("logits", f"expected shape {(self.batch, self.vocab)}, got {tuple(logits.shape)}")
        if (history is None) != (history_len is None):
            fail("history_len", "history and history_len go together")
        if history is not None:
            check_tensor("history", history, (torch.int32,), dims=(2,), device=self.device)
            check_tensor("history_len", history_len, (torch.int32,), dims=(1,), device=self.device)
            if history.shape[0] != self.batch or history_len.shape[0] != self.batch:
                fail("history", f"expected {self.batch} rows, got {history.shape[0]} (history_len {history_len.shape[0]})")
            if history.shape[1] == 0:
                fail("history", "expected at least one column")
            if not history.is_contiguous():
                history = history.contiguous()
            if self.penalty_counts is None:
                self.penalty_counts = torch.zeros((self.batch, self.vocab), dtype=torch.int32, device=self.device)
        if tokens is None:
            tokens = torch.empty(self.batch, dtype=torch.int32, device=self.device)
        else:
            check_tensor("tokens", tokens, (torch.int32,), dims=(1,), device=self.device)
            if tokens.shape[0] != self.batch:
                fail("tokens", f"expected shape ({self.batch},), got {tuple(tokens.shape)}")
        best = key_hist = None
        if stats is not None:
            best, key_hist = getattr(stats, "best", None), getattr(stats, "key_hist", None)
            if best is None:
                fail("stats", "expected the LmHeadOutput of lm_head(..., stats=True)")
            check_tensor("stats", best, (torch.int64,), dims=(1,), device=self.device)
            check_tensor("stats", key_hist, (torch.int32,), dims=(2,), device=self.device)
            if best.shape[0] != self.batch or tuple(key_hist.shape) != (self.batch, 256) or not key_hist.is_contiguous():
                fail("stats", f"expected statistics of {self.batch} rows, got best {tuple(best.shape)}, "
                     f"key_hist {tuple(key_hist.shape)}")
        lp = torch.empty(self.batch, dtype=torch.float32, device=self.device) if logprobs else None
        flags = torch.empty(self.batch, dtype=torch.int32, device=self.device)
        args = (logits, self.configs, self.seeds, self.steps, history, history_len,
                self.penalty_counts if history is not None else None, tokens, lp, flags, best, key_hist, self.workspace,
                self._plans[(best is not None, history is not None)])
        if torch.compiler.is_compiling():
            _sample_into(*args)
        else:
            _sample_impl(*args)
        return SampleOutput(tokens, lp, flags)


def row_weights(logits_row: torch.Tensor, **config) -> tuple[torch.Tensor, int]:
    """The host emulation's kept integer weights of one (already penalized) row under a configuration:
    (weights int64 [V], their total S). The token is drawn with probability weights / S exactly."""
    check_tensor("logits_row", logits_row, (torch.float32,), dims=(1,), device=torch.device("cpu"))
    z = logits_row.contiguous()
    cfg = pack_configs([config])
    w = torch.empty(z.shape[0], dtype=torch.int32)
    s = C.row_weights(z.data_ptr(), z.shape[0], cfg.data_ptr(), w.data_ptr())
    return w.to(torch.int64) & 0xFFFFFFFF, s
