"""Tests in rooms: no test module imports another test module. A builder two test files share
lives in tests/helpers/ (one module per theme), so running, moving or deleting one test file
never changes another's, and pytest never collects a test twice through an import."""
from __future__ import annotations

import ast
from pathlib import Path

TESTS = Path(__file__).resolve().parent


def _imported(tree: ast.Module, package: str) -> set[str]:
    """Every module name ``tree`` imports (``from a import b`` gives ``a.b`` too: b may be a module)."""
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:               # relative: from . import x, from .test_y import z
                parts = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join(parts + ([base] if base else []))
            names.add(base)
            names.update(f"{base}.{alias.name}" for alias in node.names)
    return names


def _is_test_module(name: str) -> bool:
    parts = name.split(".")
    return parts[0] == "tests" and any(p.startswith("test_") for p in parts[1:])


def test_no_test_module_imports_another():
    found = []
    for path in sorted(TESTS.rglob("*.py")):
        package = ".".join(("tests",) + path.relative_to(TESTS).parent.parts)
        for name in sorted(_imported(ast.parse(path.read_text()), package)):
            if _is_test_module(name):
                found.append(f"{path.relative_to(TESTS.parent)} imports {name}")
    assert not found, "move the shared builder into tests/helpers/:\n" + "\n".join(found)


def test_the_check_sees_every_spelling():
    tree = ast.parse("from tests.gui.test_a import b\nimport tests.engine.test_c\nfrom .test_d import e\n"
                     "from tests.gui import test_f\nfrom tests.helpers.window import open_views\n")
    seen = {n for n in _imported(tree, "tests.gui") if _is_test_module(n)}
    assert {"tests.gui.test_a", "tests.engine.test_c", "tests.gui.test_d", "tests.gui.test_f"} <= seen
    assert not any(n.startswith("tests.helpers") for n in seen)
