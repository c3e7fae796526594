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

from engine.adapters import adapter_for
from engine.adapters.base import Framed
from engine.inputs import InputError, check_text
from engine.interventions.lens import adapter_tokens

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

    @property
    def tokens(self) -> int:
        return len(self.clean.target_ids)


def pieces(framed: Framed) -> str:
    return " | ".join(framed.target_tokens)


def answer_id(adapter, text: str) -> int:
    """The one token id ``text`` stands for: ``id:N``, or a text the tokenizer makes one token."""
    vocab = adapter.unembedding().weight.shape[0]
    spec = text.strip()
    if spec.startswith("id:"):
        n = spec[3:]
        if not n.isdigit() or int(n) >= vocab:
            raise InputError(f"The answer {text!r} is not id:N with N from 0 to {vocab - 1}.")
        return int(n)
    if not text.strip():
        raise InputError("An answer is empty: give a token such as ' Mary' or id:N.")
    ids = adapter.piece_ids(text)
    if len(ids) != 1:
        shown = " | ".join(adapter_tokens(adapter.loaded).tokens(ids)) or "nothing"
        raise InputError(f"The answer {text!r} is {len(ids)} tokens ({shown}), not one: give a single token "
                         "(often with its leading space, ' Mary') or id:N.")
    return ids[0]


def frame_pair(loaded, pair: PromptPair, target: str | None = None) -> FramedPair:
    """``pair`` framed for ``loaded``; InputError in one sentence when it cannot be patched."""
    if loaded.role != "decoder":
        what = "an encoder predicts no next token" if loaded.role == "encoder" else (
            "encoder-decoders (the translator, T5, BART, Marian) are not patched yet")
        raise InputError(f"Prompt pairs are patched in decoders only: {loaded.name} is an {loaded.role}, and {what}.")
    if target is not None and target.strip():
        raise InputError("--target is a decoder prefix of an encoder-decoder; a decoder's pair has none.")
    adapter = adapter_for(loaded)
    clean = adapter.frame(check_text(pair.clean, "patch (the clean text)"))
    corrupt = adapter.frame(check_text(pair.corrupt, "patch (the corrupted text)"))
    if len(clean.target_ids) != len(corrupt.target_ids):
        raise InputError(f"The clean text is {len(clean.target_ids)} tokens ({pieces(clean)}) and the corrupted text "
                         f"{len(corrupt.target_ids)} ({pieces(corrupt)}): a pair must have the same number of tokens.")
    for framed in (clean, corrupt):
        if framed.notes and any("truncated" in n for n in framed.notes):
            raise InputError(f"A text of the pair is longer than {loaded.name} reads: shorten it.")
    return FramedPair(clean, corrupt, (answer_id(adapter, pair.answer), answer_id(adapter, pair.wrong)))


def read_pairs(path: str | Path) -> list[PromptPair]:
    """The prompt pairs of a TSV file (clean, corrupt, answer, wrong answer; one pair a line).
    Answers keep their leading space: ' Mary' is the token that starts a word."""
    from engine.corpora.pairs_file import read_tsv_rows

    try:
        rows = read_tsv_rows(path, COLUMNS, "prompt pairs", strip=False, numbered=True)
    except ValueError as exc:
        raise InputError(str(exc)) from None
    return [PromptPair(*fields, line=number) for number, *fields in rows]


def next_tokens(loaded, text: str, k: int = 5) -> list[tuple[int, str, float]]:
    """The ``k`` likeliest next tokens after ``text``: (id, token as read, probability), the
    answers the window offers for a pair (the clean run's and the corrupted run's)."""
    import torch

    adapter = adapter_for(loaded)
    with torch.no_grad():
        logits = adapter.forward(adapter.frame(check_text(text)))[0, -1].float()    # (V,)
    p = torch.softmax(logits, -1)
    top = p.topk(min(k, p.numel()))
    ids = top.indices.tolist()
    return list(zip(ids, adapter_tokens(loaded).tokens(ids), top.values.tolist()))
