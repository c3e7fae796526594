"""Head lines on a long text: each query's strongest keys, read from the trace a block of rows
at a time, equal numpy's top-k of the dense head (dense and recorded traces alike); the view
draws those lines only, says how many keys a query and how much weight is left out, and
never asks for every head of the kind at once. "Long" is forced from a few tokens on, so the
tests stay fast.
"""
import numpy as np
import pytest

from attnscope.engine.inspection.top_keys import head_top_keys, strongest, layer_top_keys
from attnscope.engine.loading.catalog import open_model
from attnscope.engine.loading.demo import random_model
from attnscope.engine.traces.dense import DenseTrace
from attnscope.engine.traces.tracing import trace_text
from attnscope.gui.state import AppState
from tests.helpers.hf_tiny import tiny_folder
from tests.helpers.traces import TEXT, fresh_recording, top_k_reference
from attnscope.engine.traces import reading


def causal_dense(seed: int = 0, layers: int = 2, heads: int = 3, t: int = 37) -> DenseTrace:
    """Softmax rows over the keys up to each query (exact zeros after it: ties the top-k must
    break in key order), with a few equal weights inside rows too."""
    rng = np.random.default_rng(seed)
    scores = np.round(rng.normal(size=(layers, heads, t, t)), 1)           # rounded: equal weights happen
    scores[..., np.triu_indices(t, 1)[0], np.triu_indices(t, 1)[1]] = -np.inf
    w = np.exp(scores - scores.max(-1, keepdims=True))
    w = (w / w.sum(-1, keepdims=True)).astype(np.float32)
    return DenseTrace("t", "gpt", {"decoder self": w}, target_tokens=[f"w{i}" for i in range(t)])


@pytest.mark.parametrize("chunk_bytes", [1, 4 * 37 * 5, 2**20])     # a row at a time, 5 rows, the whole head
@pytest.mark.parametrize("k", [1, 4, 40])
def test_top_keys_of_a_dense_trace_are_numpys_top_k(chunk_bytes, k):
    trace = causal_dense()
    tops = layer_top_keys(trace, "decoder self", 1, [0, 2], k, chunk_bytes=chunk_bytes)
    for h, top in tops.items():
        keys, weights, leftover = top_k_reference(trace.attentions["decoder self"][1, h], k)
        np.testing.assert_array_equal(top.keys, keys)
        np.testing.assert_array_equal(top.weights, weights)
        np.testing.assert_allclose(top.leftover, leftover, atol=1e-6)
        assert top.k == min(k, 37)


def test_cross_attention_has_as_many_rows_as_targets():
    rng = np.random.default_rng(4)
    w = rng.random((1, 2, 7, 30)).astype(np.float32)                      # 7 target queries x 30 source keys
    w /= w.sum(-1, keepdims=True)
    trace = DenseTrace("t", "translator", {"cross": w}, source_tokens=[f"s{i}" for i in range(30)],
                       target_tokens=[f"t{i}" for i in range(7)])
    top = head_top_keys(trace, "cross", 0, 1, 5, chunk_bytes=4 * 30 * 2)
    keys, weights, leftover = top_k_reference(w[0, 1], 5)
    assert top.keys.shape == (7, 5)
    np.testing.assert_array_equal(top.keys, keys)
    np.testing.assert_allclose(top.leftover, leftover, atol=1e-6)


def test_fewer_keys_are_a_prefix_of_more():
    """The view reads 16 keys a query once and shows any k of them: the same as reading k."""
    trace = causal_dense(seed=2)
    many = head_top_keys(trace, "decoder self", 0, 2, 16)
    for k in (1, 4, 16, 30):
        few, direct = many.first(k), head_top_keys(trace, "decoder self", 0, 2, min(k, 16))
        np.testing.assert_array_equal(few.keys, direct.keys)
        np.testing.assert_array_equal(few.weights, direct.weights)
        np.testing.assert_allclose(few.leftover, direct.leftover, atol=1e-6)


def test_strongest_breaks_ties_in_key_order():
    rng = np.random.default_rng(3)
    for _ in range(200):
        w = rng.integers(0, 3, size=(int(rng.integers(1, 6)), int(rng.integers(2, 20)))).astype(np.float32)
        k = int(rng.integers(1, w.shape[1] + 1))
        np.testing.assert_array_equal(strongest(w, k), np.argsort(-w, axis=1, kind="stable")[:, :k])


def test_only_the_keys_allowed_are_chosen_and_the_rest_is_leftover():
    trace = causal_dense(seed=1)
    allowed = np.ones(37, bool)
    allowed[[0, 5, 6]] = False
    top = head_top_keys(trace, "decoder self", 0, 1, 3, keys=allowed, chunk_bytes=4 * 37 * 4)
    keys, weights, leftover = top_k_reference(trace.attentions["decoder self"][0, 1], 3, allowed)
    np.testing.assert_array_equal(top.keys, keys)
    np.testing.assert_allclose(top.leftover, leftover, atol=1e-6)
    assert not np.isin(top.keys, [0, 5, 6]).any()
    assert top.leftover[0] == pytest.approx(1.0)          # query 0 sees key 0 only, which may not be chosen


