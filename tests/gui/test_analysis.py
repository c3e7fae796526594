"""Rollout, head statistics and exports checked against hand computations."""
import csv

import numpy as np
import pytest

from attnscope.engine.inspection.analysis import layer_aggregate, rollout
from attnscope.gui.display import display_weights, special_mask
from attnscope.engine.loading.demo import random_model
from attnscope.engine.inspection.export import load_npz, save_csv, save_npz
from attnscope.engine.traces.tracing import trace_text
from attnscope.engine.traces import reading


def test_rollout_matches_a_direct_computation():
    rng = np.random.default_rng(1)
    w = rng.random((3, 2, 4, 4))
    w /= w.sum(-1, keepdims=True)
    got = rollout(w)
    a = [(0.5 * w[l].mean(0) + 0.5 * np.eye(4)) for l in range(3)]
    np.testing.assert_allclose(got[0], a[0], rtol=1e-5)
    np.testing.assert_allclose(got[2], a[2] @ a[1] @ a[0], rtol=1e-5)
    np.testing.assert_allclose(got.sum(-1), 1.0, rtol=1e-5)
    np.testing.assert_allclose(rollout(w, residual=False)[1], w[1].mean(0) @ w[0].mean(0), rtol=1e-5)


def test_display_options():
    head = np.array([[0.1, 0.4], [0.05, 0.2]])
    np.testing.assert_allclose(display_weights(head, normalise=True), head / 0.4)
    np.testing.assert_allclose(display_weights(head, threshold=0.15), [[0, 0.4], [0, 0.2]])
    assert special_mask(["[CLS]", "dog", "[SEP]"]).tolist() == [False, True, False]
    assert layer_aggregate(np.ones((2, 3, 4, 4)), "max").shape == (2, 4, 4)


def test_exports_hold_the_trace_numbers(tmp_path):
    trace = trace_text(random_model("translator"), "the big dog sees the cat .", target="der große hund")
    back = load_npz(save_npz(trace, tmp_path / "t.npz"))
    assert back.kinds == trace.kinds and back.source_tokens == trace.source_tokens
    for kind in trace.kinds:
        np.testing.assert_array_equal(reading.weights(back, kind), reading.weights(trace, kind))
    path = save_csv(trace, tmp_path / "t.csv")
    with path.open(encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    assert len(rows) == sum(reading.weights(trace, k).size for k in trace.kinds)
    row = next(r for r in rows if r["kind"] == "cross" and r["layer"] == "1" and r["head"] == "2"
               and r["query_index"] == "1" and r["key_index"] == "2")
    assert float(row["weight"]) == pytest.approx(float(reading.head(trace, "cross", 1, 2)[1, 2]), rel=1e-5)
    assert row["key_token"] == reading.key_tokens(trace, "cross")[2]


@pytest.mark.parametrize("family, text", [("gpt", "the cat sat on the mat and the dog sat on the log"),
                                          ("translator", "the big dog sees the small cat ."),
                                          ("bert", "the cat sat on the mat")])
def test_head_statistics_of_a_trace_too_large_for_every_head_at_once_are_summed_over_row_blocks(
        family, text, monkeypatch):
    """Head statistics refused a long text (4k tokens of 16 x 20 heads: 21 GB at once); they are
    summed over blocks of a few query rows instead, and equal the whole-array statistics for
    every kind (causal self-attention, cross-attention, BERT's [CLS] and [SEP])."""
    import attnscope.engine.traces.base as base
    from attnscope.engine.inspection.analysis import trace_head_statistics
    from attnscope.engine.runtime import blocks

    model = random_model(family)
    trace = trace_text(model, text)
    for kind in trace.kinds:
        whole = trace_head_statistics(trace, kind)                  # one block: the whole text
        monkeypatch.setattr(base, "DENSE_VIEW_BYTES", 1000)          # every head at once: refused
        reports = []
        with blocks.forced(3 * 4 * trace.shape(kind)[1] * trace.shape(kind)[3]):   # three query rows a block
            summed = trace_head_statistics(trace_text(model, text), kind, report=reports.append)
        monkeypatch.undo()
        assert len(reports) == trace.shape(kind)[0] - 1
        for name, value in whole.items():
            np.testing.assert_allclose(summed[name], value, atol=2e-5, rtol=1e-5, err_msg=f"{family} {kind} {name}")


@pytest.mark.parametrize("family, text", [("gpt", "the cat sat on the mat and the dog sat on the log"),
                                          ("translator", "the big dog sees the small cat ."),
                                          ("bert", "the cat sat on the mat")])
def test_rollout_of_a_trace_too_large_for_every_head_at_once_multiplies_row_blocks(family, text, monkeypatch):
    """Rollout refused a long text; each layer's mean of heads is summed over blocks of a few
    query rows and multiplied in, equal to the whole-array rollout after every layer, with and
    without the residual; past three T x T maps it is refused with the numbers."""
    import attnscope.engine.traces.base as base
    from attnscope.engine.inspection.analysis import trace_rollout
    from attnscope.engine.runtime import blocks
    from attnscope.engine.traces.base import TraceTooLarge

    model = random_model(family)
    trace = trace_text(model, text)
    for kind in [k for k in trace.kinds if k != "cross"]:
        L, H, t, _ = trace.shape(kind)
        for residual in (True, False):
            whole = rollout(reading.weights(trace, kind), residual)
            monkeypatch.setattr(base, "DENSE_VIEW_BYTES", 3 * t * t * 4)          # three maps, not every head
            with blocks.forced(3 * 4 * H * t):                                    # three query rows a block
                fresh = trace_text(model, text)
                for layer in range(L):
                    reports = []
                    np.testing.assert_allclose(trace_rollout(fresh, kind, layer, residual, report=reports.append),
                                               whole[layer], atol=1e-5, err_msg=f"{family} {kind} {layer}")
                    assert len(reports) == layer
            monkeypatch.setattr(base, "DENSE_VIEW_BYTES", 3 * t * t * 4 - 1)
            with pytest.raises(TraceTooLarge, match=f"Rollout of {t} tokens holds three"):
                trace_rollout(trace_text(model, text), kind, 0, residual)
            monkeypatch.undo()
