"""What starting attnscope imports: the heavy libraries only when they are needed.

Each check runs in a fresh interpreter, since this test process has long imported torch.
"""
import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
HEAVY = ("torch", "transformers")


def imported_after(code: str) -> dict[str, bool]:
    probe = f"{code}\nimport json, sys\nprint(json.dumps({{m: m in sys.modules for m in {HEAVY!r}}}))"
    out = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_catalog_names_sources_without_torch():
    found = imported_after("from engine import catalog\ncatalog.default_source()\ncatalog.bundled_checkpoints()")
    assert found == {"torch": False, "transformers": False}


def test_command_line_parser_imports_neither_torch_nor_transformers():
    found = imported_after("import main\nmain.build_parser()")
    assert found == {"torch": False, "transformers": False}


def test_opening_a_model_imports_torch_then():
    found = imported_after("from engine import catalog\ncatalog.open_model('random-gpt', 'cpu')")
    assert found["torch"] is True
    assert found["transformers"] is False


def test_main_window_imports_transformers_only_for_a_hugging_face_model():
    found = imported_after("import gui.main_window")
    assert found["transformers"] is False
