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
