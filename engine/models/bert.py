"""A BERT-style encoder: post-LN blocks, GELU, token-type and learned position embeddings.

The layout follows Hugging Face's ``modeling_bert.py`` so pretrained BERT weights load by a
small name map (engine.loading.hf): the config fields keep Hugging Face's names, and each layer is
attention -> residual + LayerNorm -> FFN -> residual + LayerNorm. Only the fused Q/K/V
projection differs: Hugging Face's separate query, key and value matrices are stacked.
"""
from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn

from attnscope.engine.models.layers import FeedForward, MultiHeadAttention, key_mask
from attnscope.engine.models.common import init_weights
from attnscope.engine.models.outputs import ENCODER_SELF, ModelOutput
from attnscope.engine.models.positional import LearnedPositionalEmbedding
from attnscope.engine.seam import Site


@dataclass
class BertConfig:
    vocab_size: int
    hidden_size: int = 128
    num_hidden_layers: int = 2
    num_attention_heads: int = 4
    intermediate_size: int = 512
    max_position_embeddings: int = 512
    type_vocab_size: int = 2
    layer_norm_eps: float = 1e-12
    hidden_dropout_prob: float = 0.1
    attention_probs_dropout_prob: float = 0.1
    pad_token_id: int = 0


class BertEmbeddings(nn.Module):
    def __init__(self, c: BertConfig):
        super().__init__()
        self.word_embeddings = nn.Embedding(c.vocab_size, c.hidden_size, padding_idx=c.pad_token_id)
        self.position_embeddings = LearnedPositionalEmbedding(c.max_position_embeddings, c.hidden_size)
        self.token_type_embeddings = nn.Embedding(c.type_vocab_size, c.hidden_size)
        self.LayerNorm = nn.LayerNorm(c.hidden_size, eps=c.layer_norm_eps)
        self.dropout = nn.Dropout(c.hidden_dropout_prob)

    def forward(self, input_ids, token_type_ids):  # (B, T) -> (B, T, D)
        positions = torch.arange(input_ids.size(1), device=input_ids.device)
        x = self.word_embeddings(input_ids) + self.position_embeddings(positions) + self.token_type_embeddings(token_type_ids)
        return self.dropout(self.LayerNorm(x))


class BertLayer(nn.Module):
    def __init__(self, c: BertConfig):
        super().__init__()
        self.attention = MultiHeadAttention(c.hidden_size, c.num_attention_heads, c.attention_probs_dropout_prob)
        self.attention_norm = nn.LayerNorm(c.hidden_size, eps=c.layer_norm_eps)
        self.ffn = FeedForward(c.hidden_size, c.intermediate_size, "gelu", 0.0)
        self.ffn_norm = nn.LayerNorm(c.hidden_size, eps=c.layer_norm_eps)
        self.dropout = nn.Dropout(c.hidden_dropout_prob)

    def forward(self, x, mask):
        a, _ = self.attention(x, mask=mask)
        x = self.attention_norm(x + self.dropout(a))
        return self.ffn_norm(x + self.dropout(self.ffn(x)))


class Bert(nn.Module):
    family = "bert"

    def __init__(self, config: BertConfig):
        super().__init__()
        self.config = config
        self.embeddings = BertEmbeddings(config)
        self.layers = nn.ModuleList(BertLayer(config) for _ in range(config.num_hidden_layers))
        for i, layer in enumerate(self.layers):
            layer.attention.site = Site(ENCODER_SELF, i)
        self.apply(init_weights)

    def forward(self, input_ids: torch.Tensor, token_type_ids: torch.Tensor | None = None,
                attention_mask: torch.Tensor | None = None) -> ModelOutput:
        """input_ids: (B, T); token_type_ids: (B, T) segment A=0 / B=1; attention_mask: (B, T)
        with 1 for real tokens (as in Hugging Face). Returns hidden states (B, T, D); logits is
        None: this is the bare encoder, as Hugging Face's BertModel."""
        if token_type_ids is None:
            token_type_ids = torch.zeros_like(input_ids)
        mask = key_mask(input_ids, attention_mask)
        x = self.embeddings(input_ids, token_type_ids)
        for layer in self.layers:
            x = layer(x, mask)
        return ModelOutput(None, x)
