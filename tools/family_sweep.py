"""Every text family of the installed transformers, opened as a user's folder and held against
its own eager attention (issue 57).

For each model type with a causal-LM, masked-LM or seq2seq class: a tiny random model is built
from transformers' own config class (the sizes in SHRINK, a family's own fixes in OVERRIDES:
the one table of per-family build changes), saved with ``save_pretrained`` beside a tokenizer
assembled locally (tests/helpers/hf_tiny.py), opened the way ``attnscope export`` opens it
(``open_model``, then ``trace_text``) and each kind's weights compared with the same folder
loaded with ``attn_implementation="eager"`` and ``output_attentions=True``.

Each row is one of: exact (every head within TOLERANCE of eager, through the seam), dense
(the same, through the dense fallback: a family whose attention never reaches the seam, drawn
from its own eager weights, engine.adapters.hf_dense), wrong (opens, and differs:
the silent error this sweep exists to find), refused (one sentence in attnscope's words),
unclean (a foreign message or a traceback), not built (the tiny model could not be made here:
the sweep's own limit, not attnscope's), nothing compared (opens, but eager returned no
weights to compare, or every softmax layer was left out of the tiny model).

Hybrids: a tiny model keeps one layer of every distinct type in the config's ``layer_types``
(softmax and linear/state-space layers both), so a softmax layer is compared.

    .venv/bin/python -m tools.family_sweep [--only a,b,c] [--json out.json] [--timeout 120]
"""
from __future__ import annotations

import argparse
import json
import re
import signal
import sys
import tempfile
import time
import traceback
from pathlib import Path

TEXT = "the big dog sees the small cat and the cat sees the dog"   # longer than the 4-token window
TOLERANCE = 1e-4
FOREIGN = re.compile(r"\b[A-Z]\w*(Error|Exception)\b")   # a library's exception named in a message: not our words

# Sizes every family is built with, where its config has the field.
SHRINK = {
    "hidden_size": 32, "intermediate_size": 64, "num_attention_heads": 4, "num_key_value_heads": 2,
    "head_dim": 8, "max_position_embeddings": 64, "n_embd": 32, "n_head": 4, "n_inner": 64, "n_positions": 64,
    "d_model": 32, "d_ff": 64, "d_kv": 8, "num_heads": 4, "encoder_attention_heads": 4, "decoder_attention_heads": 4,
    "encoder_ffn_dim": 64, "decoder_ffn_dim": 64, "encoder_layers": 2, "decoder_layers": 2, "num_decoder_layers": 2,
    "moe_intermediate_size": 16, "shared_expert_intermediate_size": 16, "n_routed_experts": 4, "num_experts": 4,
    "num_local_experts": 4, "num_experts_per_tok": 2, "n_shared_experts": 1, "q_lora_rank": 16, "kv_lora_rank": 8,
    "qk_rope_head_dim": 4, "qk_nope_head_dim": 8, "v_head_dim": 8, "sliding_window": 4, "embedding_size": 32,
    "ffn_dim": 64, "hidden_dim": 64, "dim": 32, "n_heads": 4, "n_layers": 2, "global_head_dim": 8,
    "index_n_heads": 2, "index_head_dim": 8, "index_topk": 4, "linear_num_key_heads": 2, "linear_num_value_heads": 4,
    "linear_key_head_dim": 8, "linear_value_head_dim": 8, "mamba_n_heads": 8, "mamba_d_head": 8, "mamba_d_state": 8,
    "mamba_expand": 2, "mamba_n_groups": 1, "mamba_headdim": 8, "ssm_state_size": 8, "state_size": 8,
    "hidden_size_per_layer_input": 8, "kv_channels": 8,
    "rotary_dim": 4, "swa_num_attention_heads": 8, "swa_num_key_value_heads": 2, "swa_head_dim": 8,
}
LAYER_COUNTS = ("num_hidden_layers", "n_layer", "num_layers", "n_layers")

