"""On a model drawn by the dense fallback (its family computes attention its own way, so
nothing reaches the seam), each seam tool asked is refused in one sentence that names that
tool, before any forward; and what needs no seam (the model's own continuation) still runs.
Before, every tool read "interventions, patching, Why, DLA, the atlas and recordings need ...",
and the window's continuation line was refused the same way."""
from __future__ import annotations

import pytest
import torch

from attnscope.engine.decoding import DecodeSession, model_output
from attnscope.engine.experiments import PromptPair, experiment, frame_pair, why
from attnscope.engine.inputs import InputError
from attnscope.engine.loading import open_model
from tests.helpers.hf_tiny import _bpe_tokenizer

TEXT = "the cat sat on the mat"


@pytest.fixture(scope="module")
def bloom(tmp_path_factory):
    import transformers as tf

    folder = tmp_path_factory.mktemp("fallback") / "bloom"
    torch.manual_seed(0)
    tf.BloomForCausalLM(tf.BloomConfig(vocab_size=300, hidden_size=32, n_layer=2, n_head=4)).save_pretrained(folder)
    _bpe_tokenizer("decoder").save_pretrained(folder)
    loaded = open_model(str(folder), "cpu")
    assert loaded.meta["dense"]
    return loaded


def _refused(call, named: str) -> None:
    with pytest.raises(InputError) as refused:
        call()
    said = str(refused.value)
    assert named in said and "need attnscope's" not in said and "\n" not in said, said


@pytest.mark.parametrize("method, named", [("exact", "activation patching"), ("attribution", "attribution patching"),
                                           ("dla", "direct logit attribution")])
def test_each_patching_method_names_itself(bloom, method, named):
    pair = frame_pair(bloom, PromptPair(TEXT, "the dog sat on the mat", "id:5", "id:6"))
    _refused(lambda: next(experiment(bloom, pair, method)), named)


def test_why_and_stepping_name_themselves(bloom):
    _refused(lambda: why(bloom, TEXT, "decoder_self", 0, 0, 3, 1), "Why")
    _refused(lambda: DecodeSession(bloom, TEXT), "stepping the decoding")


def test_the_models_own_continuation_needs_no_seam(bloom):
    written = model_output(bloom, TEXT, max_new_tokens=4)
    assert isinstance(written, str) and written
