"""What one attention call computes with, and the exact weights it implies.

An ``AttentionCall`` is the seam's unit: the site, the tensors as the model uses them, and
the additive terms. Its ``scores`` and ``weights`` are the eager maths written once:
softmax(softcap(q k^T * scale) + bias + mask), masked cells exactly 0, a row with every key
masked all 0. A model with attention sinks (gpt-oss's learned ``s_aux``: one logit per head)
has one more term in each row's softmax denominator, exp(sink), that reads no value: its
rows sum to less than 1, as its eager attention's do. The recorded trace, the neuron view
and the decoding rows all read weights from here, so there is one definition of "the
attention weights" in the engine.
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace

import torch


@dataclass(frozen=True)
class Site:
    """Where a call happens: the attention kind (engine.kinds) and the layer within it."""
    kind: str
    layer: int

    def __str__(self) -> str:
        return f"{self.kind} {self.layer}"


@dataclass
class AttentionCall:
    site: Site | None
    q: torch.Tensor                      # (B, Hq, Tq, Dh) after rotary, as the model uses them
    k: torch.Tensor                      # (B, Hkv, Tk, Dh) one per key/value head (GQA: Hkv <= Hq)
    v: torch.Tensor | None               # (B, Hkv, Tk, Dv); None once a recording lets it go
    mask: torch.Tensor | None = None     # bool (True = may attend) or additive float, broadcastable to (B, H, Tq, Tk)
    bias: torch.Tensor | None = None     # additive float (T5's relative bias, ALiBi), broadcastable to (B, H, Tq, Tk)
    scale: float = 1.0                   # scores = q.k * scale
    softcap: float | None = None         # Gemma 2: scores = cap * tanh(scores / cap), before bias and mask
    window: int | None = None            # sliding window (already in the mask; said for the user)
    causal: bool = False                 # no mask given: query i sees keys up to i (Tq == Tk), as sdpa's is_causal
    dropout: float = 0.0
    module: object = None                # the calling module (site discovery only)
    lse: torch.Tensor | None = None      # (B, Hq, Tq) each query's log-sum-exp (sink included), when the kernel gave it
    sink: torch.Tensor | None = None     # (Hq,) each query head's sink logit, or (B, Hq, Tq) each query's (Inkling 2
                                         # projects it from the token): one more softmax term, with no value
    chosen: int | None = None            # a sparse attention: the keys its indexer picks per query (already in the mask)
    group: int = field(init=False)       # query heads per key/value head (1 without grouped-query attention)

    def __post_init__(self) -> None:
        # Known once the call is built (its q and k are never swapped for others: a changed call is
        # a ``replace``, built again), and asked by every kernel choice, each head's key head and the
        # scores: a field, not a property computed again at each ask.
        self.group = self.q.shape[1] // self.k.shape[1]

    def kv_head(self, head: int) -> int:
        return head // self.group

    def detached(self, keep_values: bool = False) -> "AttentionCall":
        """A copy that keeps no graph, no module and (unless asked) no values: what a recording holds."""
        d = lambda t: None if t is None else t.detach()  # noqa: E731
        return replace(self, q=d(self.q), k=d(self.k), v=d(self.v) if keep_values else None, mask=d(self.mask),
                       bias=d(self.bias), module=None, lse=d(self.lse), sink=d(self.sink))

    def additive(self, dtype=torch.float32) -> torch.Tensor | None:
        """bias + mask + causal triangle as one additive term (-inf where masked), broadcastable
        to (B, H, Tq, Tk). Built for every query: at long T ask ``terms`` for the rows you need."""
        return self.terms(None, None, slice(None), dtype)

    def _pick(self, x: torch.Tensor, b: int | None, heads: list[int] | None, rows: slice) -> torch.Tensor:
        """(B|1, H|1, Tq|1, Tk) -> the part for example ``b``, query ``heads`` and queries ``rows``."""
        if b is not None and x.shape[0] > 1:
            x = x[b:b + 1]
        if heads is not None and x.shape[1] > 1:
            x = x[:, heads]
        return x[:, :, rows] if x.shape[2] > 1 else x

    def _future(self, rows: slice) -> torch.Tensor:
        """(tq, Tk) bool: the keys after each query of ``rows`` (the causal triangle, bottom-right aligned)."""
        tq_all, tk = self.q.shape[2], self.k.shape[2]
        start, stop, _ = rows.indices(tq_all)
        qpos = torch.arange(start, stop, device=self.q.device) + (tk - tq_all)
        return torch.arange(tk, device=self.q.device)[None, :] > qpos[:, None]

    def terms(self, b: int | None, heads: list[int] | None, rows: slice, dtype=torch.float32) -> torch.Tensor | None:
        """The additive term for example ``b`` (None: all), query heads ``heads`` (None: all) and
        the queries ``rows`` only, (B|1, h|1, tq, Tk): a (T, T) float mask is never built whole,
        which at 8k tokens would be 268 MB a layer."""
        out = None if self.bias is None else self._pick(self.bias, b, heads, rows).to(dtype)
        if self.mask is not None or self.causal:
            shape = (1, 1, len(range(*rows.indices(self.q.shape[2]))), self.k.shape[2])
            for x in (out, None if self.mask is None else self._pick(self.mask, b, heads, rows)):
                shape = torch.broadcast_shapes(shape, x.shape) if x is not None else shape
            zero = torch.zeros(shape, dtype=dtype, device=self.q.device)
            out = self.mask_scores(zero if out is None else out + zero, b, heads, rows)
        return out

    def mask_scores(self, s: torch.Tensor, b: int | None, heads: list[int] | None, rows: slice,
                    cols: slice = slice(None)) -> torch.Tensor:
        """``s`` (B|1, h|1, tq, tk) with the mask and the causal triangle applied: -inf where a key
        may not be seen, in place where it can be (one pass over the scores, no float mask)."""
        if self.mask is not None:
            m = self._pick(self.mask, b, heads, rows)[..., cols]
            if m.dtype == torch.bool:
                s = s.masked_fill_(~m, float("-inf")) if s.shape == torch.broadcast_shapes(s.shape, m.shape) \
                    else s.masked_fill(~m, float("-inf"))
            else:   # Hugging Face's float masks use the dtype's minimum: the same cells, exactly -inf
                s = s.masked_fill(m <= torch.finfo(m.dtype).min / 2, float("-inf"))
                s = s + m.masked_fill(m <= torch.finfo(m.dtype).min / 2, 0.0).to(s.dtype)
        if self.causal:
            tq_all, tk_all = self.q.shape[2], self.k.shape[2]
            (r0, r1, rs), (c0, c1, cs) = rows.indices(tq_all), cols.indices(tk_all)
            if s.shape[-2:] != (len(range(r0, r1, rs)), len(range(c0, c1, cs))) or rs != 1 or cs != 1:
                return s.masked_fill(self._future(rows)[:, cols], float("-inf"))
            # Only keys after the block's first query are ever masked: the triangle is built for
            # those columns alone (at 8k tokens a block of rows sees thousands of keys and masks
            # a handful), bottom-right aligned as sdpa's is_causal.
            first = min(max(c0, r0 + (tk_all - tq_all) + 1), c1)
            if first < c1:
                qpos = torch.arange(r0, r1, device=s.device) + (tk_all - tq_all)      # (tq,)
                future = torch.arange(first, c1, device=s.device)[None, :] > qpos[:, None]   # (tq, c1 - first)
                s[..., first - c0:].masked_fill_(future, float("-inf"))
        return s

    def scores(self, b: int | None = 0, heads=None, rows=None, cols=None, scaled: bool = True) -> torch.Tensor:
        """Pre-softmax scores, float32, bias and mask added: (H, tq, tk) of example ``b``, or
        (B, H, tq, tk) of every example when ``b`` is None. ``heads``: query heads (list or
        slice; all by default); ``rows`` / ``cols``: slices of queries / keys. With every head,
        query heads are grouped over their shared key head, never copied out per head.
        ``scaled=False`` (a call with no softcap and no bias only): q.k without the scale, for a
        caller that scales what it keeps of them (a block's max) instead of every score."""
        assert scaled or (self.softcap is None and self.bias is None), "unscaled scores need a plain call"
        scale = self.scale if scaled else 1.0
        n_heads = self.q.shape[1]
        heads = self._heads(heads)
        rows = slice(None) if rows is None else rows
        cols = slice(None) if cols is None else cols
        ex = slice(None) if b is None else slice(b, b + 1)
        k = self.k[ex][:, :, cols]                                               # (B, Hkv, tk, Dh)
        if heads == list(range(n_heads)):
            q = self.q[ex][:, :, rows]                                           # (B, H, tq, Dh)
            bq, _, tq, dh = q.shape
            # The g query heads of one key head as one matrix of g * tq rows: a single matmul per
            # key head, k read once (broadcasting k over a group axis instead copies it g times
            # and runs g small matmuls: 4x slower at 8k tokens with GQA).
            q = q.reshape(bq, k.shape[1], self.group * tq, dh)                   # (B, Hkv, g*tq, Dh)
            s = scaled_products(q, k, scale).view(bq, n_heads, tq, k.shape[2])   # (B, H, tq, tk)
        else:
            q = self.q[ex][:, heads, rows]                                       # (B, h, tq, Dh)
            s = scaled_products(q, k[:, [self.kv_head(h) for h in heads]], scale)   # (B, h, tq, tk)
        if self.softcap:
            s = self.softcap * torch.tanh(s / self.softcap)
        picked = None if len(heads) == n_heads else heads
        if self.bias is not None:
            s += self._pick(self.bias, b, picked, rows)[..., cols].float()
        s = self.mask_scores(s, b, picked, rows, cols)                           # -inf where masked, in place
        return s if b is None else s[0]

    def _heads(self, heads) -> list[int]:
        """Query heads asked as None (all), a slice or a list -> a list."""
        n_heads = self.q.shape[1]
        heads = range(n_heads) if heads is None else heads
        return list(range(*heads.indices(n_heads))) if isinstance(heads, slice) else list(heads)

    def sink_logits(self, b: int | None = 0, heads=None, rows=None) -> torch.Tensor | None:
        """The sink logit of query ``heads`` for the queries ``rows`` (a slice; all by default) as
        scores' rows see it, float32: (h, 1) for one per head, (h, tq) for one per query; with
        ``b`` None (every example) (1, h, 1) or (B, h, tq). None for a call without sinks."""
        if self.sink is None:
            return None
        picked = self._heads(heads)
        if self.sink.dim() == 1:
            s = self.sink.float()[picked][:, None]                               # (h, 1)
            return s if b is not None else s[None]
        s = self.sink.float()[:, picked] if b is None else self.sink.float()[b][picked]   # (B, h, Tq) | (h, Tq)
        return s if rows is None else s[..., rows]

    def log_denominators(self, scores: torch.Tensor, b: int | None = 0, heads=None, rows=None) -> torch.Tensor:
        """Each row's log-sum-exp of ``scores`` (the queries ``rows``, every key of them, as
        ``scores`` gives them) with the sink's term: the log of the softmax's denominator, (..., tq)."""
        return row_log_denominators(scores, self.sink_logits(b, heads, rows))

    def weights(self, b: int | None = 0, heads=None, rows=None) -> torch.Tensor:
        """softmax of ``scores`` over every key (same arguments and shape), the sink in the
        denominator; masked cells 0, a fully masked row 0."""
        return softmax_rows(self.scores(b, heads, rows), self.sink_logits(b, heads, rows))


def scaled_products(q: torch.Tensor, k: torch.Tensor, scale: float) -> torch.Tensor:
    """(B, H, n, Dh) x (B, H, tk, Dh) -> (B, H, n, tk) float32 scores q.k * scale.

    Half-precision queries and keys on a GPU are multiplied by the tensor cores straight into
    float32 (``torch.bmm(out_dtype=float32)``): a product of two bf16 or fp16 numbers is exact
    in float32 and the sums accumulate in float32, so the scores equal those of the inputs
    upcast first, to float32 rounding, at the tensor cores' speed and without float32 copies
    of q and k (the scale is applied after, so the inputs are not rounded again). Elsewhere
    (a CPU, float32 models) the inputs are upcast and scaled, as always."""
    if q.is_cuda and q.dtype in (torch.float16, torch.bfloat16) and k.dtype == q.dtype and _HALF_BMM[0]:
        b, h, n, d = q.shape
        try:
            s = torch.bmm(q.reshape(b * h, n, d), k.reshape(b * h, k.shape[2], d).transpose(1, 2),
                          out_dtype=torch.float32)                               # (B*H, n, tk)
            s = s.view(b, h, n, k.shape[2])
            return s if scale == 1.0 else s.mul_(scale)
        except (RuntimeError, TypeError):        # a torch without bmm's out_dtype: upcast, as below
            _HALF_BMM[0] = False
    # q times the scale always (1.0 too): a fresh, contiguous q, so the sums run in the same
    # order whatever layout the recording has (a view from the forward, or a file read back).
    return (q.float() * scale) @ k.float().transpose(-1, -2)


_HALF_BMM = [True]      # whether this torch multiplies half precision into float32 (found once)


def row_log_denominators(scores: torch.Tensor, sink: torch.Tensor | None = None) -> torch.Tensor:
    """(..., tq, tk) scores -> (..., tq) log(sum_j exp(s_j) + exp(sink)): the log of each row's
    softmax denominator; ``sink`` (..., 1) broadcast over the rows, None for no sink term."""
    lse = torch.logsumexp(scores, -1)
    return lse if sink is None else torch.logaddexp(lse, sink)


def softmax_rows(scores: torch.Tensor, sink: torch.Tensor | None = None) -> torch.Tensor:
    """softmax over the last axis where exp(-inf) = 0 and a row of only -inf gives 0, not NaN.
    ``sink`` (..., 1): one more logit in each row's denominator (its weight not returned), so
    the row sums to sigmoid(lse - sink) < 1; a row with every key masked is still 0."""
    if sink is not None:
        w = (scores - row_log_denominators(scores, sink)[..., None]).exp()
        return torch.nan_to_num(w, nan=0.0)
    w = torch.softmax(scores, dim=-1)
    # In place unless a backward will read w (attribution patching through Gemma 2's eager path).
    return torch.nan_to_num(w, nan=0.0) if w.requires_grad else torch.nan_to_num_(w, nan=0.0)
