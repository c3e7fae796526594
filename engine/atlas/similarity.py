"""Head similarity: how alike two heads attend, on rows every head is read on.

In each document the same few query rows (``ROWS``, the document's lowest sample priorities)
are read in every head of every layer, whole: a (heads, rows x keys) matrix X whose Gram
matrix X X^T is summed over documents (float64, (heads, heads): bounded by the model, not the
corpus). The similarity of heads a and b is the cosine of their attention rows over all those
rows, G_ab / sqrt(G_aa G_bb): 1 when they attend alike on every row, 0 when they never share a
key. The order that clusters it is a spectral seriation (Atkins, Boman and Hendrickson, 1998):
heads sorted by the Fiedler vector of the similarity graph's Laplacian, so similar heads sit
together.
"""
from __future__ import annotations

import numpy as np
import torch

from attnscope.engine.atlas.state import SAMPLE_SEED

ROWS = 8       # query rows per document read in every head


def similarity_rows(doc: int, T: int) -> np.ndarray:
    """The document's ``ROWS`` rows of lowest sample priority (the same draw as the sample's), in order."""
    pri = np.random.default_rng([SAMPLE_SEED, doc]).random(T)
    return np.sort(np.argsort(pri, kind="stable")[:ROWS])


def fold_gram(a: dict, rows: torch.Tensor) -> None:
    """(L, H, n, Tk) whole attention rows of every head -> added to the heads' Gram matrix."""
    x = rows.reshape(rows.shape[0] * rows.shape[1], -1).double()                  # (L*H, n*Tk)
    a["sim.gram"] += (x @ x.T).cpu().numpy()


def similarity(gram: np.ndarray) -> np.ndarray:
    """(N, N) cosine similarity of the heads' attention rows."""
    d = np.sqrt(np.clip(np.diag(gram), 0, None))
    with np.errstate(invalid="ignore", divide="ignore"):
        sim = gram / np.outer(d, d)
    return np.nan_to_num(sim, nan=0.0)


def seriation(sim: np.ndarray) -> list[int]:
    """Heads in an order that puts similar ones together (the Laplacian's Fiedler vector)."""
    n = len(sim)
    if n < 3:
        return list(range(n))
    w = np.clip(sim, 0, None)
    np.fill_diagonal(w, 0.0)
    lap = np.diag(w.sum(1)) - w
    _, vecs = np.linalg.eigh(lap)
    return [int(i) for i in np.argsort(vecs[:, 1], kind="stable")]
