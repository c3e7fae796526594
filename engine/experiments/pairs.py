"""Prompt pairs: a clean and a corrupted text of the same length, and two answers.

Why so strict: patching puts the activation at position p of one run into position p of the
other, so both texts must be the same number of tokens (a pair that is not is refused with
both counts and the pieces), and the metric reads one logit per answer, so each answer must
be one token (refused with its pieces) or given as ``id:N``. Texts are framed by the adapter
exactly as a Run frames them (a Llama's BOS first), so positions are over the ids fed.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from attnscope.engine.adapters.base import Framed
from attnscope.engine.adapters.chat import not_a_model
from attnscope.engine.adapters.hf_text import byte_labels
from attnscope.engine.corpora.pairs_file import read_tsv_rows
from attnscope.engine.decoding.greedy import admitted
from attnscope.engine.inputs import InputError, check_count, check_optional_text, check_path
from attnscope.engine.interventions import applied
from attnscope.engine.interventions.lens import adapter_tokens
from attnscope.engine.loading.loaded import LoadedModel
from attnscope.engine.models.tokenizer import raw_pieces

COLUMNS = ("clean", "corrupt", "answer", "wrong answer")


@dataclass(frozen=True)
class PromptPair:
    clean: str
    corrupt: str
    answer: str          # the clean run's answer: a text the tokenizer makes one token, or id:N
    wrong: str           # the corrupted run's answer (the metric's other side)
    line: int = field(default=0, compare=False)   # its line in a pairs file (0: typed)


@dataclass
class FramedPair:
    """A pair as the model reads it."""
    clean: Framed
    corrupt: Framed
    answers: tuple[int, int]          # (answer id, wrong answer id)
    framed_for: object = field(default=None, repr=False, compare=False)   # the LoadedModel it was framed for
    adapter: object = field(default=None, repr=False, compare=False)      # the adapter that framed it (its door)

    @property
    def tokens(self) -> int:
        """The decoder's positions (a decoder's text, an encoder-decoder's prefix)."""
        return len(self.clean.target_ids)

    @property
    def lengths(self) -> tuple[int, int]:
        """(source tokens, decoder tokens): pairs average by position only where these agree."""
        return len(self.clean.source_ids), len(self.clean.target_ids)


def first_difference(a: list[str], b: list[str]) -> str:
    """Where two token lists part, as a refusal says it: the counts alone would not show where,
    and every token of a long text ran a refusal to 1,565 characters on one line."""
    i = next((i for i, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b)))
    show = lambda toks: repr(toks[i][:20]) if i < len(toks) else "the end"   # noqa: E731
    return f"first differing at token {i + 1} ({show(a)} against {show(b)})"


def answer_id(adapter, text: str) -> int:
    """The one token id ``text`` stands for: ``id:N``, or a text the tokenizer makes one token."""
    if not isinstance(text, str):
        raise InputError(f"An answer is a token's text or id:N; got {text!r:.40}.")
    vocab = adapter.unembedding().weight.shape[0]
    spec = text.strip()
    if spec.startswith("id:"):
        n = spec[3:]
        # ASCII digits only ("²" is a digit to Python and no number to int), and no more than the
        # vocabulary has: 5,000 digits passed Python's own limit on reading a number
        if not (n.isascii() and n.isdigit()) or len(n) > len(str(vocab)) or int(n) >= vocab:
            shown = text if len(text) <= 40 else text[:37] + "..."
            raise InputError(f"The answer {shown!r} is not id:N with N from 0 to {vocab - 1}.")
        return int(n)
    if not text.strip():
        raise InputError("An answer is empty: give a token such as ' Mary' or id:N.")
    ids = adapter.piece_ids(text)
    if len(ids) != 1:
        pieces = adapter_tokens(adapter.loaded).tokens(ids[:8])
        shown = " | ".join(pieces) + (f" | ... ({len(ids) - 8} more)" if len(ids) > 8 else "") or "nothing"
        raise InputError(f"The answer {text[:40]!r} is {len(ids)} tokens ({shown}), not one: give a single token "
                         "(often with its leading space, ' Mary') or id:N.")
    unknown = _unknown_id(adapter.loaded.tokenizer)
    if unknown is not None and ids[0] == unknown and spec not in adapter_tokens(adapter.loaded).tokens(ids):
        raise InputError(f"The answer {text[:40]!r} is not in {adapter.loaded.name}'s vocabulary (it reads as the "
                         "unknown token): give a word the model knows, or id:N.")
    return ids[0]


def _unknown_id(tokenizer) -> int | None:
    """The id a tokenizer gives what it does not know ([UNK], <unk>), None where it has none (a
    byte-level one spells anything)."""
    unk = getattr(tokenizer, "unk_id", None)                 # our own tokenizers
    unk = getattr(tokenizer, "unk_token_id", None) if unk is None else unk   # Hugging Face's
    return unk if isinstance(unk, int) else None


