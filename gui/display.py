"""How weights are shown, not what they are: the display transforms views apply to a trace's
numbers before colouring them (hide special tokens, threshold, per-head scale, log colour).

Views (gui/views) and the CLI's export through gui/render use them; the engine computes
weights and never imports this module.
"""
from __future__ import annotations

import re

import numpy as np

SPECIAL_TOKENS = {"[CLS]", "[SEP]", "[PAD]", "[BOS]", "[EOS]", "[MASK]", "<s>", "</s>", "<pad>"}
UNKNOWN = {"[unk]", "<unk>"}   # an unknown word stands for a word of the text: never hidden
_SPECIAL_FORM = re.compile(r"^(\[[A-Z_]+\]|<\|?[A-Za-z_/|]+\|?>)$")   # [CLS], <s>, </s>, <|endoftext|>, <unk>
LOG_DECADES = 4   # the log colour scale spans weights 1e-4 .. 1


def special_mask(tokens: list[str]) -> np.ndarray:
    """(T,) bool: True for tokens to keep when special tokens are hidden: ours, BERT's, and every
    tokenizer's markers written as [NAME], <name>, </name> or <|name|> (not the unknown-word
    token, which stands for a word of the text)."""
    return np.array([t not in SPECIAL_TOKENS and (t.lower() in UNKNOWN or not _SPECIAL_FORM.match(t)) for t in tokens])


def display_weights(head: np.ndarray, threshold: float = 0.0, normalise: bool = False,
                    log_scale: bool = False) -> np.ndarray:
    """A (Tq, Tk) map prepared for drawing: scaled so its max is 1 (per-head
    normalisation), then cells below ``threshold`` set to 0 (hide weak links), then, with
    ``log_scale``, log10 of the weight over LOG_DECADES decades mapped to 0..1: at thousands of
    tokens a weight is ~1/T, and a linear scale draws every head black but its sink."""
    out = head.astype(np.float32, copy=True)
    if normalise and out.max() > 0:
        out /= out.max()
    if threshold > 0:
        out[out < threshold] = 0.0
    if log_scale:
        out = log_colour(out)
    return out


def log_colour(weights: np.ndarray) -> np.ndarray:
    """Weights (any shape) -> 0..1 on a log scale (1e-4 -> 0, 1 -> 1); an exact 0 (masked) stays 0."""
    with np.errstate(divide="ignore"):
        scaled = (np.log10(np.maximum(weights, 0.0)) + LOG_DECADES) / LOG_DECADES
    return np.clip(np.nan_to_num(scaled, neginf=0.0), 0.0, 1.0).astype(np.float32)
