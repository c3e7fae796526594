"""A Hugging Face family that computes attention its own way (BLOOM's and Falcon's ALiBi
classes), not through transformers' attention interface, is refused in one sentence that
says so: before, Falcon read "Could not open ... with transformers: 'attnscope'"."""
import pytest
import torch

from attnscope.engine.errors import HFModelError
from attnscope.engine.loading import open_model
from tests.helpers.hf_tiny import _bpe_tokenizer


@pytest.mark.parametrize("family", ["bloom", "falcon"])
def test_a_family_with_its_own_attention_is_told_why_in_one_sentence(tmp_path, family):
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
    with pytest.raises(HFModelError) as err:
        open_model(str(tmp_path / family), "cpu")
    message = str(err.value)
    assert "its own way" in message and "cannot see its heads" in message
    assert "\n" not in message and "'attnscope'" not in message
