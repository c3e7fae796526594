"""Our BERT is BERT: Hugging Face weights converted into engine.models.Bert give the same
attention maps (1e-5) and hidden states (1e-4), padded or not, single or paired."""
import numpy as np
import pytest
import torch

from attnscope.engine.loading.hf import HFModelError, load_hf_model, minilm_path
from attnscope.engine.inspection.compare import compare_models
from attnscope.engine.loading.convert import hf_to_scratch
from attnscope.engine.traces.words import merge_pieces, merged_tokens, word_groups
from attnscope.engine.traces.tracing import trace_text
from attnscope.engine.seam import recording
from tests.helpers.hf_tiny import tiny_bert_folder
from attnscope.engine.traces import reading


def assert_same(loaded, batch_texts, pairs=None):
    ours = hf_to_scratch(loaded)
    enc = loaded.tokenizer(batch_texts, pairs, padding=True, return_tensors="pt")
    with torch.no_grad():
        with recording() as theirs:
            ref = loaded.model(**enc)
        with recording() as mine:
            got = ours.model(enc["input_ids"], enc["token_type_ids"], enc["attention_mask"])
    for a, b in zip(theirs.layers("encoder self"), mine.layers("encoder self")):
        torch.testing.assert_close(b.weights(None), a.weights(None), atol=1e-5, rtol=0)
    torch.testing.assert_close(got.hidden, ref.last_hidden_state, atol=1e-4, rtol=0)
    return ours


@pytest.mark.parametrize("hidden, layers, heads", [(48, 2, 3), (40, 1, 5), (64, 3, 4)])
def test_tiny_berts_match_hugging_face(tmp_path, hidden, layers, heads):
    loaded = load_hf_model(str(tiny_bert_folder(tmp_path, hidden, layers, heads)))
    assert loaded.family == "hf-bert"
    assert_same(loaded, ["the big dog sees the cat ."])                                   # single
    assert_same(loaded, ["time flies like an arrow", "the dog sees the small cat playing ."])  # padded batch
    assert_same(loaded, ["time flies like an arrow", "a dog"], ["fruit flies like a banana", "the cat runs"])  # pairs


def test_minilm_matches_hugging_face_and_traces():
    loaded = load_hf_model(minilm_path())
    assert loaded.name == "all-MiniLM-L6-v2" and loaded.model.config.num_attention_heads == 12
    ours = assert_same(loaded, ["time flies like an arrow .", "attention is all you need"],
                       ["fruit flies like a banana .", "said the paper"])
    diff = compare_models(loaded, ours, "time flies like an arrow", pair="fruit flies like a banana")
    assert diff["max"] < 1e-5 and len(diff["per_layer"]) == 6 and diff["tokens"][0] == "[CLS]"
    trace = trace_text(loaded, "time flies like an arrow", pair="fruit flies like a banana")
    assert trace.shape("encoder self") == (6, 12, 13, 13)
    assert trace.source_tokens.count("[SEP]") == 2


def test_merging_word_pieces_keeps_rows_summing_to_one():
    tokens = ["[CLS]", "play", "##ing", "dog", "##s", "[SEP]"]
    groups = word_groups(tokens)
    assert groups == [0, 1, 1, 2, 2, 3]
    assert merged_tokens(tokens, groups) == ["[CLS]", "playing", "dogs", "[SEP]"]
    rng = np.random.default_rng(0)
    w = rng.random((2, 3, 6, 6))
    w /= w.sum(-1, keepdims=True)
    m = merge_pieces(w, groups)
    assert m.shape == (2, 3, 4, 4)
    np.testing.assert_allclose(m.sum(-1), 1.0, atol=1e-12)
    # word "playing" attending to "dogs": mean over its two query rows of the summed key columns
    expected = (w[..., 1, 3] + w[..., 1, 4] + w[..., 2, 3] + w[..., 2, 4]) / 2
    np.testing.assert_allclose(m[..., 1, 2], expected)


def test_trace_with_merged_pieces(tmp_path):
    loaded = load_hf_model(str(tiny_bert_folder(tmp_path, 48, 2, 3)))
    trace = trace_text(loaded, "the dogs playing", merge_subwords=True)
    assert trace.source_tokens == ["[CLS]", "the", "dogs", "playing", "[SEP]"]
    np.testing.assert_allclose(reading.weights(trace, "encoder self").sum(-1), 1.0, atol=1e-5)


def test_bad_folders_and_offline_hub_names(tmp_path, monkeypatch):
    with pytest.raises(HFModelError, match="no config.json"):
        load_hf_model(str(tmp_path))
    (tmp_path / "config.json").write_text("{}")
    with pytest.raises(HFModelError, match="no weights"):
        load_hf_model(str(tmp_path))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(HFModelError, match="offline"):
        load_hf_model("bert-base-uncased")


def test_a_typed_pad_token_gives_the_same_attention_in_both(tmp_path):
    """Hugging Face attends to a literal "[PAD]" in the text (its attention mask is 1 there):
    our encoder must too, since masks come from the attention mask and never from ids."""
    loaded = load_hf_model(str(tiny_bert_folder(tmp_path, 48, 2, 3)))
    ours = hf_to_scratch(loaded)
    diff = compare_models(loaded, ours, "the dog [PAD] sees the cat")
    assert "[PAD]" in diff["tokens"] and diff["max"] < 1e-5
