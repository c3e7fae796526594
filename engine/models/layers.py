"""Scaled dot-product attention that can return its weights, masks, and multi-head attention.

Two paths compute the same thing:
- the *weights* path (``need_weights=True``) writes out softmax(QK^T / sqrt(d) + mask) so
  the GUI can draw it; masked cells are exactly 0 and every live row sums to 1;
- the *fused* path (``need_weights=False``) calls ``torch.nn.functional.scaled_dot_product_attention``
  for training and fast generation. tests/test_attention.py proves both give the same outputs.

Masks are boolean and broadcastable to (B, H, T_query, T_key): True means "may attend".
"""
from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

KVCache = tuple[torch.Tensor, torch.Tensor]  # (B, H, T_past, Dh) each


# ---- masks ---------------------------------------------------------------------------
def key_mask(ids: torch.Tensor, keep: torch.Tensor | None) -> torch.Tensor:
    """(B, T) keep mask (true or 1 for a real token, as Hugging Face's attention_mask) ->
    (B, 1, 1, T) keys that may be attended to; without one, every key. The mask comes from
    how a batch was padded, never from token ids: a typed "[PAD]" is a real token."""
    if keep is None:
        return torch.ones(ids.shape[0], 1, 1, ids.shape[1], dtype=torch.bool, device=ids.device)
    return keep.bool()[:, None, None, :]


def causal_mask(t_query: int, t_key: int | None = None, device=None) -> torch.Tensor:
    """(1, 1, Tq, Tk) look-ahead mask. With a KV cache the queries are the *last* Tq of the
    Tk positions, so query i may see keys up to (Tk - Tq + i)."""
    t_key = t_query if t_key is None else t_key
    full = torch.ones(t_query, t_key, dtype=torch.bool, device=device)
    return torch.tril(full, diagonal=t_key - t_query)[None, None]


def combine_masks(*masks: torch.Tensor | None) -> torch.Tensor | None:
    """Logical AND of the masks that are given (broadcasting), or None if none are."""
    out = None
    for m in masks:
        if m is not None:
            out = m if out is None else (out & m)
    return out


# ---- attention -----------------------------------------------------------------------
def scaled_dot_product_attention(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    mask: torch.Tensor | None = None,
    dropout_p: float = 0.0,
    need_weights: bool = True,
) -> tuple[torch.Tensor, torch.Tensor | None]:
    """q: (B, H, Tq, Dh), k and v: (B, H, Tk, Dh) -> (out (B, H, Tq, Dh), weights (B, H, Tq, Tk) or None).

    The returned weights are the probabilities *before* dropout, which is what a heatmap
    should show; dropout (training only) is applied to the copy that multiplies V.
    """
    if not need_weights:
        out = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, dropout_p=dropout_p)
        return out, None
    # Scale q (Tq x Dh) rather than the scores (Tq x Tk), and add the mask as a bias built on
    # the mask's own small shape: every extra pass over a (B, H, T, T) tensor costs at 512 tokens.
    scores = (q * (1.0 / math.sqrt(q.size(-1)))) @ k.transpose(-2, -1)  # (B, H, Tq, Tk)
    if mask is not None and not bool(mask.all()):
        bias = torch.zeros(mask.shape, dtype=scores.dtype, device=scores.device).masked_fill_(~mask, float("-inf"))
        scores += bias
        weights = torch.softmax(scores, dim=-1)  # masked cells: exp(-inf) = exactly 0
        dead = ~mask.any(dim=-1, keepdim=True)   # rows with every key masked would be NaN
        if bool(dead.any()):
            weights = weights.masked_fill(dead, 0.0)
    else:
        weights = torch.softmax(scores, dim=-1)
    attn = F.dropout(weights, p=dropout_p) if dropout_p > 0 else weights
    return attn @ v, weights