# A family's own build changes: the one table of them. Each value is merged into the config
# after SHRINK (None removes nothing: it is written as null).
OVERRIDES: dict[str, dict] = {


    "jamba": {"attn_layer_period": 2, "attn_layer_offset": 1, "expert_layer_period": 2, "expert_layer_offset": 1},
    "bamba": {"attn_layer_indices": [1]},
    "falcon_h1": {"mamba_d_ssm": 64, "mamba_chunk_size": 8},
    "dots3_note_text": {"num_key_value_heads": 4, "head_dim": 12},
    "dots3_note": {"num_key_value_heads": 4, "head_dim": 12},
    # Gemma 4: keys equal to values, the last two layers reading the first two's keys and values
    # (KV sharing), sliding and global layers of different head sizes
    "gemma4_text": {"attention_k_eq_v": True, "num_kv_shared_layers": 2, "num_hidden_layers": 4,
                    "layer_types": ["sliding_attention", "full_attention"] * 2,
                    "per_layer_config": {"1": {"head_dim": 16}, "3": {"head_dim": 16}}},
    # T5Gemma masks pad ids in the decoder: a start token equal to the pad id would make row 0 see no key
    # (attnscope reads 0 there, eager an arbitrary key); real T5Gemma starts with its BOS
    "t5gemma": {"decoder_start_token_id": 1},
    "gemma4_assistant": {"hidden_size_per_layer_input": 0},
    "gemma4_unified_assistant": {"hidden_size_per_layer_input": 0},
    "granitemoehybrid": {"layer_types": ["mamba", "attention"]},
}


def families() -> dict[str, str]:
    """model_type -> role, for every type with a causal-LM, masked-LM or seq2seq class (as attnscope's
    engine.loading.describe.hf_role reads them)."""
    from transformers.models.auto import modeling_auto as auto

    out = {}
    for name in sorted({*auto.MODEL_FOR_CAUSAL_LM_MAPPING_NAMES, *auto.MODEL_FOR_MASKED_LM_MAPPING_NAMES,
                        *auto.MODEL_FOR_SEQ_TO_SEQ_CAUSAL_LM_MAPPING_NAMES}):
        if name in auto.MODEL_FOR_SEQ_TO_SEQ_CAUSAL_LM_MAPPING_NAMES:
            out[name] = "encoder-decoder"
        elif name in auto.MODEL_FOR_CAUSAL_LM_MAPPING_NAMES and name not in auto.MODEL_FOR_MASKED_LM_MAPPING_NAMES:
            out[name] = "decoder"
        else:
            out[name] = "encoder"
    return out


def _per_layer(raw: dict, layers: int) -> list[str]:
    return [k for k, v in raw.items() if isinstance(v, list) and len(v) == layers and layers > 2]


def tiny_config(family: str, vocab: int):
    """transformers' config of ``family``, shrunk: SHRINK's sizes where it has them, one layer of each
    distinct layer type (at least two layers), OVERRIDES last."""
    from transformers import CONFIG_MAPPING

    cls = CONFIG_MAPPING[family]
    raw = cls().to_dict()
    for sub in ("text_config", "decoder", "encoder"):      # a composite config: shrink its parts too
        if isinstance(raw.get(sub), dict):
            raw[sub] = _shrunk(raw[sub], vocab)
    raw = _shrunk(raw, vocab)
    fixes = OVERRIDES.get(family, {})
    raw.update(fixes)
    for sub in ("text_config", "decoder", "encoder"):
        if isinstance(raw.get(sub), dict):
            raw[sub].update({k: v for k, v in fixes.items() if k in raw[sub]})
    return cls.from_dict(raw)


