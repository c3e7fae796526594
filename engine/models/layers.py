"""The layers our three families share: masks, multi-head attention, the feed-forward block.

Attention weights are never returned by a layer: every call goes through the seam
(engine.seam), which computes the output with the fused kernel and lets a recorder keep the
queries and keys the weights come from (tests/engine/test_attention.py checks both against eager).

Masks are boolean and broadcastable to (B, H, T_query, T_key): True means "may attend".
"""
from __future__ import annotations

import math

import torch
from torch import nn

from attnscope.engine.seam import AttentionCall, Site, attend

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
class MultiHeadAttention(nn.Module):
    """Multi-head attention with fused projections (names as in nanoGPT).

    Self-attention projects Q, K and V with one matrix ``c_attn`` (d -> 3d, split in that
    order); cross-attention projects Q from the decoder (``c_q``) and K, V from the encoder
    memory with one matrix ``c_kv``. ``c_proj`` mixes the heads back to d_model. The
    attention itself is the seam's (engine.seam.attend), at ``site``, which the model sets:
    that is where a trace records it and an intervention changes it.
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
        self.site: Site | None = None   # set by the model that owns this module

    def _heads(self, x: torch.Tensor) -> torch.Tensor:
        b, t, _ = x.shape  # (B, T, D) -> (B, H, T, Dh)
        return x.view(b, t, self.n_head, self.head_dim).transpose(1, 2)

    def forward(
        self,
        x: torch.Tensor,                        # (B, Tq, D)
        memory: torch.Tensor | None = None,     # (B, Tk, D), cross-attention only
        mask: torch.Tensor | None = None,       # bool, broadcastable to (B, H, Tq, Tk)
        rotary=None,                            # engine.models.positional.RotaryEmbedding or None
        past: KVCache | None = None,
        use_cache: bool = False,
        positions: torch.Tensor | None = None,  # (Tq,) rotary positions, when not a run after the cache
    ) -> tuple[torch.Tensor, KVCache | None]:
        """Returns (output (B, Tq, D), present KV cache or None).

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
                positions = torch.arange(t_past, t_past + tq, device=x.device) if positions is None else positions
                q, k = rotary.rotate(q, positions), rotary.rotate(k, positions)
            if past is not None:
                k, v = torch.cat([past[0], k], dim=2), torch.cat([past[1], v], dim=2)
        p = self.dropout if self.training else 0.0
        out = attend(AttentionCall(self.site, q, k, v, mask=mask, scale=1.0 / math.sqrt(self.head_dim), dropout=p))
        out = out.transpose(1, 2).contiguous().view(b, tq, d)  # (B, Tq, D)
        return self.c_proj(out), ((k, v) if use_cache else None)


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
