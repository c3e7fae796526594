"""attnscope's Python face: the same doors as the CLI, cheap to import, one sentence for bad input."""
from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest


def test_import_is_cheap():
    code = "import sys, attnscope; attnscope.__version__; print('torch' in sys.modules)"
    said = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert said.stdout.strip() == "False", said.stderr


def test_trace_equals_the_cli_export(tmp_path):
    import attnscope
    from attnscope.cli.entry import main

    arrays = attnscope.trace(attnscope.load("gpt", device="cpu"), "to be or not to be").to_numpy()
    assert main(["--device", "cpu", "export", "gpt", "--text", "to be or not to be", "--format", "npz",
                 "--out", str(tmp_path)]) == 0
    with np.load(tmp_path / "trace.npz") as f:
        kinds = [str(k) for k in f["kinds"]]
        assert sorted(arrays) == sorted(kinds)
        for kind in kinds:
            assert np.array_equal(arrays[kind], f["attn_" + kind.replace(" ", "_")]), kind


def test_bad_input_is_one_sentence_in_the_projects_errors():
    import attnscope
    from attnscope.engine.errors import ModelLoadError
    from attnscope.engine.inputs import InputError
    from attnscope.engine.inspection.export import ExportTooLarge

    with pytest.raises(ModelLoadError, match="not a int"):
        attnscope.load(3)
    with pytest.raises(ModelLoadError):
        attnscope.load("no-such-model-here")
    with pytest.raises(InputError, match="attnscope.load"):
        attnscope.trace("gpt", "text")
    model = attnscope.load("random-gpt", device="cpu")
    with pytest.raises(InputError, match="as a str"):
        attnscope.trace(model, 5)
    with pytest.raises(ExportTooLarge, match="MiB"):
        attnscope.trace(model, "a b c").to_numpy(limit=10)


def test_trace_members_read_through_reading(monkeypatch):
    import tempfile

    import attnscope
    from attnscope.engine.traces import reading

    trace = attnscope.trace(attnscope.load("random-gpt", device="cpu"), "a b c d")
    assert not hasattr(type(trace), "__getattr__")
    kind = trace.kinds[0]
    L, H, Tq, Tk = trace.shape(kind)
    assert len(trace.query_tokens(kind)) == Tq and len(trace.key_tokens(kind)) == Tk
    assert isinstance(trace.notes, list)
    monkeypatch.setattr(tempfile, "TemporaryDirectory", None)   # in memory: no temporary file
    arrays = trace.to_numpy()
    assert arrays[kind].shape == (L, H, Tq, Tk)
    assert np.array_equal(arrays[kind][L - 1, H - 1], trace.head(kind, L - 1, H - 1))
    assert np.array_equal(arrays[kind][0], reading.layer(trace.raw, kind, 0))
    first, block = next(iter(trace.row_blocks(kind, 0)))
    assert first == 0 and block.shape[0] == H


@pytest.mark.parametrize("call", ["why", "lens", "intervene", "patch", "record", "atlas"])
def test_each_experiment_refuses_what_is_not_a_model_in_one_sentence(call, tmp_path):
    from attnscope.engine.inputs import InputError
    from attnscope.engine.interventions import Interventions
    from attnscope import results

    asked = {"why": lambda: results.why("gpt", "a b", 0, 0, 1, 0),
             "lens": lambda: results.lens(None, "a b"),
             "intervene": lambda: results.intervene(3, "a b", Interventions()),
             "patch": lambda: results.patch([], "a", "b", ("x", "y")),
             "record": lambda: results.record("gpt", "a b", tmp_path / "r"),
             "atlas": lambda: results.atlas({}, tmp_path / "a.safetensors")}[call]
    with pytest.raises(InputError) as caught:
        asked()
    message = str(caught.value)
    assert message.startswith(f"attnscope.{call} takes a model from attnscope.load") and "\n" not in message