def _shrunk(raw: dict, vocab: int) -> dict:
    raw = dict(raw)
    counts = [k for k in LAYER_COUNTS if isinstance(raw.get(k), int)]
    layers = raw[counts[0]] if counts else 0
    keep = list(range(min(2, layers)))
    types = raw.get("layer_types")
    if isinstance(types, list) and types:
        firsts = sorted({t: types.index(t) for t in types}.values())
        keep = firsts if len(firsts) >= 2 else list(range(min(2, len(types))))
    for key in _per_layer(raw, layers):
        raw[key] = [raw[key][i] for i in keep]
    per = raw.get("per_layer_config")
    if isinstance(per, dict):            # Gemma 4, dots3: {"05": {"head_dim": 512}} -> the kept layers' own
        wide = SHRINK["qk_nope_head_dim"] + SHRINK["qk_rope_head_dim"] if "qk_nope_head_dim" in raw else 2 * SHRINK["head_dim"]
        raw["per_layer_config"] = {str(j): _layer_values(per[key], wide)
                                   for j, i in enumerate(keep) for key in per if str(key).isdigit() and int(key) == i}
    for key in counts:
        raw[key] = len(keep) or 2
    for key, value in SHRINK.items():
        if key in raw and value is not None and not isinstance(raw[key], (list, dict)):
            raw[key] = value
    if "kv_lora_rank" in raw:                    # multi-head latent attention: one key head per query head,
        if "num_key_value_heads" in raw:         # rotary over qk_rope_head_dim
            raw["num_key_value_heads"] = raw.get("num_attention_heads", SHRINK["num_attention_heads"])
        if "head_dim" in raw and "qk_rope_head_dim" in raw:
            raw["head_dim"] = SHRINK["qk_rope_head_dim"]
    for key in ("vocab_size", "vocab_size_per_layer_input", "unpadded_vocab_size"):
        if key in raw:
            raw[key] = vocab
    for key, value in (("pad_token_id", 0), ("bos_token_id", 1), ("eos_token_id", 2), ("decoder_start_token_id", 0)):
        if key in raw:
            raw[key] = value
    return raw


def _layer_values(values: dict, wide: int) -> dict:
    """One layer's own values, shrunk: head_dim to ``wide``, other sizes as SHRINK says; key/value
    heads kept equal to the query heads where they were (dots3's per-layer rule)."""
    out = {k: (wide if k == "head_dim" else SHRINK.get(k, v) if isinstance(v, int) else v) for k, v in values.items()}
    if values.get("num_key_value_heads") == values.get("num_attention_heads") and "num_attention_heads" in out:
        out["num_key_value_heads"] = out["num_attention_heads"]
    return out


def build(root: Path, family: str, role: str) -> Path:
    """The tiny random ``family`` model and its tokenizer, saved in ``root/family`` like a user's folder;
    every attention sink drawn from N(0, 2) (zeros would hide a sink that is applied wrong)."""
    import torch
    from transformers import AutoModelForCausalLM, AutoModelForMaskedLM, AutoModelForSeq2SeqLM

    from tests.helpers.hf_tiny import _bpe_tokenizer, _wordpiece_tokenizer

    folder = Path(root) / family
    tokenizer = _wordpiece_tokenizer() if role == "encoder" else _bpe_tokenizer(role)
    config = tiny_config(family, max(len(tokenizer), 64))
    torch.manual_seed(0)
    maker = {"encoder": AutoModelForMaskedLM, "decoder": AutoModelForCausalLM,
             "encoder-decoder": AutoModelForSeq2SeqLM}[role]
    model = maker.from_config(config).eval()
    with torch.no_grad():
        for module in model.modules():
            sinks = getattr(module, "sinks", None)
            if isinstance(sinks, torch.Tensor) and sinks.is_floating_point():
                sinks.normal_(0.0, 2.0)
        ids = torch.arange(3, 16)[None]                      # transformers itself runs this tiny model, or it is not built
        model(input_ids=ids, **({"decoder_input_ids": ids[:, :4]} if role == "encoder-decoder" else {}))
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder


