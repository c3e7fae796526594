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


def _onehot(groups, dtype) -> np.ndarray:
    groups = np.asarray(groups)
    out = np.zeros((len(groups), int(groups.max()) + 1), dtype=dtype)  # (T, W)
    out[np.arange(len(groups)), groups] = 1.0
    return out


def merge_pieces(weights: np.ndarray, groups: list[int], key_groups: list[int] | None = None) -> np.ndarray:
    """(..., Tq, Tk) -> (..., Wq, Wk): columns (keys) of a word are summed, so rows still sum
    to 1; rows (queries) of a word are averaged, so a word attends like its pieces on
    average. ``key_groups`` for keys of another sequence (cross-attention)."""
    q_onehot = _onehot(groups, weights.dtype)                                   # (Tq, Wq)
    k_onehot = q_onehot if key_groups is None else _onehot(key_groups, weights.dtype)  # (Tk, Wk)
    summed_keys = weights @ k_onehot                                            # (..., Tq, Wk)
    mean_rows = q_onehot / q_onehot.sum(0, keepdims=True)                       # (Tq, Wq), columns sum to 1
    return mean_rows.T @ summed_keys                                            # (..., Wq, Wk)


# ---- the same weights in our encoder ----------------------------------------------------------
