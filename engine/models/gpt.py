"""A decoder-only GPT, in the spirit of nanoGPT's model.py: one readable file.

Pre-LN blocks, GELU MLP, causal self-attention, learned positions (GPT-2) or rotary (RoPE)
by config, and an output head tied to the token embedding. Parameter names follow nanoGPT
(``transformer.wte``, ``transformer.h.0.attn.c_attn`` ...) so its checkpoints load by name.
"""
from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn

from attnscope.engine.models.layers import FeedForward, MultiHeadAttention, causal_mask
from attnscope.engine.models.common import init_weights
from attnscope.engine.models.outputs import DECODER_SELF, ModelOutput
from attnscope.engine.models.positional import LearnedPositionalEmbedding, RotaryEmbedding
from attnscope.engine.seam import Site


@dataclass
class GPTConfig:
    vocab_size: int
    block_size: int = 256        # the longest context
    n_layer: int = 4
    n_head: int = 4
    n_embd: int = 128
    dropout: float = 0.0
    bias: bool = True
    position: str = "learned"    # "learned" (GPT-2) or "rope"
    rope_base: float = 10000.0


class Block(nn.Module):
    def __init__(self, c: GPTConfig):
        super().__init__()
        self.ln_1 = nn.LayerNorm(c.n_embd, bias=c.bias)
        self.attn = MultiHeadAttention(c.n_embd, c.n_head, c.dropout, c.bias)
        self.ln_2 = nn.LayerNorm(c.n_embd, bias=c.bias)
        self.mlp = FeedForward(c.n_embd, 4 * c.n_embd, "gelu", c.dropout, c.bias)
        self.resid_drop = nn.Dropout(c.dropout)

    def forward(self, x, mask, rotary=None, past=None, use_cache=False, positions=None):
        a, present = self.attn(self.ln_1(x), mask=mask, rotary=rotary, past=past, use_cache=use_cache,
                               positions=positions)
        x = x + self.resid_drop(a)
        x = x + self.mlp(self.ln_2(x))
        return x, present


class GPT(nn.Module):
    family = "gpt"

    def __init__(self, config: GPTConfig):
        super().__init__()
        c = self.config = config
        if c.position not in ("learned", "rope"):
            raise ValueError(f"position must be 'learned' or 'rope', got {c.position!r}")
        parts = dict(
            wte=nn.Embedding(c.vocab_size, c.n_embd),
            drop=nn.Dropout(c.dropout),
            h=nn.ModuleList(Block(c) for _ in range(c.n_layer)),
            ln_f=nn.LayerNorm(c.n_embd, bias=c.bias),
        )
        if c.position == "learned":
            parts["wpe"] = LearnedPositionalEmbedding(c.block_size, c.n_embd)
        self.transformer = nn.ModuleDict(parts)
        for i, block in enumerate(self.transformer.h):
            block.attn.site = Site(DECODER_SELF, i)
        self.rotary = RotaryEmbedding(c.n_embd // c.n_head, c.rope_base) if c.position == "rope" else None
        self.lm_head = nn.Linear(c.n_embd, c.vocab_size, bias=False)
        self.lm_head.weight = self.transformer.wte.weight  # weight tying
        self.apply(init_weights)

    def forward(self, idx: torch.Tensor, past=None, use_cache: bool = False,
                key_mask: torch.Tensor | None = None, positions: torch.Tensor | None = None) -> ModelOutput:
        """idx: (B, T) token ids (only the new ones when ``past`` is given) -> logits (B, T, V).

        key_mask: optional (B, 1, 1, T_total) padding mask for right-padded batches.
        positions: (T,) each token's position, when the tokens are not a run from the start
        (a few positions of a text read alone: engine.experiments.score_split).
        """
        b, t = idx.shape
        t_past = 0 if past is None else past[0][0].size(2)
        if t_past + t > self.config.block_size:
            raise ValueError(f"sequence of {t_past + t} tokens is longer than the context of {self.config.block_size}")
        x = self.transformer.wte(idx)
        if "wpe" in self.transformer:
            x = x + self.transformer.wpe(torch.arange(t_past, t_past + t, device=idx.device) if positions is None
                                         else positions)
        x = self.transformer.drop(x)
        mask = causal_mask(t, t_past + t, device=idx.device)
        if key_mask is not None:
            mask = mask & key_mask
        present = []
        for i, block in enumerate(self.transformer.h):
            x, kv = block(x, mask, self.rotary, None if past is None else past[i], use_cache, positions)
            present.append(kv)
        x = self.transformer.ln_f(x)
        return ModelOutput(self.lm_head(x), x, present if use_cache else None)