class MultiHeadAttention(nn.Module):
    """Multi-head attention with fused projections (names as in nanoGPT).

    Self-attention projects Q, K and V with one matrix ``c_attn`` (d -> 3d, split in that
    order); cross-attention projects Q from the decoder (``c_q``) and K, V from the encoder
    memory with one matrix ``c_kv``. ``c_proj`` mixes the heads back to d_model.
    """

    def __init__(self, d_model: int, n_head: int, dropout: float = 0.0, bias: bool = True, cross: bool = False):
        super().__init__()
        if d_model % n_head:
            raise ValueError(f"d_model={d_model} is not divisible by n_head={n_head}")
        self.d_model, self.n_head, self.head_dim = d_model, n_head, d_model // n_head
        self.cross = cross
        if cross:
            self.c_q = nn.Linear(d_model, d_model, bias=bias)
            self.c_kv = nn.Linear(d_model, 2 * d_model, bias=bias)
        else:
            self.c_attn = nn.Linear(d_model, 3 * d_model, bias=bias)
        self.c_proj = nn.Linear(d_model, d_model, bias=bias)
        self.dropout = dropout

    def _heads(self, x: torch.Tensor) -> torch.Tensor:
        b, t, _ = x.shape  # (B, T, D) -> (B, H, T, Dh)
        return x.view(b, t, self.n_head, self.head_dim).transpose(1, 2)

    def forward(
        self,
        x: torch.Tensor,                        # (B, Tq, D)
        memory: torch.Tensor | None = None,     # (B, Tk, D), cross-attention only
        mask: torch.Tensor | None = None,       # bool, broadcastable to (B, H, Tq, Tk)
        need_weights: bool = False,
        rotary=None,                            # engine.models.positional.RotaryEmbedding or None
        past: KVCache | None = None,
        use_cache: bool = False,
    ) -> tuple[torch.Tensor, torch.Tensor | None, KVCache | None]:
        """Returns (output (B, Tq, D), weights (B, H, Tq, Tk) or None, present KV cache or None).

        With a cache, self-attention appends the new keys/values to ``past``; cross-attention
        projects the memory once and reuses it on every later step.
        """
        b, tq, d = x.shape
        if self.cross:
            q = self._heads(self.c_q(x))
            if past is not None:
                k, v = past
            else:
                k, v = (self._heads(t) for t in self.c_kv(memory).split(d, dim=2))
        else:
            q, k, v = (self._heads(t) for t in self.c_attn(x).split(d, dim=2))
            t_past = 0 if past is None else past[0].size(2)
            if rotary is not None:
                positions = torch.arange(t_past, t_past + tq, device=x.device)
                q, k = rotary.rotate(q, positions), rotary.rotate(k, positions)
            if past is not None:
                k, v = torch.cat([past[0], k], dim=2), torch.cat([past[1], v], dim=2)
        p = self.dropout if self.training else 0.0
        out, weights = scaled_dot_product_attention(q, k, v, mask, p, need_weights)
        out = out.transpose(1, 2).contiguous().view(b, tq, d)  # (B, Tq, D)
        return self.c_proj(out), weights, ((k, v) if use_cache else None)


class FeedForward(nn.Module):
    """The position-wise two-layer network: d -> d_ff -> d (ReLU in the 2017 paper, GELU in GPT/BERT)."""

    def __init__(self, d_model: int, d_ff: int, activation: str = "relu", dropout: float = 0.0, bias: bool = True):
        super().__init__()
        self.c_fc = nn.Linear(d_model, d_ff, bias=bias)
        self.act = {"relu": nn.ReLU(), "gelu": nn.GELU()}[activation]
        self.c_proj = nn.Linear(d_ff, d_model, bias=bias)
        self.drop = nn.Dropout(dropout)

    def forward(self, x: torch.Tensor) -> torch.Tensor:  # (B, T, D) -> (B, T, D)
        return self.drop(self.c_proj(self.act(self.c_fc(x))))