def compare(folder: Path, role: str) -> dict:
    """Open ``folder`` as ``attnscope export`` does and hold every kind's weights against eager's:
    {"class", "diff", "note"}."""
    import numpy as np
    import torch
    from transformers import AutoModelForCausalLM, AutoModelForMaskedLM, AutoModelForSeq2SeqLM

    from attnscope.engine.errors import ModelLoadError
    from attnscope.engine.inputs import InputError
    from attnscope.engine.kinds import CROSS, DECODER_SELF, EFFECTIVE, ENCODER_SELF
    from attnscope.engine.loading.catalog import open_model
    from attnscope.engine.adapters import adapter_for
    from attnscope.engine.decoding.greedy import OWN_OUTPUT_TOKENS, frame
    from attnscope.engine.traces.tracing import trace_text
    from attnscope.engine.traces import reading

    try:
        loaded = open_model(str(folder), "cpu")
        trace = trace_text(loaded, TEXT)
    except (ModelLoadError, InputError) as exc:
        message = str(exc)
        clean = ("\n" not in message and "Traceback" not in message and message.rstrip().endswith((".", ")"))
                 and not FOREIGN.search(message))
        return {"class": "refused" if clean else "unclean", "diff": None, "note": message}
    maker = {"encoder": AutoModelForMaskedLM, "decoder": AutoModelForCausalLM,
             "encoder-decoder": AutoModelForSeq2SeqLM}[role]
    reference = maker.from_pretrained(str(folder), attn_implementation="eager", dtype=torch.float32).eval()
    framed = frame(adapter_for(loaded), TEXT, max_new_tokens=OWN_OUTPUT_TOKENS)   # the ids the trace read
    extra = {k: torch.tensor([v]) for k, v in (framed.extra or {}).items() if k != "token_type_ids"}
    with torch.no_grad():
        if role == "encoder-decoder":
            out = reference(**extra, decoder_input_ids=torch.tensor([framed.target_ids]), output_attentions=True)
            ref = {ENCODER_SELF: out.encoder_attentions, DECODER_SELF: out.decoder_attentions,
                   CROSS: out.cross_attentions}
        elif role == "encoder":
            ref = {ENCODER_SELF: reference(**extra, output_attentions=True).attentions}
        else:
            ref = {DECODER_SELF: reference(input_ids=torch.tensor([framed.target_ids]), output_attentions=True).attentions}
    worst, compared, notes = 0.0, 0, []
    effective = trace.shape(EFFECTIVE)[0] if EFFECTIVE in trace.kinds else 0   # checked against its layer at load
    for kind in (k for k in trace.kinds if k != EFFECTIVE):
        theirs = [a for a in (ref.get(kind) or ()) if isinstance(a, torch.Tensor)]
        ours = reading.weights(trace, kind)                                      # (L, H, Tq, Tk)
        if len(theirs) != ours.shape[0]:
            notes.append(f"{kind}: eager returned {len(theirs)} weight tensors for {ours.shape[0]} softmax layers")
            theirs = [a for a in theirs if a.shape[-2:] == ours.shape[-2:]][: ours.shape[0]]
            if len(theirs) != ours.shape[0]:
                continue
        expected = torch.stack([a[0].float() for a in theirs]).numpy()
        sums = expected.sum(-1)
        if np.allclose(sums, 1.0, atol=1e-4) and ours.sum(-1).min() < 1 - 1e-3:   # eager's weights before its sink
            notes.append(f"{kind}: eager returns its softmax before the sink; compared row-normalised")
            ours = ours / np.maximum(ours.sum(-1, keepdims=True), 1e-30)
        worst = max(worst, float(np.abs(ours - expected).max()))
        compared += ours.shape[0]
    config = loaded.model.config.get_text_config()
    layers = getattr(config, "num_hidden_layers", None)
    if isinstance(layers, int) and role == "decoder" and compared < layers:   # a hybrid's other layers
        drawn = f", {effective} drawn as effective attention" if effective else ""
        notes.append(f"{layers - compared} of {layers} layers not softmax attention (linear or state-space{drawn})")
    elif effective:                     # Falcon-H1: a Mamba-2 mixer beside attention in every layer
        notes.append(f"{effective} linear mixers beside attention drawn as effective attention")
    exact = "dense" if loaded.meta.get("dense") else "exact"     # drawn from its own eager weights (hf_dense)
    if not compared:
        return {"class": "nothing compared", "diff": None, "note": "; ".join(notes) or "no softmax layer compared"}
    return {"class": exact if worst <= TOLERANCE else "wrong", "diff": worst,
            "note": "; ".join([f"{compared} layers", *notes])}


