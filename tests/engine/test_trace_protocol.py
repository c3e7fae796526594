"""The trace protocol (engine.traces.base.AttentionTrace, issue 54) stays narrow, and the
algorithms over it (engine.traces.reading) need nothing else: a faster path a trace offers
(``trace.faster``) gives the generic body's numbers, and only reading.py asks for one."""
import re
from pathlib import Path

import numpy as np
import pytest

from attnscope.engine.traces import reading
from attnscope.engine.traces.base import AttentionTrace
from attnscope.engine.traces.dense import DenseTrace

ROOT = Path(__file__).resolve().parents[2]
MOST = 12          # kinds, shape, block, device, two token lists, notes, model_name, family, three capabilities
KIND = "decoder self"


def members(protocol) -> set[str]:
    """The protocol's own members: its annotations and what its body defines."""
    names = set(protocol.__annotations__) | set(vars(protocol))
    return {n for n in names if not n.startswith("_")}


def test_the_protocol_has_at_most_twelve_members():
    found = members(AttentionTrace)
    assert len(found) <= MOST, sorted(found)
    assert {"kinds", "shape", "block", "device", "notes", "recording", "fetcher", "faster"} <= found


def test_only_reading_asks_a_trace_for_its_faster_paths():
    asks = re.compile(r"\.faster\b")
    found = []
    for folder in ("engine", "gui", "cli", "attnscope"):
        for path in sorted((ROOT / folder).rglob("*.py")):
            rel = path.relative_to(ROOT).as_posix()
            for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
                if asks.search(line.split("#")[0]):
                    found.append(f"{rel}:{n}")
    assert found and {f.split(":")[0] for f in found} == {"engine/traces/reading.py"}, found


class Plain:
    """A trace of the protocol's members only: no faster path, so reading's generic bodies run."""

    def __init__(self, trace):
        self._t = trace
        self.model_name, self.family, self.notes = trace.model_name, trace.family, trace.notes
        self.source_tokens, self.target_tokens = trace.source_tokens, trace.target_tokens

    kinds = property(lambda self: self._t.kinds)
    device = property(lambda self: self._t.device)
    recording = fetcher = faster = property(lambda self: None)

    def shape(self, kind):
        return self._t.shape(kind)

    def block(self, kind, layer, heads, rows, cols):
        return self._t.block(kind, layer, heads, rows, cols)


def _compare(trace, generic):
    L, H, tq, tk = trace.shape(KIND)
    np.testing.assert_allclose(reading.weights(trace, KIND), reading.weights(generic, KIND), atol=1e-6)
    np.testing.assert_allclose(reading.layer(trace, KIND, L - 1), reading.layer(generic, KIND, L - 1), atol=1e-6)
    np.testing.assert_allclose(reading.head(trace, KIND, 0, H - 1), reading.head(generic, KIND, 0, H - 1), atol=1e-6)
    # The overview of arrays held whole (pooling.pool_held) pools the blocks the generic body does,
    # in the same order: the very same numbers, for every pooling, a last block shorter or none.
    for how in ("max", "mean", "extreme"):
        for size in (2, 3, 64):
            mine, theirs = reading.thumbnails(trace, KIND, size, how), reading.thumbnails(generic, KIND, size, how)
            assert mine.pooled.dtype == theirs.pooled.dtype == np.float32
            np.testing.assert_array_equal(mine.pooled, theirs.pooled)
            np.testing.assert_array_equal(mine.sink, theirs.sink)
            assert (mine.how, mine.t_query, mine.t_key, mine.exact) == (theirs.how, theirs.t_query, theirs.t_key,
                                                                        theirs.exact)
    assert reading.tile(generic, KIND, 1, 1, slice(1, 4), slice(0, 2)).shape == (3, 2)
    np.testing.assert_allclose(reading.row(generic, KIND, 1, 1, 2), reading.head(trace, KIND, 1, 1)[2], atol=1e-6)


def test_a_dense_traces_faster_paths_give_the_generic_numbers():
    w = np.random.default_rng(0).random((2, 3, 5, 5)).astype(np.float32)
    w /= w.sum(-1, keepdims=True)
    trace = DenseTrace("m", "gpt", {KIND: w}, target_tokens=list("abcde"))
    _compare(trace, Plain(trace))
    assert reading.weights(trace, KIND) is w          # held: no copy


def test_a_recorded_traces_faster_paths_give_the_generic_numbers():
    pytest.importorskip("torch")
    from attnscope.engine.loading.demo import random_model
    from attnscope.engine.traces.tracing import trace_text

    trace = trace_text(random_model("gpt"), "the big dog sees the cat .")
    _compare(trace, Plain(trace))


def test_the_tokens_and_groups_of_a_trace_without_a_recording():
    trace = DenseTrace("m", "gpt", {KIND: np.zeros((1, 1, 2, 2), np.float32)}, target_tokens=["a", "b"])
    assert reading.query_tokens(trace, KIND) == reading.key_tokens(trace, KIND) == ["a", "b"]
    assert reading.groups(trace) == {} and reading.pieces(trace)["target"] == ["a", "b"]
    assert reading.in_order(["cross", "encoder self"]) == ["encoder self", "cross"]
