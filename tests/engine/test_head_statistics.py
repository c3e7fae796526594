"""Head statistics (engine/inspection/statistics.py's one list) read from exact row blocks,
against a float64 dense reference computed here from the trace's weights, for a short trace
(one block) and a long one (blocks of three rows). A new entry seen by every reader:
tests/gui/test_head_stats_entries.py."""
from __future__ import annotations

import numpy as np
import pytest
import torch

from attnscope.engine.inspection.analysis import trace_head_statistics
from attnscope.engine.inspection.statistics import LOCAL_WINDOW, MARKERS, STATISTICS, head_means
from attnscope.engine.kinds import CROSS
from attnscope.engine.loading.demo import random_model
from attnscope.engine.traces.tracing import trace_text
from attnscope.engine.traces import reading

TEXT = "the cat sat on the mat and the dog sat on the log and the cat sat"


def dense_reference(w: np.ndarray, tokens: list[str], self_attention: bool) -> dict[str, np.ndarray]:
    """{name: (L, H)} float64, straight from each definition over the dense (L, H, Tq, Tk) weights."""
    w = w.astype(np.float64)
    L, H, tq, tk = w.shape
    off = tk - tq if self_attention else 0
    pos = np.arange(tq) + off                                                  # (Tq,)
    j = np.arange(tk)
    logw = np.log(np.maximum(w, 1e-30))
    out = {"entropy": -(w * logw).sum(-1).mean(-1),
           "distance": (w * np.abs(pos[:, None] - j[None, :])).sum(-1).mean(-1),
           "sink": w[..., 0].mean(-1), "learned_sink": np.clip(1 - w.sum(-1), 0, None).mean(-1)}
    for name, names in MARKERS.items():
        keys = np.isin(np.array(tokens), names)
        out[name] = w[..., keys].sum(-1).mean(-1) if keys.any() else np.full((L, H), np.nan)
    if not self_attention:
        return out | {n: np.full((L, H), np.nan) for n in ("previous", "self", "local", "duplicate", "induction")}
    prev = [i for i in range(tq) if pos[i] >= 1]
    out["previous"] = np.stack([w[..., i, pos[i] - 1] for i in prev], -1).mean(-1)
    out["self"] = np.stack([w[..., i, pos[i]] for i in range(tq)], -1).mean(-1)
    out["local"] = (w * (np.abs(pos[:, None] - j[None, :]) <= LOCAL_WINDOW)).sum(-1).mean(-1)
    tok = np.array(tokens)
    dup = [i for i in range(tq) if (tok[:pos[i]] == tok[pos[i]]).any()]
    same = np.array([[k < pos[i] and tok[k] == tok[pos[i]] for k in range(tk)] for i in range(tq)])
    after = np.array([[1 <= k <= pos[i] and tok[k - 1] == tok[pos[i]] for k in range(tk)] for i in range(tq)])
    out["duplicate"] = (w * same).sum(-1)[..., dup].mean(-1)
    out["induction"] = (w * after).sum(-1)[..., dup].mean(-1)
    return out


@pytest.mark.parametrize("family", ["gpt", "translator", "bert"])
@pytest.mark.parametrize("step", [None, 3])
def test_every_entry_equals_a_dense_float64_reference_for_a_short_and_a_long_trace(family, step):
    """step None: one block holds the text (a short trace); 3: a block of three query rows, so
    every layer is read in several blocks (a long trace's path). The same code either way."""
    trace = trace_text(random_model(family), TEXT)
    for kind in trace.kinds:
        L, H, tq, tk = trace.shape(kind)
        assert step is None or tq > step                                       # more than one block
        reports = []
        got = trace_head_statistics(trace, kind, report=reports.append, step=step)
        want = dense_reference(reading.weights(trace, kind), reading.key_tokens(trace, kind), kind != CROSS)
        want["learned_sink"] = np.full((L, H), np.nan)      # no sink term recorded: hidden, not a column of 0.000
        assert set(got) == {s.name for s in STATISTICS} and len(reports) == L - 1
        for name, value in want.items():
            np.testing.assert_allclose(got[name], value, atol=1e-5, rtol=1e-5, equal_nan=True,
                                       err_msg=f"{family} {kind} {name}")



@pytest.mark.parametrize("family", ["gpt", "translator", "bert"])
def test_a_short_trace_read_with_its_layers_side_by_side_equals_it_read_layer_by_layer(family):
    """A short trace's statistics come from one block of every layer's heads (its quick path,
    analysis._every_layer_at_once); ``step`` = its length reads the same rows a layer at a time:
    the same numbers, to the bit (a reducer sees each head apart)."""
    trace = trace_text(random_model(family), TEXT)
    for kind in trace.kinds:
        whole, by_layer = trace_head_statistics(trace, kind), trace_head_statistics(trace, kind, step=trace.shape(kind)[2])
        for name in whole:
            np.testing.assert_array_equal(whole[name], by_layer[name], err_msg=f"{family} {kind} {name}")

def test_a_constructed_matrix():
    # head 0 attends to the previous token (query 0 to itself); head 1 spreads uniformly
    prev = np.array([[1, 0, 0], [1, 0, 0], [0, 1, 0]], dtype=np.float32)
    uniform = np.full((3, 3), 1 / 3, np.float32)
    w = torch.from_numpy(np.stack([prev, uniform]))                            # (H, T, T)
    s = head_means(lambda i: [(0, w)], (1, 2, 3, 3), True, ["[CLS]", "a", "[SEP]"])
    assert s["previous"][0, 0] == pytest.approx(1.0)        # (1 + 1) / 2
    assert s["self"][0, 0] == pytest.approx(1 / 3)          # only query 0 on itself
    assert s["entropy"][0, 0] == pytest.approx(0.0, abs=1e-6)
    assert s["entropy"][0, 1] == pytest.approx(np.log(3))
    assert s["distance"][0, 0] == pytest.approx(2 / 3)      # (0 + 1 + 1) / 3
    assert s["sink"][0, 0] == pytest.approx(2 / 3)
    assert s["cls"][0, 1] == pytest.approx(1 / 3) and s["sep"][0, 0] == pytest.approx(0.0)


class _OnAGpu:
    """A trace that says it lives on a GPU (its blocks still made on the host, as no GPU is here)."""

    def __init__(self, trace):
        self._trace = trace

    device = torch.device("cuda")

    def __getattr__(self, name):
        return getattr(self._trace, name)


def test_a_gpu_traces_statistics_read_its_blocks_never_its_weights_on_the_host(monkeypatch):
    """On a CPU a short trace's statistics read the weights the Run holds, at once; a trace on a
    GPU is read in its own blocks, on its device, and never brought whole to the host."""
    from attnscope.engine.runtime.blocks import forced

    trace = trace_text(random_model("gpt"), TEXT)
    kind = trace.kinds[0]
    want = trace_head_statistics(trace, kind)

    def refused(*_args, **_kw):
        raise AssertionError("a GPU trace's dense weights brought to the host")

    monkeypatch.setattr(reading, "weights", refused)
    monkeypatch.setattr(reading, "layer", refused)
    with forced(2**30):                 # a GPU's block budget, without asking a GPU for its free memory
        got = trace_head_statistics(_OnAGpu(trace), kind)
    for name in want:
        np.testing.assert_array_equal(got[name], want[name], err_msg=name)
