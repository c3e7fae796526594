"""Token labels and word merging at 32,768 tokens: right, and computed without any step that
grows with the square of the text (the time of that step is measured in bench/labels.py)."""
import numpy as np

from attnscope.engine.adapters.hf_text import readable_tokens
from attnscope.engine.traces.words import merge_pieces, merged_tokens, word_groups
from tests.helpers.hf_tiny import _bpe_tokenizer, _wordpiece_tokenizer
from attnscope.engine.decoding.greedy import frame

N = 32_768


def _long_ids(tokenizer, sentence: str, n: int = N) -> tuple[list[int], list[int]]:
    """(the sentence's ids, ``n`` ids of the sentence said again and again)."""
    once = tokenizer(sentence, add_special_tokens=False)["input_ids"]
    return once, (once * (n // len(once) + 1))[:n]


def test_labels_of_32k_byte_level_tokens_are_the_short_texts_labels_repeated():
    tok = _bpe_tokenizer("decoder")
    once, ids = _long_ids(tok, " the big dog sees the small cat . time flies like an arrow")
    labels = readable_tokens(tok, ids)
    assert len(labels) == N
    short = readable_tokens(tok, once)
    # the first copy reads as the sentence alone; every later copy too (no label depends on the rest)
    assert labels[:len(once)] == short
    assert labels[len(once) * 7:len(once) * 8] == short
    assert all(not t.startswith("##") for t in labels if t in {"the", "dog", "cat"})


def test_word_pieces_of_32k_tokens_merge_into_the_right_words():
    tok = _wordpiece_tokenizer()
    vocab = tok.get_vocab()
    ids = [vocab["dog"], vocab["[UNK]"], vocab["cat"]] * (N // 3)
    labels = readable_tokens(tok, ids)
    assert labels[:3] == ["dog", "[UNK]", "cat"] and len(labels) == len(ids)
    pieces = ["play", "##ing", "dog"] * (N // 3)
    groups = word_groups(pieces)
    assert groups[-1] == 2 * (N // 3) - 1
    assert merged_tokens(pieces, groups)[:4] == ["playing", "dog", "playing", "dog"]


def test_a_text_with_hashes_keeps_byte_level_pieces_inside_words():
    """A byte-level text that contains "##" (a markdown heading) is not a word-piece vocabulary:
    a piece inside a word still gets "##" in front (the whole text's pieces were once asked
    for "##" to decide it, per token)."""
    tok = _bpe_tokenizer("decoder")
    ids = tok(" ## bananas", add_special_tokens=False)["input_ids"]
    plain = tok(" bananas", add_special_tokens=False)["input_ids"]
    assert readable_tokens(tok, ids)[-len(plain):] == readable_tokens(tok, plain)


def test_merging_equals_the_one_hot_definition_with_cross_attention_groups():
    rng = np.random.default_rng(3)
    qg, kg = [0, 0, 1, 2, 2, 2, 3], [0, 1, 1, 2]
    w = rng.random((2, 3, len(qg), len(kg))).astype(np.float32)
    q1 = np.eye(4, dtype=np.float32)[qg]                        # (Tq, Wq)
    k1 = np.eye(3, dtype=np.float32)[kg]                        # (Tk, Wk)
    expected = (q1 / q1.sum(0)).T @ (w @ k1)
    np.testing.assert_allclose(merge_pieces(w, qg, kg), expected, rtol=1e-6)


def test_a_tiny_model_frames_32k_tokens_with_every_label_right(tmp_path):
    """What a Run does before its forward, at 32,768 tokens: the adapter frames the text (ids,
    notes, labels) as decoding reads it; every label is the short text's, in order."""
    from attnscope.engine.adapters import adapter_for
    from attnscope.engine.loading.catalog import open_model
    from tests.helpers.hf_tiny import tiny_folder

    loaded = open_model(str(tiny_folder(tmp_path, "llama", positions=N + 8)), "cpu")
    sentence = " the big dog sees the small cat . time flies like an arrow"
    once = loaded.tokenizer(sentence, add_special_tokens=False)["input_ids"]
    text = sentence * (N // len(once))
    framed = frame(adapter_for(loaded), text)
    labels = framed.target_tokens
    assert len(labels) == len(framed.target_ids) >= N - len(once)
    short = readable_tokens(loaded.tokenizer, once)
    body = labels[1:]                                             # after <s>
    assert body[:len(once)] == short and body[-len(once):] == short
