"""Tiny random decoders whose heads carry attention sinks (a learned logit per head that joins
every row's softmax denominator and reads no value), saved like a user's folder: shared by
tests/engine/test_attention_sinks.py, the atlas's tests and the new doors' tests."""
from __future__ import annotations

from pathlib import Path

import torch

from tests.helpers.hf_tiny import _bpe_tokenizer

SMALL = dict(hidden_size=32, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
             max_position_embeddings=64, pad_token_id=0, bos_token_id=1, eos_token_id=2)
SLIDING_THEN_FULL = dict(sliding_window=4, layer_types=["sliding_attention", "full_attention"])


def sink_config(family: str, vocab: int):
    """A tiny config of ``family``: 2 layers (a sliding-window one, then a full one), 4 query
    heads sharing 2 key/value heads, a few experts where the family has them."""
    import transformers as tf

    if family == "gpt_oss":
        return tf.GptOssConfig(vocab_size=vocab, intermediate_size=64, head_dim=8, num_local_experts=4,
                               num_experts_per_tok=2, **SLIDING_THEN_FULL, **SMALL)
    if family == "granite_swa":
        return tf.GraniteSWAConfig(vocab_size=vocab, intermediate_size=64, **SLIDING_THEN_FULL, **SMALL)
    if family == "granitemoe_swa":
        return tf.GraniteMoeSWAConfig(vocab_size=vocab, intermediate_size=64, num_local_experts=4,
                                      num_experts_per_tok=2, **SLIDING_THEN_FULL, **SMALL)
    if family == "flint":
        return tf.FlintConfig(vocab_size=vocab, intermediate_size=64, head_dim=8, moe_intermediate_size=16,
                              shared_expert_intermediate_size=16, num_experts=4, num_experts_per_tok=2,
                              mlp_only_layers=[0], **SLIDING_THEN_FULL, **SMALL)
    if family == "mimo_v2_flash":    # sinks in the sliding layers only (s_aux=None in the full one); Dv != Dh
        return tf.MiMoV2FlashConfig(vocab_size=vocab, intermediate_size=64, moe_intermediate_size=16,
                                    n_routed_experts=4, num_experts_per_tok=2, head_dim=8, v_head_dim=4,
                                    mlp_layer_types=["dense", "sparse"], **SLIDING_THEN_FULL, **SMALL)
    if family == "deepseek_v4":      # sliding layers only: its compressed layers' keys are not tokens (refused)
        return tf.DeepseekV4Config(vocab_size=vocab, hidden_size=32, moe_intermediate_size=16, num_hidden_layers=2,
                                   num_attention_heads=4, num_key_value_heads=1, head_dim=16, q_lora_rank=16,
                                   n_routed_experts=4, num_experts_per_tok=2, qk_rope_head_dim=4, o_groups=2,
                                   o_lora_rank=8, index_n_heads=2, index_head_dim=8, index_topk=4, sliding_window=4,
                                   num_nextn_predict_layers=0, layer_types=["sliding_attention"] * 2,
                                   mlp_layer_types=["moe", "moe"], max_position_embeddings=64, pad_token_id=0,
                                   bos_token_id=1, eos_token_id=2)
    if family == "hy_v4":            # sparse attention: the chosen keys come as ``indices``, folded into the mask
        return tf.HYV4Config(vocab_size=vocab, hidden_size=32, intermediate_size=64, moe_intermediate_size=16,
                             num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=4, head_dim=8,
                             n_routed_experts=4, num_experts_per_tok=2, q_lora_rank=16, kv_lora_rank=8,
                             qk_nope_head_dim=8, qk_rope_head_dim=4, v_head_dim=8, index_topk=4, index_head_dim=8,
                             index_n_heads=2, layer_types=["indexed_attention"] * 2, indexer_types=["full", "shared"],
                             mlp_layer_types=["dense", "sparse"], max_position_embeddings=64, pad_token_id=0,
                             bos_token_id=1, eos_token_id=2)
    raise ValueError(family)


def sink_folder(root: Path, family: str) -> Path:
    """A tiny random ``family`` decoder with its sinks drawn from N(0, 2), saved with a byte-level
    BPE tokenizer like a user's folder (tests/helpers/hf_tiny.py)."""
    from transformers import AutoModelForCausalLM

    folder = Path(root) / family
    if (folder / "config.json").exists():
        return folder
    tokenizer = _bpe_tokenizer("decoder")
    torch.manual_seed(0)
    model = AutoModelForCausalLM.from_config(sink_config(family, max(len(tokenizer), 64)))
    with torch.no_grad():
        for module in model.modules():
            if isinstance(getattr(module, "sinks", None), torch.Tensor):
                module.sinks.normal_(0.0, 2.0)
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder
