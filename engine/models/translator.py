"""The encoder-decoder translator of "Attention Is All You Need", small and readable.

Post-LN blocks by default (the paper's order: x = LN(x + Sublayer(x))), pre-LN by option;
ReLU position-wise FFN; sinusoidal positions added to embeddings scaled by sqrt(d_model);
padding masks on the source, look-ahead mask on the target, cross-attention from every
decoder layer to the encoder's output. ``encode`` and ``decode`` are separate so decoding
can run one step at a time with a KV cache (engine.decoding.session).
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import torch
from torch import nn

from attnscope.engine.models.layers import FeedForward, MultiHeadAttention, causal_mask, key_mask
from attnscope.engine.models.common import init_weights
from attnscope.engine.models.outputs import CROSS, DECODER_SELF, ENCODER_SELF, ModelOutput
from attnscope.engine.models.positional import SinusoidalPositionalEncoding
from attnscope.engine.seam import Site


@dataclass
class TranslatorConfig:
    src_vocab_size: int
    tgt_vocab_size: int
    d_model: int = 128
    n_head: int = 4
    n_encoder_layers: int = 3
    n_decoder_layers: int = 3
    d_ff: int = 512
    dropout: float = 0.1
    max_len: int = 256
    norm_first: bool = False        # False: post-LN as in the paper; True: pre-LN
    share_embeddings: bool = False  # one vocabulary: source, target and output share weights
    pad_id: int = 0


class _Residual(nn.Module):
    """x + dropout(sublayer(...)), with LayerNorm after (post-LN) or before (pre-LN)."""

    def __init__(self, d_model: int, dropout: float, norm_first: bool):
        super().__init__()
        self.norm = nn.LayerNorm(d_model)
        self.drop = nn.Dropout(dropout)
        self.norm_first = norm_first

    def forward(self, x, sublayer):
        if self.norm_first:
            out, *rest = sublayer(self.norm(x))
            return (x + self.drop(out), *rest)
        out, *rest = sublayer(x)
        return (self.norm(x + self.drop(out)), *rest)


class EncoderLayer(nn.Module):
    def __init__(self, c: TranslatorConfig):
        super().__init__()
        self.self_attn = MultiHeadAttention(c.d_model, c.n_head, c.dropout)
        self.ffn = FeedForward(c.d_model, c.d_ff, "relu", 0.0)
        self.res_attn = _Residual(c.d_model, c.dropout, c.norm_first)
        self.res_ffn = _Residual(c.d_model, c.dropout, c.norm_first)

    def forward(self, x, mask):  # (B, S, D) -> (B, S, D)
        x, _ = self.res_attn(x, lambda h: self.self_attn(h, mask=mask))
        (x,) = self.res_ffn(x, lambda h: (self.ffn(h),))
        return x


class DecoderLayer(nn.Module):
    def __init__(self, c: TranslatorConfig):
        super().__init__()
        self.self_attn = MultiHeadAttention(c.d_model, c.n_head, c.dropout)
        self.cross_attn = MultiHeadAttention(c.d_model, c.n_head, c.dropout, cross=True)
        self.ffn = FeedForward(c.d_model, c.d_ff, "relu", 0.0)
        self.res_self = _Residual(c.d_model, c.dropout, c.norm_first)
        self.res_cross = _Residual(c.d_model, c.dropout, c.norm_first)
        self.res_ffn = _Residual(c.d_model, c.dropout, c.norm_first)

    def forward(self, y, memory, self_mask, cross_mask, past=None, use_cache=False):
        past_self, past_cross = past if past is not None else (None, None)
        y, kv_self = self.res_self(y, lambda h: self.self_attn(h, mask=self_mask, past=past_self, use_cache=use_cache))
        y, kv_cross = self.res_cross(y, lambda h: self.cross_attn(h, memory, cross_mask, past=past_cross,
                                                                   use_cache=use_cache))
        (y,) = self.res_ffn(y, lambda h: (self.ffn(h),))
        return y, ((kv_self, kv_cross) if use_cache else None)


class Translator(nn.Module):
    family = "translator"

    def __init__(self, config: TranslatorConfig):
        super().__init__()
        c = self.config = config
        self.src_embed = nn.Embedding(c.src_vocab_size, c.d_model, padding_idx=c.pad_id)
        self.tgt_embed = self.src_embed if c.share_embeddings else nn.Embedding(c.tgt_vocab_size, c.d_model, padding_idx=c.pad_id)
        self.positions = SinusoidalPositionalEncoding(c.d_model, c.max_len)
        self.drop = nn.Dropout(c.dropout)
        self.encoder = nn.ModuleList(EncoderLayer(c) for _ in range(c.n_encoder_layers))
        self.decoder = nn.ModuleList(DecoderLayer(c) for _ in range(c.n_decoder_layers))
        # Pre-LN stacks end with a LayerNorm; post-LN stacks are already normalised.
        self.enc_norm = nn.LayerNorm(c.d_model) if c.norm_first else nn.Identity()
        self.dec_norm = nn.LayerNorm(c.d_model) if c.norm_first else nn.Identity()
        self.generator = nn.Linear(c.d_model, c.tgt_vocab_size)
        if c.share_embeddings:
            self.generator.weight = self.tgt_embed.weight
        for i, layer in enumerate(self.encoder):
            layer.self_attn.site = Site(ENCODER_SELF, i)
        for i, layer in enumerate(self.decoder):
            layer.self_attn.site, layer.cross_attn.site = Site(DECODER_SELF, i), Site(CROSS, i)
        self.apply(init_weights)

    def _embed(self, embedding: nn.Embedding, ids: torch.Tensor, start: int = 0) -> torch.Tensor:
        return self.drop(self.positions(embedding(ids) * math.sqrt(self.config.d_model), start))

    def encode(self, src: torch.Tensor, src_keep: torch.Tensor | None = None):
        """src: (B, S) -> memory (B, S, D), source key mask (B, 1, 1, S).

        ``src_keep`` (B, S) is true for real tokens (Hugging Face's attention_mask); without it
        every position is real. Padding is known from how a batch was built, never from the
        ids: a user who types "[PAD]" gets a token that is attended to, as in Hugging Face."""
        mask = key_mask(src, src_keep)
        x = self._embed(self.src_embed, src)
        for layer in self.encoder:
            x = layer(x, mask)
        return self.enc_norm(x), mask

    def decode(self, tgt, memory, src_mask, past=None, use_cache=False,
               tgt_keep: torch.Tensor | None = None) -> ModelOutput:
        """tgt: (B, T) target ids (only the new ones when ``past`` holds the cache of earlier steps);
        ``tgt_keep`` (B, T): true for real (not padding) targets, as ``src_keep`` in encode.

        Returns logits (B, T, V_tgt) and ``present`` for the next step when use_cache.
        """
        t_past = 0 if past is None else past[0][0][0].size(2)
        t = tgt.size(1)
        self_mask = causal_mask(t, t_past + t, device=tgt.device)
        if tgt_keep is not None:  # padded targets in a batch; a cache is only used one example-batch at a time
            self_mask = self_mask & key_mask(tgt, tgt_keep)
        y = self._embed(self.tgt_embed, tgt, start=t_past)
        present = []
        for i, layer in enumerate(self.decoder):
            y, kv = layer(y, memory, self_mask, src_mask, None if past is None else past[i], use_cache)
            present.append(kv)
        y = self.dec_norm(y)
        return ModelOutput(self.generator(y), y, present if use_cache else None)

    def forward(self, src: torch.Tensor, tgt: torch.Tensor,
                src_keep: torch.Tensor | None = None, tgt_keep: torch.Tensor | None = None) -> ModelOutput:
        """src: (B, S), tgt: (B, T) decoder input (starting with BOS) -> logits (B, T, V_tgt);
        the keep masks (B, S) / (B, T) mark real tokens in a padded batch (see encode)."""
        memory, src_mask = self.encode(src, src_keep)
        return self.decode(tgt, memory, src_mask, tgt_keep=tgt_keep)

