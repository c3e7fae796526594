"""Text in, AttentionTrace out: tokenise, run the model with weights returned, trim.

This is the one entry point the GUI's worker and the CLI use to look at a model. It handles
what users type: empty text is refused with a clear message, text longer than the model's
context is truncated (and the trace says so), unknown words become [UNK] (and the trace says
which).
"""
from __future__ import annotations

import torch

from engine.loading.loaded import LoadedModel
from engine.models.tokenizer import normalisation_note
from engine.traces.dense import AttentionTrace


class InputError(ValueError):
    """A problem with the text a user gave, worded for the user."""


def _check_text(text: str) -> str:
    text = (text or "").strip()
    if not text:
        raise InputError("There is no text to run: type a sentence first.")
    return text


def _truncate(ids: list[int], limit: int, notes: list[str], what: str = "input") -> list[int]:
    if len(ids) > limit:
        notes.append(f"The {what} has {len(ids)} tokens; the model takes {limit}, so it was truncated to the first {limit}.")
        return ids[:limit]
    return ids


def unknown_words(tokenizer, text: str) -> list[str] | None:
    """The pieces of ``text`` ``tokenizer`` has no token for, each once, in order of first
    appearance; None for a tokenizer that cannot tell."""
    find = getattr(tokenizer, "unknown_words", None)
    return list(dict.fromkeys(find(text))) if callable(find) else None


def _unknown_note(tokenizer, text: str, notes: list[str]) -> None:
    unknown = unknown_words(tokenizer, text)
    if unknown:
        shown = ", ".join(repr(u) for u in unknown[:8]) + (" ..." if len(unknown) > 8 else "")
        notes.append(f"Not in this model's vocabulary (shown as [UNK]): {shown}")


@torch.no_grad()
def trace_text(loaded: LoadedModel, text: str, target: str | None = None, pair: str | None = None,
               max_new_tokens: int = 64, merge_subwords: bool = False) -> AttentionTrace:
    """Run ``loaded`` on ``text`` and return what every head attended to.

    translator: ``target`` is an optional target prefix; without one the model translates
    greedily first, so the trace shows the attention behind its own translation.
    encoders: ``pair`` is an optional second sentence (segment B). Hugging Face models of
    every role: ``merge_subwords`` joins word pieces into words (engine.traces.words.merge_pieces).
    """
    text = _check_text(text)
    loaded.model.eval()
    if loaded.is_hf:
        from engine.adapters.hf_text import trace_hf  # transformers is imported only when it is needed
        return trace_hf(loaded, text, pair, merge_subwords=merge_subwords, target=target,
                        max_new_tokens=max_new_tokens)
    return _TRACERS[loaded.family](loaded, text, target, pair, max_new_tokens)


def _trace_translator(loaded, text, target, pair, max_new_tokens):
    model, src_tok, tgt_tok = loaded.model, loaded.tokenizer, loaded.tgt_tokenizer
    dev, notes = loaded.device, []
    normalised = normalisation_note(src_tok, text)   # "The dog doesn't" read as "the dog does not"
    if normalised:
        notes.append(normalised)
    _unknown_note(src_tok, text, notes)
    src_ids = _truncate(src_tok.encode(text), model.config.max_len - 1, notes) + [src_tok.eos_id]
    src = torch.tensor([src_ids], device=dev)
    if target is not None and target.strip():
        tgt_ids = [tgt_tok.bos_id] + _truncate(tgt_tok.encode(target), model.config.max_len - 1, notes, "target prefix")
    else:
        tgt_ids = _greedy_translation(loaded, text, tgt_tok, min(max_new_tokens, model.config.max_len - 1))
    out = model(src, torch.tensor([tgt_ids], device=dev), need_weights=True)
    return AttentionTrace.from_output(out, model_name=loaded.name, family=loaded.family,
                                      source_tokens=src_tok.tokens(src_ids), target_tokens=tgt_tok.tokens(tgt_ids),
                                      notes=notes)


def _greedy_translation(loaded, text: str, tgt_tok, max_new_tokens: int) -> list[int]:
    """[BOS] + the model's greedy tokens, stopping before EOS (stepped with the KV cache by
    engine.decoding.session: each token costs one step, not a forward over the whole prefix)."""
    from engine.decoding.session import DecodeSettings, decode_all

    steps = decode_all(loaded, text, DecodeSettings(max_new_tokens=max_new_tokens)).steps
    ids = steps[-1].output_ids if steps else []
    return [tgt_tok.bos_id] + [i for i in ids if i != tgt_tok.eos_id]


def _trace_gpt(loaded, text, target, pair, max_new_tokens):
    model, tok, notes = loaded.model, loaded.tokenizer, []
    _unknown_note(tok, text, notes)
    ids = _truncate(tok.encode(text), model.config.block_size, notes)
    out = model(torch.tensor([ids], device=loaded.device), need_weights=True)
    tokens = tok.tokens(ids)
    return AttentionTrace.from_output(out, model_name=loaded.name, family=loaded.family,
                                      target_tokens=tokens, notes=notes)


def _trace_bert(loaded, text, target, pair, max_new_tokens):
    model, tok, notes = loaded.model, loaded.tokenizer, []
    _unknown_note(tok, text + " " + (pair or ""), notes)
    a = tok.encode(text)
    b = tok.encode(pair) if pair and pair.strip() else []
    budget = model.config.max_position_embeddings - (3 if b else 2)
    if len(a) + len(b) > budget:
        notes.append(f"The input has {len(a) + len(b)} tokens; the model takes {budget} besides [CLS]/[SEP], so it was truncated.")
        a = a[:budget]
        b = b[: max(0, budget - len(a))]
    ids = [tok.cls_id] + a + [tok.sep_id] + (b + [tok.sep_id] if b else [])
    types = [0] * (len(a) + 2) + [1] * (len(ids) - len(a) - 2)
    dev = loaded.device
    out = model(torch.tensor([ids], device=dev), torch.tensor([types], device=dev), need_weights=True)
    return AttentionTrace.from_output(out, model_name=loaded.name, family=loaded.family,
                                      source_tokens=tok.tokens(ids), notes=notes)


_TRACERS = {"translator": _trace_translator, "gpt": _trace_gpt, "bert": _trace_bert}
