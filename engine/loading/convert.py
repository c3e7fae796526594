"""A Hugging Face BERT's weights in attnscope's own encoder, to compare the two implementations."""
from __future__ import annotations

import torch

from attnscope.engine.loading.loaded import LoadedModel
from attnscope.engine.errors import HFModelError
from attnscope.engine.models import Bert, BertConfig
from attnscope.engine.inputs import check_kind


class HFTokenizerAdapter:
    """A Hugging Face BERT tokenizer with the small interface engine.traces.tracing uses."""

    kind = "wordpiece"

    def __init__(self, hf_tokenizer):
        self.hf = hf_tokenizer

    vocab_size = property(lambda self: len(self.hf))
    pad_id = property(lambda self: self.hf.pad_token_id)
    unk_id = property(lambda self: self.hf.unk_token_id)
    cls_id = property(lambda self: self.hf.cls_token_id)
    sep_id = property(lambda self: self.hf.sep_token_id)
    mask_id = property(lambda self: self.hf.mask_token_id)
    bos_id = eos_id = None
    special_ids = property(lambda self: set(self.hf.all_special_ids))

    def encode(self, text: str) -> list[int]:
        return self.hf(text, add_special_tokens=False, verbose=False)["input_ids"]  # too long: the adapter's note

    def tokens(self, ids) -> list[str]:
        return self.hf.convert_ids_to_tokens([int(i) for i in ids])

    def decode(self, ids) -> str:
        return self.hf.decode([int(i) for i in ids], skip_special_tokens=True)

    def unknown_words(self, text: str) -> list[str]:
        enc = self.hf(text, add_special_tokens=False, return_offsets_mapping=True, verbose=False)
        return [text[a:b] for (a, b), i in zip(enc["offset_mapping"], enc["input_ids"]) if i == self.unk_id]


def hf_to_scratch(loaded: LoadedModel) -> LoadedModel:
    """Our ``engine.models.Bert`` carrying the Hugging Face model's weights (family "bert").

    The name map: HF's separate query/key/value are stacked into our fused ``c_attn``;
    ``attention.output.dense`` -> ``c_proj``; ``attention.output.LayerNorm`` -> ``attention_norm``;
    ``intermediate.dense`` -> ``ffn.c_fc``; ``output.dense`` -> ``ffn.c_proj``;
    ``output.LayerNorm`` -> ``ffn_norm``; embeddings keep their names; the pooler is unused."""
    check_kind(loaded, LoadedModel, "loaded", "a LoadedModel (engine.loading.open_model)")

    hc = loaded.model.config
    if getattr(hc, "position_embedding_type", "absolute") != "absolute" or hc.hidden_act not in ("gelu",):
        raise HFModelError("Only BERT models with absolute positions and exact GELU convert to attnscope's encoder.")
    config = BertConfig(vocab_size=hc.vocab_size, hidden_size=hc.hidden_size, num_hidden_layers=hc.num_hidden_layers,
                        num_attention_heads=hc.num_attention_heads, intermediate_size=hc.intermediate_size,
                        max_position_embeddings=hc.max_position_embeddings, type_vocab_size=hc.type_vocab_size,
                        layer_norm_eps=hc.layer_norm_eps, hidden_dropout_prob=hc.hidden_dropout_prob,
                        attention_probs_dropout_prob=hc.attention_probs_dropout_prob,
                        pad_token_id=hc.pad_token_id if hc.pad_token_id is not None else 0)
    src = {k: v.detach().cpu() for k, v in loaded.model.state_dict().items()}
    state = {k: src[k] for k in (
        "embeddings.word_embeddings.weight", "embeddings.position_embeddings.weight",
        "embeddings.token_type_embeddings.weight", "embeddings.LayerNorm.weight", "embeddings.LayerNorm.bias")}
    for i in range(hc.num_hidden_layers):
        h, o = f"encoder.layer.{i}.", f"layers.{i}."
        for p in ("weight", "bias"):
            state[o + "attention.c_attn." + p] = torch.cat([src[h + f"attention.self.{n}.{p}"] for n in ("query", "key", "value")])
            state[o + "attention.c_proj." + p] = src[h + "attention.output.dense." + p]
            state[o + "attention_norm." + p] = src[h + "attention.output.LayerNorm." + p]
            state[o + "ffn.c_fc." + p] = src[h + "intermediate.dense." + p]
            state[o + "ffn.c_proj." + p] = src[h + "output.dense." + p]
            state[o + "ffn_norm." + p] = src[h + "output.LayerNorm." + p]
    model = Bert(config)
    model.load_state_dict(state, strict=True)
    model.eval().to(loaded.device)
    return LoadedModel(f"{loaded.name} (attnscope encoder)", "bert", model, HFTokenizerAdapter(loaded.tokenizer),
                       meta={"source": loaded.meta.get("source"), "converted_from": loaded.name})
