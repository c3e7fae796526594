"""engine/ never imports Qt; gui/ may import engine, never the reverse; the engine's packages stack in layers."""
import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
FORBIDDEN_IN_ENGINE = {"PySide6", "pyqtgraph", "superqt", "qtpy", "PyQt5", "PyQt6", "gui"}


def bare(module: str) -> str:
    """A module's name in the repository (engine.traces), as its files are laid out: the code
    imports it as attnscope.engine.traces, the one name attnscope installs."""
    return module.removeprefix("attnscope.")


def imported_roots(path: Path) -> set[str]:
    roots = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            roots |= {bare(a.name).split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            roots.add(bare(node.module).split(".")[0])
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


# ---- the engine's layers ---------------------------------------------------------------------
# The engine's packages (and its top-level modules) from the bottom up. A package imports only
# packages of the layers below its own, never one beside it or above, counting the imports
# inside functions: so no package loop can form. Why this order (docs/layout.md says it too):
# names and error types first (they import nothing); the machine (runtime: devices, memory,
# files, block sizes); the one attention seam and the texts of the corpora; our model families;
# loading, which builds a model and attaches the seam; the adapters, which read text and run a
# loaded model of any family; decoding, which steps an adapter (and writes the model's own
# greedy output that interventions and traces frame with); interventions, which change the
# model through the seam; traces, which record a Run under interventions; remote Runs (traces
# made by nnsight where a model is served); then what reads traces and runs experiments (an
# ndif: model's patching goes as a remote job, so remote sits below them); the atlas, a corpus of
# recorded Runs read with their statistics; training, which draws traces and analyses as it trains.
ENGINE_LAYERS: list[tuple[str, ...]] = [
    ("kinds", "errors", "inputs", "resources"),
    ("roles", "runtime"),
    ("seam", "corpora"),
    ("models",),
    ("loading",),
    ("adapters",),
    ("decoding",),
    ("interventions",),
    ("traces",),
    ("remote",),
    ("inspection", "experiments"),
    ("atlas",),
    ("training",),
]
LAYER_OF = {name: i for i, names in enumerate(ENGINE_LAYERS) for name in names}
MAX_IMPORTS_IN_FUNCTIONS = 20    # engine-to-engine imports across packages inside functions, each saying why


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def engine_imports(path: Path) -> list[tuple[str, int, bool]]:
    """(engine module imported, line, inside a function) for every import of ``path``."""
    me, is_package = _module_name(path), path.name == "__init__.py"
    found = []

    def visit(node, inside: bool) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.Import):
                found.extend((a.name, child.lineno, inside) for a in child.names)
            elif isinstance(child, ast.ImportFrom):
                if child.level:
                    base = me.split(".") if is_package else me.split(".")[:-1]
                    base = base[:len(base) - (child.level - 1)]
                    module = ".".join(base + ([child.module] if child.module else []))
                else:
                    module = child.module or ""
                found.append((module, child.lineno, inside))
                found.extend((f"{module}.{a.name}", child.lineno, inside) for a in child.names)
            visit(child, inside or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)))

    visit(ast.parse(path.read_text(encoding="utf-8")), False)
    return [(bare(m), line, inside) for m, line, inside in found if bare(m).startswith("engine.")]


