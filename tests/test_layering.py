"""engine/ never imports Qt; gui/ may import engine, never the reverse."""
import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FORBIDDEN_IN_ENGINE = {"PySide6", "pyqtgraph", "superqt", "qtpy", "PyQt5", "PyQt6", "gui"}


def imported_roots(path: Path) -> set[str]:
    roots = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            roots |= {a.name.split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            roots.add(node.module.split(".")[0])
    return roots


def test_engine_never_imports_qt_or_gui():
    files = sorted((ROOT / "engine").rglob("*.py"))
    assert len(files) > 5
    offenders = {str(f.relative_to(ROOT)): imported_roots(f) & FORBIDDEN_IN_ENGINE for f in files}
    assert {f: bad for f, bad in offenders.items() if bad} == {}


def test_cli_runs_without_qt():
    files = sorted((ROOT / "cli").rglob("*.py"))
    offenders = {str(f.relative_to(ROOT)): imported_roots(f) & {"PySide6", "pyqtgraph", "superqt"} for f in files}
    assert {f: bad for f, bad in offenders.items() if bad} == {}