@pytest.fixture(scope="module")
def llama(tmp_path_factory):
    return open_model(str(tiny_folder(tmp_path_factory.mktemp("lines"), "llama")), "cpu")


def test_top_keys_of_a_recorded_trace_are_numpys_top_k_of_its_dense_heads(llama):
    trace = trace_text(llama, TEXT)
    dense = reading.weights(trace, "decoder self")                                  # (L, H, T, T), small here
    lazy = fresh_recording(trace)                                                    # tiles computed from q and k
    t = dense.shape[-1]
    tops = layer_top_keys(lazy, "decoder self", 1, [0, 3], 4, chunk_bytes=4 * t * 3)
    assert not lazy._dense and not lazy._layers                            # never a whole layer or kind
    for h, top in tops.items():
        keys, weights, leftover = top_k_reference(dense[1, h], 4)
        np.testing.assert_array_equal(top.keys, keys)
        np.testing.assert_allclose(top.weights, weights, atol=1e-6)
        np.testing.assert_allclose(top.leftover, leftover, atol=1e-5)


def shown_view(qtbot, cls, loaded=None):
    """(state, view): a view of class ``cls`` on a state holding ``loaded`` (the tiny GPT), shown."""
    state = AppState()
    state.set_model(loaded or random_model("gpt", seed=1))
    view = cls(state)
    qtbot.addWidget(view)
    view.resize(700, 600)
    view.show()
    return state, view


def long_lines(qtbot, drawn, monkeypatch, loaded, refuse_whole_kind: bool):
    """Head lines on a trace made "long": more than 8 tokens, or every head of the kind
    refused (the way an 8k-token trace of a 1B model is). A trace whose ``weights`` fails."""
    import attnscope.engine.traces.base as base
    import attnscope.gui.views.head_lines as lines
    if refuse_whole_kind:
        monkeypatch.setattr(base, "DENSE_VIEW_BYTES", 1000)
    else:
        monkeypatch.setattr(lines, "LONG_TOKENS", 8)
    state, view = shown_view(qtbot, lines.HeadLines, loaded)
    trace = fresh_recording(trace_text(loaded, TEXT))
    every = reading.weights
    monkeypatch.setattr(reading, "weights", lambda t, kind: pytest.fail("Head lines asked for every head at once")
                        if t is trace else every(t, kind))
    state.set_trace(trace)
    drawn(view)
    return view, trace


def expected_lines(trace, layer: int, head: int, k: int, threshold: float, queries=None, keys=None) -> int:
    """Lines of each query's k strongest keys whose weight is above the threshold (and above 0)."""
    head_w = np.stack([reading.row(trace, "decoder self", layer, head, q) for q in range(trace.shape("decoder self")[2])])
    ref_keys, weights, _ = top_k_reference(head_w, k, keys)
    keep = (weights > 0) & (weights >= threshold)
    if queries is not None:
        keep &= queries[:, None]
    return int(keep.sum())


@pytest.mark.parametrize("refuse_whole_kind", [False, True])
def test_a_long_trace_draws_each_querys_strongest_keys_and_says_what_is_left(qtbot, drawn, monkeypatch,
                                                                            refuse_whole_kind):
    view, trace = long_lines(qtbot, drawn, monkeypatch, random_model("gpt", seed=1), refuse_whole_kind)
    t = trace.shape("decoder self")[2]
    assert view.keys_per_query.isVisible() and view.summary.isVisible()
    view.threshold.setValue(0.0)
    drawn(view)
    assert view.drawn == {0: expected_lines(trace, 0, 0, 4, 0.0)} and view.drawn[0] > t * 4 - 10   # all but masked
    top = head_top_keys(trace, "decoder self", 0, 0, 4)
    left = 100 * top.leftover.mean()
    text = view.summary.text()
    assert f"{t:,} queries: the 4 strongest keys of each" in text and f"{left:.0f} % of the weight" in text
    assert "not drawn" in text and f"({view.drawn[0]:,} lines)" in text

    read = reading.tile                                 # fewer keys, a hovered query: no head read again
    monkeypatch.setattr(reading, "tile", lambda t, *args: pytest.fail("Head lines read the head again") if t is trace
                        else read(t, *args))
    view.keys_per_query.setValue(2)
    view.focus = ("query", 9)
    view.redraw()
    drawn(view)
    shown = dict(view.drawn)
    monkeypatch.setattr(reading, "tile", read)
    assert shown == {0: expected_lines(trace, 0, 0, 2, 0.0, queries=np.arange(t) == 9)} == {0: 2}

    view.focus = None
    view.threshold.setValue(0.1)
    view.set_heads([1, 3])
    drawn(view)
    assert view.drawn == {h: expected_lines(trace, 0, h, 2, 0.1) for h in (1, 3)}
    text = view.summary.text()
    candidates = sum(expected_lines(trace, 0, h, 2, 0.0) for h in (1, 3))
    assert "the 2 strongest keys" in text and f"Of these {candidates:,} lines, the {sum(view.drawn.values()):,} " \
        "above the threshold are drawn." in text


