"""Hugging Face text in and out: framing a text as the model reads it, tokens as people read them,
the end token, the cache's name; and (until the role adapters take it) the Run of a Hugging Face model."""
from __future__ import annotations

import inspect

import torch

from engine.loading.loaded import LoadedModel
from engine.models.outputs import CROSS, DECODER_SELF, ENCODER_SELF, ModelOutput
from engine.traces.dense import AttentionTrace
from engine.traces.words import merge_words
from engine.loading.hf import HFModelError


def encode_text(tokenizer, text: str, pair: str | None, max_len: int, notes: list[str]):
    """Tokenised once; only a text longer than the model takes is tokenised again, truncated
    (said in ``notes``). A Run's trace and a seq2seq decoding session both start here."""
    pair = pair if pair and pair.strip() else None
    enc = tokenizer(text, pair, return_tensors="pt", verbose=False)   # too long is said in notes, not logged
    n = enc["input_ids"].shape[1]
    if n <= max_len:
        return enc
    notes.append(f"The input has {n} tokens; the model takes {max_len}, so it was truncated.")
    return tokenizer(text, pair, return_tensors="pt", truncation=True, max_length=max_len)


def readable_tokens(tokenizer, ids) -> list[str]:
    """Tokens as people read them, one per id, the same way for every tokenizer: a piece
    that starts a word is the word's text ("Ġthe", "▁the" -> "the"); a piece inside a word
    gets "##" in front, as BERT writes it ("believ" -> "##believ"); special tokens stay
    as they are. So word merging (``word_groups``) works for every model."""
    ids = [int(i) for i in ids]
    pieces = tokenizer.convert_ids_to_tokens(ids)
    special = set(getattr(tokenizer, "all_special_ids", []) or [])
    out: list[str] = []
    after_special = True
    for i, piece in zip(ids, pieces):
        piece = "" if piece is None else str(piece)
        if i in special:
            out.append(piece)
            after_special = True
            continue
        if piece.startswith("##"):
            out.append(piece)
        else:
            text = tokenizer.convert_tokens_to_string([piece]) if piece else ""
            starts_word = piece.startswith(("Ġ", "▁", " ")) or text.startswith(" ") or after_special
            text = text.strip() or ("␣" if text else piece)
            # A word-piece vocabulary (BERT) marks inner pieces itself: the rest start words.
            wordpiece = getattr(tokenizer, "do_lower_case", None) is not None or "##" in "".join(pieces)
            out.append(text if starts_word or wordpiece else "##" + text)
        after_special = False
    return out


def _unknown_note(tokenizer, ids, notes: list[str]) -> None:
    unk = getattr(tokenizer, "unk_token_id", None)
    n = sum(int(i) == unk for i in ids) if unk is not None else 0
    if n:
        notes.append(f"{n} piece(s) are not in the vocabulary and show as {tokenizer.unk_token}.")


@torch.no_grad()
def trace_hf(loaded: LoadedModel, text: str, pair: str | None = None, merge_subwords: bool = False,
             target: str | None = None, max_new_tokens: int = 64) -> AttentionTrace:
    """Every head of a Hugging Face model on ``text``, whatever its role.

    encoder: ``pair`` is segment B. decoder: the text is the prompt. encoder-decoder: the
    text is the source, ``target`` an optional target prefix; without one the model
    generates greedily first, so the trace shows the attention behind its own output.
    ``merge_subwords`` joins word pieces into words (see ``merge_pieces``)."""
    model, tok, notes = loaded.model, loaded.tokenizer, []
    role = loaded.role
    enc = encode_text(tok, text, pair if role == "encoder" else None, loaded.max_len, notes)
    _unknown_note(tok, enc["input_ids"][0].tolist(), notes)
    enc = {k: v.to(loaded.device) for k, v in enc.items()}
    ids = enc["input_ids"][0].tolist()
    if role == "encoder-decoder":
        dec = seq2seq_prefix(loaded, text, target, max_new_tokens)
        out = model(**enc, decoder_input_ids=torch.tensor([dec], device=loaded.device), output_attentions=True)
        attentions = {ENCODER_SELF: list(out.encoder_attentions), DECODER_SELF: list(out.decoder_attentions),
                      CROSS: list(out.cross_attentions)}
        sides = dict(source_tokens=readable_tokens(tok, ids), target_tokens=readable_tokens(tok, dec))
    else:
        out = model(**enc, output_attentions=True)
        kind = ENCODER_SELF if role == "encoder" else DECODER_SELF
        attentions = {kind: list(out.attentions)}
        side = "source_tokens" if role == "encoder" else "target_tokens"
        sides = {side: readable_tokens(tok, ids)}
    if any(a is None for layers in attentions.values() for a in layers) or not all(attentions.values()):
        raise HFModelError("The model returned no attention weights (it needs the eager attention implementation).")
    trace = AttentionTrace.from_output(ModelOutput(None, None, attentions), model_name=loaded.name,
                                       family=loaded.family, notes=notes, **sides)
    if merge_subwords:
        merge_words(trace)
    return trace


def seq2seq_prefix(loaded: LoadedModel, text: str, target: str | None, max_new_tokens: int) -> list[int]:
    """Decoder input ids of an encoder-decoder: its start token, then ``target``'s pieces,
    or, without a target, its own greedy output (up to, not including, the end token)."""
    model, tok = loaded.model, loaded.tokenizer
    start = model.config.decoder_start_token_id
    start = start if start is not None else model.config.pad_token_id
    if target and target.strip():
        return [start] + tok(target, add_special_tokens=False)["input_ids"][: loaded.max_len - 1]
    from engine.decoding.session import DecodeSettings, decode_all

    steps = decode_all(loaded, text, DecodeSettings(max_new_tokens=max_new_tokens)).steps
    ids = steps[-1].output_ids if steps else []
    eos = hf_eos_id(loaded)
    return [start] + [i for i in ids if i != eos]


def cache_field(model) -> str:
    """The name of the KV cache in a Hugging Face model's call and output: ``cache`` in recent
    transformers, ``past_key_values`` before (the old name still works there, with a
    deprecation warning, until transformers 5.40)."""
    return "cache" if "cache" in inspect.signature(model.forward).parameters else "past_key_values"


def hf_eos_id(loaded: LoadedModel) -> int | None:
    """The token that ends generation: the generation config's first, else the tokenizer's."""
    eos = getattr(getattr(loaded.model, "generation_config", None), "eos_token_id", None)
    if isinstance(eos, (list, tuple)):
        eos = eos[0] if eos else None
    return eos if eos is not None else loaded.tokenizer.eos_token_id


class HFTokens:
    """A Hugging Face tokenizer with the small interface decoding uses (tokens, decode)."""

    def __init__(self, hf_tokenizer, eos_id: int | None = None):
        self.hf, self.eos_id = hf_tokenizer, eos_id

    def tokens(self, ids) -> list[str]:
        return readable_tokens(self.hf, ids)

    @property
    def special_ids(self) -> set[int]:
        return set(getattr(self.hf, "all_special_ids", []) or [])

    def decode(self, ids) -> str:
        return self.hf.decode([int(i) for i in ids], skip_special_tokens=True)
