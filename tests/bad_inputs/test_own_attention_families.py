"""A Hugging Face family that computes attention its own way (BLOOM's and Falcon's ALiBi
classes), not through transformers' attention interface, opens through the dense fallback and
says so in one sentence (issue 57): before, Falcon read "Could not open ... with transformers:
'attnscope'", and then a refusal."""
import pytest
import torch

from attnscope.engine.loading import open_model
from tests.helpers.hf_tiny import _bpe_tokenizer


@pytest.mark.parametrize("family", ["bloom", "falcon"])
def test_a_family_with_its_own_attention_opens_and_says_how_it_is_drawn(tmp_path, family):
    import transformers as tf

    config, model_class = {
        "bloom": (lambda: tf.BloomConfig(vocab_size=300, hidden_size=32, n_layer=2, n_head=4), tf.BloomForCausalLM),
        "falcon": (lambda: tf.FalconConfig(vocab_size=300, hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                                           alibi=True, new_decoder_architecture=False, multi_query=False),
                   tf.FalconForCausalLM),
    }[family]
    torch.manual_seed(0)
    model_class(config()).save_pretrained(tmp_path / family)
    _bpe_tokenizer("decoder").save_pretrained(tmp_path / family)
    loaded = open_model(str(tmp_path / family), "cpu")
    message = loaded.meta["notes"]
    assert loaded.meta["dense"] and "drawn from its own attention weights" in message
    assert "\n" not in message and "'attnscope'" not in message
