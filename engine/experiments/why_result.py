"""What "why does this head attend here?" answers: one score split into source terms.

No torch here: the window draws a ``ScoreSplit`` (numpy and plain values) and the command
line prints it. engine.experiments.score_split computes it.

Names of the sources (the same on both sides of a self-attention call):
- ``embed``: the token embedding, with whatever scaling the model applies; ``pos``: learned
  or sinusoidal absolute positions; ``type``: token types (BERT's segments);
- ``L{l}.H{h}``: head h of layer l (its output through its slice of the output projection);
  ``L{l}.X{h}``: a cross-attention head; ``L{l}.mlp``: an MLP block, its own biases included;
- ``bias``: everything that does not depend on the tokens (projection biases, norm shifts);
- an encoder-decoder's encoder sources carry the prefix ``enc.``.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

FROZEN = "each norm's scale from this run"      # what the split holds fixed, said with every answer
BIAS = "bias"


@dataclass(frozen=True)
class Versus:
    """The same split for another key of the same row: softmax sees differences only."""
    key: int
    score: float
    weight: float
    terms: np.ndarray               # (Nq, Nk) float64, as ScoreSplit.terms

    def __eq__(self, other):        # numpy fields: compare by value
        return isinstance(other, Versus) and (self.key, self.score, self.weight) == (other.key, other.score,
                                                                                   other.weight) \
            and np.array_equal(self.terms, other.terms)


@dataclass(frozen=True)
class Loadings:
    """Which sources drive a head on this text: the attention-weighted mean of the table over
    the cells used (every cell of the head on a short text; otherwise the rows sampled, each
    over its strongest keys), and how much of those rows' weight the cells cover."""
    terms: np.ndarray               # (Nq, Nk) float64
    rows: tuple[int, ...]           # the query positions used
    keys_per_row: int | None        # None: every key each row sees
    coverage: float                 # the share of the rows' attention weight inside the cells used
    exact: bool                     # every row and every key

    def __eq__(self, other):
        return isinstance(other, Loadings) and (self.rows, self.keys_per_row, self.coverage, self.exact) == (
            other.rows, other.keys_per_row, other.coverage, other.exact) and np.array_equal(self.terms, other.terms)


@dataclass(frozen=True)
class ScoreSplit:
    """Head ``head`` of ``kind`` layer ``layer``: the score of query ``query`` for key ``key``,
    split. ``terms[a, b]`` is query-side source a with key-side source b (scaled as the score);
    they sum to ``score`` (before any soft-cap; ``position_bias`` is added after, apart from the
    table), and the softmax of the row's scores is ``weight``."""
    model: str
    kind: str
    layer: int
    head: int
    query: int
    key: int
    query_tokens: tuple[str, ...]   # the tokens on the query side, as the model reads them
    key_tokens: tuple[str, ...]
    query_ids: tuple[int, ...]
    key_ids: tuple[int, ...]
    score: float                    # the model's own q.k * scale
    weight: float                   # the model's own attention weight of the cell
    position_bias: float            # added to the score apart from the table (T5's bias, ALiBi); 0.0 if none
    query_sources: tuple[str, ...]
    key_sources: tuple[str, ...]
    terms: np.ndarray               # (Nq, Nk) float64
    versus: Versus | None = None
    loadings: Loadings | None = None
    notes: tuple[str, ...] = ()
    softcap: float | None = None    # Gemma 2: the weights see cap * tanh(score / cap)
    frozen: str = FROZEN
    exact_sum: float = 0.0          # the terms' sum (equals ``score`` to the model's rounding)

    def __eq__(self, other):
        return isinstance(other, ScoreSplit) and self.as_json() == other.as_json()

    @property
    def query_marginal(self) -> np.ndarray:
        """(Nq,) each query-side source summed over the key side."""
        return self.terms.sum(1)

    @property
    def key_marginal(self) -> np.ndarray:
        """(Nk,) each key-side source summed over the query side."""
        return self.terms.sum(0)

    def strongest(self, rows: int = 8, cols: int = 8, terms: np.ndarray | None = None
                  ) -> tuple[list[str], list[str], np.ndarray]:
        """The ``rows`` x ``cols`` sources with the largest marginals (by size), the rest of
        each side summed as one "other (N)": (row names, column names, table). Sums are kept:
        the table's total is the terms' total."""
        t = self.terms if terms is None else terms
        qi = _top(np.abs(t).sum(1), rows)
        ki = _top(np.abs(t).sum(0), cols)
        q_rest = [i for i in range(t.shape[0]) if i not in set(qi)]
        k_rest = [i for i in range(t.shape[1]) if i not in set(ki)]
        row_groups = [[i] for i in qi] + ([q_rest] if q_rest else [])
        col_groups = [[j] for j in ki] + ([k_rest] if k_rest else [])
        table = np.array([[t[np.ix_(r, c)].sum() for c in col_groups] for r in row_groups])
        names = lambda src, idx, rest: [src[i] for i in idx] + ([f"other ({len(rest)})"] if rest else [])  # noqa: E731
        return names(self.query_sources, qi, q_rest), names(self.key_sources, ki, k_rest), table

    def as_json(self) -> dict:
        """The object ``attnscope why --json`` prints."""
        out = {"model": self.model, "kind": self.kind, "layer": self.layer, "head": self.head, "query": self.query,
               "key": self.key, "tokens": list(self.query_tokens), "ids": list(self.query_ids),
               "score": self.score, "weight": self.weight, "position_bias": self.position_bias,
               "query_sources": list(self.query_sources), "key_sources": list(self.key_sources),
               "terms": self.terms.tolist(), "versus": None, "notes": list(self.notes),
               "query_marginal": self.query_marginal.tolist(), "key_marginal": self.key_marginal.tolist(),
               "frozen": self.frozen, "softcap": self.softcap, "sum_of_terms": self.exact_sum}
        if self.key_tokens != self.query_tokens:
            out["key_tokens"], out["key_ids"] = list(self.key_tokens), list(self.key_ids)
        if self.versus is not None:
            v = self.versus
            out["versus"] = {"key": v.key, "score": v.score, "weight": v.weight, "terms": v.terms.tolist(),
                             "difference": (self.terms - v.terms).tolist()}
        if self.loadings is not None:
            ld = self.loadings
            out["loadings"] = {"terms": ld.terms.tolist(), "rows": list(ld.rows), "keys_per_row": ld.keys_per_row,
                               "coverage": ld.coverage, "exact": ld.exact}
        return out


def _top(sizes: np.ndarray, n: int) -> list[int]:
    """Indices of the ``n`` largest ``sizes``, largest first (all of them when there are few)."""
    order = np.argsort(-sizes, kind="stable")
    return [int(i) for i in order[: n if len(sizes) > n + 1 else len(sizes)]]
