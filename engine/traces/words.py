"""Word pieces -> words: a trace of subword tokens shown over whole words (attention to a word
is the sum over its pieces, from a word the mean over its pieces)."""
from __future__ import annotations

import numpy as np


def word_groups(tokens: list[str]) -> list[int]:
    """Group index per token: a "##" piece joins the word before it (``readable_tokens``
    writes every tokenizer's inner pieces that way)."""
    groups, g = [], -1
    for i, t in enumerate(tokens):
        if not (t.startswith("##") and i > 0):
            g += 1
        groups.append(g)
    return groups


def merged_tokens(tokens: list[str], groups: list[int]) -> list[str]:
    words: list[str] = []
    for t, g in zip(tokens, groups):
        if g == len(words):
            words.append(t)
        else:
            words[g] += t.removeprefix("##")
    return words


def word_starts(groups) -> np.ndarray:
    """Where each word's pieces begin: groups are 0, 1, 2, ... in order (``word_groups``), so
    a word is one run of pieces; (W,) int indices for ``np.add.reduceat``."""
    groups = np.asarray(groups, dtype=np.int64)
    steps = np.diff(groups, prepend=-1)
    if groups.ndim != 1 or not len(groups) or ((steps != 0) & (steps != 1)).any():
        raise ValueError("word groups must number the words 0, 1, 2, ... in order, one run of pieces each")
    return np.flatnonzero(steps)


def merge_pieces(weights: np.ndarray, groups: list[int], key_groups: list[int] | None = None) -> np.ndarray:
    """(..., Tq, Tk) -> (..., Wq, Wk): columns (keys) of a word are summed, so rows still sum
    to 1; rows (queries) of a word are averaged, so a word attends like its pieces on
    average. ``key_groups`` for keys of another sequence (cross-attention). Sums over runs
    (``np.add.reduceat``): nothing but the weights themselves grows with T squared (a one-hot
    (T, W) matrix at 32k tokens is gigabytes)."""
    q_starts = word_starts(groups)
    k_starts = q_starts if key_groups is None else word_starts(key_groups)
    summed_keys = np.add.reduceat(weights, k_starts, axis=-1)                   # (..., Tq, Wk)
    summed = np.add.reduceat(summed_keys, q_starts, axis=-2)                    # (..., Wq, Wk)
    pieces = np.diff(np.append(q_starts, weights.shape[-2])).astype(weights.dtype)  # (Wq,) pieces a word
    return summed / pieces[:, None]


# ---- the same weights in our encoder ----------------------------------------------------------