def frame_pair(loaded, pair: PromptPair, target: str | None = None) -> FramedPair:
    """``pair`` framed for ``loaded``; InputError in one sentence when it cannot be patched.
    An encoder-decoder reads each text as its source and ``target`` (may be empty) as the
    decoder's prefix, the same for both: the metric is on the next token after it."""
    if not isinstance(loaded, LoadedModel):
        raise InputError(not_a_model(loaded, "patch"))
    if not isinstance(pair, PromptPair):
        raise InputError(f"A pair to patch is an engine.experiments.PromptPair(clean, corrupt, answer, wrong), not "
                         f"{pair!r:.40}.")
    target = check_optional_text(target, "decoder prefix")
    if loaded.role == "encoder":
        raise InputError(f"{loaded.name} is an encoder without a language-model head: it predicts no next token, "
                         "so there is no answer to patch.")
    if loaded.role == "decoder" and target is not None and target.strip():
        raise InputError("--target is a decoder prefix of an encoder-decoder; a decoder's pair has none.")
    # an ndif: model's pair is framed here (its tokenizer) and patched where it is served (experiment)
    adapter, clean_text = admitted(loaded, pair.clean, "patch (the clean text)", remote=True)
    texts = [clean_text, admitted(loaded, pair.corrupt, "patch (the corrupted text)", remote=True)[1]]
    if loaded.role == "encoder-decoder":
        clean, corrupt = (_with_prefix(adapter, text, target or "") for text in texts)
        side, name = "source", "source"
    else:
        clean, corrupt = (adapter.frame(text) for text in texts)
        side, name = "target", "text"
    n_clean, n_corrupt = len(getattr(clean, f"{side}_ids")), len(getattr(corrupt, f"{side}_ids"))
    if n_clean != n_corrupt:
        raise InputError(f"The clean {name} is {n_clean} tokens and the corrupted {name} {n_corrupt}, "
                         f"{first_difference(getattr(clean, f'{side}_tokens'), getattr(corrupt, f'{side}_tokens'))}: "
                         "a pair must have the same number of tokens.")
    for framed in (clean, corrupt):
        if framed.notes and any("truncated" in n for n in framed.notes):
            raise InputError(f"A text of the pair is longer than {loaded.name} reads: shorten it.")
    return FramedPair(clean, corrupt, (answer_id(adapter, pair.answer), answer_id(adapter, pair.wrong)), loaded,
                      adapter)


def _with_prefix(adapter, text: str, prefix: str) -> Framed:
    """An encoder-decoder's framing of ``text`` with the decoder fed its start token and
    ``prefix`` (an empty prefix: the start token alone, the first word to come)."""
    framed = adapter.frame(text, target=prefix if prefix.strip() else "x")
    if not prefix.strip():
        framed.target_ids, framed.target_tokens = framed.target_ids[:1], framed.target_tokens[:1]
    return framed


def read_pairs(path: str | Path) -> list[PromptPair]:
    """The prompt pairs of a TSV file (clean, corrupt, answer, wrong answer; one pair a line).
    Answers keep their leading space: ' Mary' is the token that starts a word."""

    path = check_path(path, "file of prompt pairs")
    try:
        rows = read_tsv_rows(path, COLUMNS, "prompt pairs", strip=False, numbered=True)
    except ValueError as exc:
        raise InputError(str(exc)) from None
    return [PromptPair(*fields, line=number) for number, *fields in rows]


def answer_texts(loaded, ids) -> list[str]:
    """Each id's own text as an answer reads it, alone (not as the next piece of a text): a
    leading space kept (' honour' starts a word; 'our' goes on one), no '##' (the axes' mark
    for a piece inside a word, which the first of a list lost); byte pieces (<0xC3>) and
    special tokens as the vocabulary spells them."""

    tokens = adapter_tokens(loaded)
    hf = getattr(tokens, "hf", None)
    out = []
    for piece in raw_pieces(tokens, [int(i) for i in ids]):
        if hasattr(hf, "convert_tokens_to_string"):                  # a transformers tokenizer
            text = byte_labels(piece, hf.convert_tokens_to_string([piece])) if piece else ""
            if piece.startswith(("Ġ", "▁")) and not text.startswith(" "):    # SentencePiece drops a first space
                text = " " + text
        else:                                                        # ours: Metaspace's mark is the space
            text = piece.replace("▁", " ") if getattr(tokens, "kind", None) == "bpe" else piece
        out.append(text)
    return out


def next_tokens(loaded, text, k: int = 5, target: str | None = None, keep=(), interventions=None
                ) -> list[tuple[int, str, float]]:
    """The ``k`` likeliest next tokens after ``text`` (an encoder-decoder's: after the decoder
    prefix ``target``), then each id of ``keep`` not among them (an answer the user chose;
    ids past the vocabulary left out): (id, its text (answer_texts), probability), the answers
    the window offers for a pair (the clean run's and the corrupted run's). The forward runs
    with ``interventions`` (engine.interventions), as the experiment's do."""
    import torch

    k = check_count(k, "k (the likeliest tokens to list)")
    adapter, text = admitted(loaded, text)          # a Prepared's own: its door was passed once
    if loaded.role == "encoder":
        raise InputError(f"{loaded.name} is an encoder without a language-model head: it predicts no next token.")
    framed = _with_prefix(adapter, text, target or "") if loaded.role == "encoder-decoder" else adapter.frame(text)
    with torch.no_grad(), applied(interventions):
        logits = adapter.forward(framed)[0, -1].float()                           # (V,)
    p = torch.softmax(logits, -1)
    ids = p.topk(min(k, p.numel())).indices.tolist()
    ids += [int(i) for i in dict.fromkeys(keep) if 0 <= int(i) < p.numel() and int(i) not in ids]
    return list(zip(ids, answer_texts(loaded, ids), p[ids].tolist()))