class _TimedOut(BaseException):
    """The sweep's own limit: a BaseException, so no ``except Exception`` on the way turns it into a refusal."""


def sweep_one(root: Path, family: str, role: str, timeout: int = 0) -> dict:
    """One row: {"family", "role", "class", "diff", "note", "seconds"}."""
    start = time.perf_counter()
    if timeout:
        signal.signal(signal.SIGALRM, lambda *_: (_ for _ in ()).throw(_TimedOut()))
        signal.alarm(timeout)
    try:
        try:
            folder = build(root, family, role)
        except _TimedOut:
            raise
        except Exception as exc:   # the sweep's own limit: this tiny config cannot be built here
            row = {"class": "not built", "diff": None, "note": _first(exc)}
        else:
            try:
                row = compare(folder, role)
            except _TimedOut:
                raise
            except Exception as exc:   # a foreign message reached the user: unclean
                row = {"class": "unclean", "diff": None, "note": f"{type(exc).__name__}: {_first(exc)}",
                       "where": traceback.format_exc(limit=-2).strip().splitlines()[-3:]}
    except _TimedOut:
        row = {"class": "not built", "diff": None, "note": f"timed out after {timeout} s"}
    finally:
        if timeout:
            signal.alarm(0)
    return {"family": family, "role": role, **row, "seconds": round(time.perf_counter() - start, 2)}


def _first(exc: BaseException) -> str:
    return " ".join(str(exc).split())[:240] or type(exc).__name__


def run(names=None, timeout: int = 0, out=sys.stdout) -> list[dict]:
    from attnscope.engine.runtime.quiet import quiet_transformers

    known = families()
    chosen = [n for n in (names or known) if n in known]
    rows = []
    with tempfile.TemporaryDirectory(prefix="family-sweep-") as root, quiet_transformers():
        for name in chosen:
            row = sweep_one(Path(root), name, known[name], timeout)
            rows.append(row)
            if out is not None:
                diff = "" if row["diff"] is None else f"{row['diff']:.1e}"
                print(f"| {name} | {row['role']} | {row['class']} | {diff} | {row['note'][:160]} |", file=out, flush=True)
    return rows


def counts(rows: list[dict]) -> dict[str, int]:
    out: dict[str, int] = {}
    for row in rows:
        out[row["class"]] = out.get(row["class"], 0) + 1
    return out


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", help="comma-separated model types")
    parser.add_argument("--json", help="write the rows here")
    parser.add_argument("--timeout", type=int, default=180, help="seconds per family")
    parser.add_argument("--part", default="1/1", help="i/n: every n-th family from the i-th (to run n processes)")
    args = parser.parse_args(argv)
    print("| family | role | class | max difference | note |\n|---|---|---|---|---|")
    i, n = (int(x) for x in args.part.split("/"))
    names = args.only.split(",") if args.only else list(families())
    rows = run(names[i - 1::n], args.timeout)
    print(json.dumps(counts(rows)))
    if args.json:
        Path(args.json).write_text(json.dumps({"rows": rows, "counts": counts(rows)}, indent=1))
    return 1 if any(r["class"] == "wrong" for r in rows) else 0


if __name__ == "__main__":
    sys.exit(main())