def _package(module: str) -> str | None:
    """The layer name of an engine module: its subpackage, or the top-level module itself."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 and parts[1] in LAYER_OF else None


def cross_package_imports() -> list[tuple[str, str, str, int, bool]]:
    """(importing package, imported package, file, line, inside a function), one per import line and package."""
    out = set()
    for path in sorted((ROOT / "engine").rglob("*.py")):
        src = _package(_module_name(path))
        for module, line, inside in engine_imports(path):
            dst = _package(module)
            if src is not None and dst is not None and dst != src:
                out.add((src, dst, str(path.relative_to(ROOT)), line, inside))
    return sorted(out)


def test_every_engine_package_has_a_layer():
    names = {p.name for p in (ROOT / "engine").iterdir() if p.is_dir() and (p / "__init__.py").exists()}
    names |= {p.stem for p in (ROOT / "engine").glob("*.py") if p.stem != "__init__"}
    assert names == set(LAYER_OF)


def test_no_engine_package_imports_one_above_or_beside_it():
    upward = [f"{file}:{line} ({src} imports {dst})" for src, dst, file, line, _ in cross_package_imports()
              if LAYER_OF[dst] >= LAYER_OF[src]]
    assert upward == []


def test_no_package_loop_in_the_engine():
    edges: dict[str, set[str]] = {}
    for src, dst, *_ in cross_package_imports():
        edges.setdefault(src, set()).add(dst)

    def reaches(start: str, goal: str, seen: set[str]) -> bool:
        return any(n == goal or (n not in seen and reaches(n, goal, seen | {n})) for n in edges.get(start, ()))

    assert [p for p in edges if reaches(p, p, {p})] == []


# The AttentionTrace protocol (engine/traces/base.py) is being rewritten beside this change (issue 47,
# item 3); its two imports of engine.runtime.blocks keep torch out of base.py and get their comment there.
SAYS_WHY_ELSEWHERE: set[str] = set()


def test_imports_inside_functions_are_few_and_say_why():
    inside = [(file, line) for *_, file, line, fn in cross_package_imports() if fn]
    assert len(inside) <= MAX_IMPORTS_IN_FUNCTIONS, inside
    silent = [f"{file}:{line}" for file, line in inside if file not in SAYS_WHY_ELSEWHERE
              and "#" not in (ROOT / file).read_text(encoding="utf-8").splitlines()[line - 1]]
    assert silent == []


def test_each_package_has_a_public_face():
    """Each engine package's ``__init__`` says what it offers (a docstring) and lists what gui/
    and cli/ may import (``__all__``); every listed name resolves, and none resolved on first use
    (``_PUBLIC``, engine/runtime/public.py) is also the name of one of its modules (importing
    that module would put the module in the name's place on the package)."""
    import importlib

    for path in sorted((ROOT / "engine").glob("*/__init__.py")):
        package = importlib.import_module(f"attnscope.engine.{path.parent.name}")
        assert (package.__doc__ or "").strip() and package.__all__, path
        modules = {p.stem for p in path.parent.glob("*.py")}
        table = getattr(package, "_PUBLIC", {})
        lazy = set(table)
        itself = {n for n, m in table.items() if n == m}       # a module lent as itself (traces.reading)
        assert lazy <= set(package.__all__) and (lazy - itself).isdisjoint(modules), (path, lazy & modules)
        for name in package.__all__:
            getattr(package, name)


def _face_names(path: Path) -> tuple[set[str], dict[str, str]]:
    """(names a face's top level binds at run time, {name: module} of its ``if TYPE_CHECKING:`` block)."""
    bound, typed = set(), {}
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        if isinstance(node, ast.If) and isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING":
            for imp in node.body:
                assert isinstance(imp, ast.ImportFrom) and imp.level == 0, (path, imp.lineno)
                for a in imp.names:   # a module of the package itself (traces.reading) is typed as that module
                    own = (path.parent / f"{a.name}.py").exists() and (imp.module or "").endswith(path.parent.name)
                    typed[a.asname or a.name] = f"{imp.module}.{a.name}" if own else imp.module or ""
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            bound |= {(a.asname or a.name).split(".")[0] for a in node.names}
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            bound.add(node.name)
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            bound |= {t.id for t in targets if isinstance(t, ast.Name)}
    return bound, typed


def test_each_face_states_its_lazy_names_for_tools():
    """A face that lends names on first use (``_PUBLIC``) imports the same names, each from the
    same module, under ``if TYPE_CHECKING:``, so pyright types them and "go to definition" lands in
    the engine; and ``__all__`` is exactly what the face binds or lends, nothing more."""
    import importlib

    for path in sorted((ROOT / "engine").glob("*/__init__.py")):
        name = f"attnscope.engine.{path.parent.name}"
        package = importlib.import_module(name)
        bound, typed = _face_names(path)
        table = {n: f"{name}.{m}" for n, m in getattr(package, "_PUBLIC", {}).items()}
        assert typed == table, (path, set(typed) ^ set(table))
        assert bound.isdisjoint(typed), (path, bound & set(typed))
        assert set(package.__all__) - bound == set(typed), (path, set(package.__all__) - bound ^ set(typed))


def test_gui_and_cli_import_the_engine_through_its_packages_faces():
    """gui/ and cli/ import engine.<package> (its __init__: what it offers), never a module inside."""
    deep = []
    for f in sorted([*(ROOT / "gui").rglob("*.py"), *(ROOT / "cli").rglob("*.py"), ROOT / "main.py"]):
        for node in ast.walk(ast.parse(f.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.level == 0 and bare(node.module or "").count(".") >= 2 \
                    and bare(node.module).startswith("engine."):
                deep.append(f"{f.relative_to(ROOT)}:{node.lineno} {node.module}")
            elif isinstance(node, ast.Import):
                deep += [f"{f.relative_to(ROOT)}:{node.lineno} {a.name}" for a in node.names
                         if bare(a.name).startswith("engine.") and bare(a.name).count(".") >= 2]
    assert deep == []

