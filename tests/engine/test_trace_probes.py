"""A trace says what it can do (engine.traces.base.AttentionTrace: its ``recording``, ``fetcher`` and
``faster`` capabilities, each None where absent; groups and pieces read through engine.traces.reading); code does
not probe it with getattr, hasattr or isinstance. Issue 47 allows at most 2 such places in engine/, gui/ and cli/."""
import re
from pathlib import Path

import numpy as np
from attnscope.engine.traces import reading

ROOT = Path(__file__).resolve().parents[2]
PROBE = re.compile(r"\b(getattr|hasattr)\((self\.)?(state\.)?\w*trace\b"   # getattr(trace, ...), hasattr(self.trace, ...)
                   r"|isinstance\([^)]*Trace\b"                            # isinstance(x, RecordedTrace)
                   r"|\"calls\"\)"                                          # getattr(x, "calls")
                   r"|\._dense\b")                                          # a recorded trace's private arrays
MOST = 2


def probes() -> list[str]:
    found = []
    for folder in ("engine", "gui", "cli"):
        for path in sorted((ROOT / folder).rglob("*.py")):
            rel = path.relative_to(ROOT).as_posix()
            for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
                if rel == "engine/traces/recorded.py" and "self._dense" in line:
                    continue                                                # its own state
                if PROBE.search(line):
                    found.append(f"{rel}:{n}: {line.strip()}")
    return found


def test_at_most_two_places_probe_a_trace():
    found = probes()
    assert len(found) <= MOST, "\n".join(found)


def test_the_probe_pattern_sees_probes():
    for line in ('calls = getattr(trace, "calls", None)', 'if not isinstance(self.state.trace, RecordedTrace):',
                 'fast = hasattr(trace, "strongest_keys")', 'kind in trace._dense'):
        assert PROBE.search(line), line
    assert not PROBE.search('if getattr(t, "special", False)}')


def test_a_dense_trace_answers_every_capability():
    from attnscope.engine.traces.dense import DenseTrace

    w = np.full((1, 2, 3, 3), 1 / 3, np.float32)
    trace = DenseTrace("m", "gpt", {"decoder self": w}, target_tokens=["a", "b", "c"])
    assert trace.recording is None and trace.fetcher is None and reading.groups(trace) == {}
    assert reading.pieces(trace)["target"] == ["a", "b", "c"]
    assert trace.held_bytes() == w.nbytes


def test_a_recorded_trace_answers_every_capability():
    from attnscope.engine.loading.demo import random_model
    from attnscope.engine.traces.tracing import trace_text

    trace = trace_text(random_model("gpt"), "the big dog sees the cat .")
    kind = trace.kinds[0]
    recording = trace.recording
    assert recording is not None and recording.call(kind, 0) is not None and trace.fetcher is None
    assert reading.pieces(trace)["target"] == trace.target_tokens
    assert recording.computes_on_demand(kind) == (kind not in trace._dense)
