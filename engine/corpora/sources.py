"""Named corpora: what ``--corpus`` means, and how the same splits come back for evaluation.

A checkpoint records the corpus it was trained on (``None`` for the default, or a path) and
the seed, so ``attnscope eval`` rebuilds exactly the held-out split the model never saw.
"""
from __future__ import annotations

import random

DEFAULT_TRANSLATION = "synthetic English->German"
DEFAULT_TEXT = "python docs + synthetic English"


def translation_splits(corpus: str | None = None, seed: int = 0, n_train: int = 20000) -> dict[str, list[tuple[str, str]]]:
    """train / valid / test pairs: the synthetic grammar by default, else a TSV pairs file
    shuffled by ``seed`` and split 90 / 5 / 5."""
    if corpus is None:
        from engine.corpora.german import make_splits
        return make_splits(seed=seed, n_train=n_train)
    from engine.corpora.pairs_file import read_pairs_tsv
    pairs = read_pairs_tsv(corpus)
    random.Random(seed).shuffle(pairs)
    n_hold = max(1, len(pairs) // 20)
    return {"train": pairs[2 * n_hold:], "valid": pairs[:n_hold], "test": pairs[n_hold:2 * n_hold]}


def text_splits(corpus: str | None = None, seed: int = 0) -> tuple[list[str], list[str]]:
    """(train lines, valid lines): Python's own docs plus the synthetic English by default,
    else a UTF-8 text file; lines shuffled by ``seed``, one in twenty held out."""
    if corpus is None:
        from engine.corpora.english_text import python_docs_text, synthetic_english
        text = python_docs_text() + "\n" + synthetic_english(seed, 20000)
    else:
        from engine.corpora.english_text import read_text_file
        text = read_text_file(corpus)
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    random.Random(seed).shuffle(lines)
    n_valid = max(1, len(lines) // 20)
    return lines[n_valid:], lines[:n_valid]


def corpus_label(corpus: str | None, family: str) -> str:
    if corpus is not None:
        return corpus
    return DEFAULT_TRANSLATION if family == "translator" else DEFAULT_TEXT
