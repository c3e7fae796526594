"""pyright (basedpyright) over engine/, cli/ and main.py finds no error.

The level and every rule turned off, with why, are in pyrightconfig.json: "basic", less the rules
that torch's nn.Module attributes and numpy's overloads fill with noise. A newcomer's tools see the
same types this test checks, so "go to definition" from gui/ or cli/ lands in the engine.
"""
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _basedpyright() -> str | None:
    beside = Path(sys.executable).parent / "basedpyright"
    return str(beside) if beside.exists() else shutil.which("basedpyright")


def test_pyright_finds_no_error_in_the_engine_and_the_command_line():
    exe = _basedpyright()
    if exe is None:
        pytest.skip("basedpyright is not installed (it comes with pip install -e '.[test]')")
    out = subprocess.run([exe, "--outputjson"], cwd=ROOT, capture_output=True, text=True, timeout=600)
    report = json.loads(out.stdout)
    errors = [f"{Path(d['file']).relative_to(ROOT)}:{d['range']['start']['line'] + 1}: {d['message']}"
              for d in report["generalDiagnostics"] if d["severity"] == "error"]
    assert errors == []
    assert report["summary"]["filesAnalyzed"] > 100       # engine/, cli/ and main.py were read