def test_hover_and_hidden_specials_filter_the_strongest_keys(qtbot, drawn, monkeypatch, llama):
    view, trace = long_lines(qtbot, drawn, monkeypatch, llama, refuse_whole_kind=False)
    tokens = reading.key_tokens(trace, "decoder self")
    assert tokens[0] == "<s>"
    view.threshold.setValue(0.0)
    view.focus = ("query", 5)
    view.redraw()
    drawn(view)
    only_five = np.zeros(len(tokens), bool)
    only_five[5] = True
    assert view.drawn[0] == expected_lines(trace, 0, 0, 4, 0.0, queries=only_five) == 4
    view.focus = None
    view.hide_special.setChecked(True)
    drawn(view)
    plain = np.array([t != "<s>" for t in tokens])
    assert view.drawn[0] == expected_lines(trace, 0, 0, 4, 0.0, queries=plain, keys=plain)
    assert "4 strongest keys other than special tokens" in view.summary.text()


def test_a_short_trace_draws_every_line_as_before(qtbot, drawn):
    from attnscope.gui.views.head_lines import HeadLines
    state, view = shown_view(qtbot, HeadLines)
    state.set_trace(trace_text(state.loaded, TEXT))
    view.threshold.setValue(0.0)
    drawn(view)
    w = reading.weights(state.trace, "decoder self")[0, 0]
    assert view.drawn == {0: int((w > 0).sum())}
    assert not view.summary.isVisible() and not view.keys_per_query.isVisible()


def test_head_statistics_of_a_trace_too_long_for_every_head_at_once_fill_the_table(qtbot, drawn, monkeypatch):
    """The table needed every head at once and was empty on a long text (with its reason under
    it); it is summed over blocks of rows now, with the same numbers as the whole array's."""
    import attnscope.engine.traces.base as base
    from attnscope.gui.views.head_stats import HeadStats
    state, view = shown_view(qtbot, HeadStats)
    monkeypatch.setattr(base, "DENSE_VIEW_BYTES", 1000)
    state.set_trace(fresh_recording(trace_text(state.loaded, TEXT)))
    drawn(view)
    assert view.table.rowCount() == 8 and not view.note.isVisible()
    summed = {name: value.copy() for name, value in view.stats.items()}
    monkeypatch.setattr(base, "DENSE_VIEW_BYTES", 2**31)
    state.set_trace(trace_text(state.loaded, TEXT))
    drawn(view)
    assert view.table.rowCount() == 8 and not view.note.isVisible()
    for name, value in view.stats.items():
        np.testing.assert_allclose(summed[name], value, atol=2e-5, rtol=1e-5, err_msg=name)


def test_rollout_of_a_trace_too_long_for_every_head_at_once_is_drawn_and_refused_past_its_maps(
        qtbot, drawn, monkeypatch):
    """Rollout needed every head at once; it multiplies each layer's mean of heads, summed over
    row blocks, and is drawn with the whole-array numbers. Past three T x T maps it is refused
    where the map would be ("Not drawn", not "Nothing to show yet"), the numbers in the note."""
    import attnscope.engine.traces.base as base
    from attnscope.gui.views.rollout import TOO_LONG, RolloutView
    state, view = shown_view(qtbot, RolloutView)
    state.set_trace(trace_text(state.loaded, TEXT))
    drawn(view)
    whole = view.matrix.copy()
    tokens = len(reading.query_tokens(state.trace, "decoder self"))
    monkeypatch.setattr(base, "DENSE_VIEW_BYTES", 3 * tokens * tokens * 4)    # every head: no; three maps: yes
    state.set_trace(fresh_recording(trace_text(state.loaded, TEXT)))
    drawn(view)
    np.testing.assert_allclose(view.matrix, whole, atol=1e-5)
    monkeypatch.setattr(base, "DENSE_VIEW_BYTES", 1000)
    state.set_trace(fresh_recording(trace_text(state.loaded, TEXT)))
    drawn(view)
    assert view.plot.item._empty_label.text == TOO_LONG and f"Rollout of {tokens} tokens" in view.note.text()
    monkeypatch.setattr(base, "DENSE_VIEW_BYTES", 2**31)
    state.set_trace(trace_text(state.loaded, TEXT))
    drawn(view)
    assert view.matrix is not None and not view.plot.item._empty_label.isVisible()
