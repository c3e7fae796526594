"""A static walk of the engine's calls from one function: which rooms (modules) it passes, in order.

Why: issue 47 measures the loader by walking, statically, every call from
``engine.loading.pipeline.load`` down: a newcomer reading it should pass each room once, not go
back and forth. tools/loading_walk.py follows a real load at run time (what carries the source
on); this reads the code alone, so every branch counts.

How: each engine module is parsed; a call is followed when it names an engine function (a
function of the same module, one imported from another module inside the engine, or a name a
package's public face lends from one of its modules), depth first, in the order the calls stand
in the code, each function once. Methods, callbacks and calls through objects are not followed
(a static reading cannot know them). A *stay* is a run of functions of one module; a *return* is
a stay in a module already left. Counted twice: over every engine module, and over the
starting package's own rooms (the loader's stages: describe, check, build, ...).

    .venv/bin/python tools/static_walk.py                     # from engine.loading.pipeline.load
    .venv/bin/python tools/static_walk.py engine.traces.tracing trace_text
"""
from __future__ import annotations

import ast
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tools import loading_walk  # noqa: E402  (stays and returns counted one way)


def modules() -> dict[str, ast.Module]:
    found = {}
    for f in sorted((ROOT / "engine").rglob("*.py")):
        name = ".".join(f.relative_to(ROOT).with_suffix("").parts).removesuffix(".__init__")
        found[name] = ast.parse(f.read_text(encoding="utf-8"))
    return found


def faces(trees: dict[str, ast.Module]) -> dict[str, dict[str, str]]:
    """package -> {public name: module}, read from a package's ``_PUBLIC`` table (its lazy face)."""
    out = {}
    for name, tree in trees.items():
        for node in tree.body:
            if isinstance(node, ast.Assign) and any(getattr(t, "id", "") == "_PUBLIC" for t in node.targets):
                try:
                    table = ast.literal_eval(node.value)
                except ValueError:
                    continue
                out[name] = {k: f"{name}.{v}" for k, v in table.items()}
    return out


def functions(tree: ast.Module) -> dict[str, ast.AST]:
    return {n.name: n for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))}


def imported(tree: ast.AST, face: dict[str, dict[str, str]], trees) -> dict[str, tuple[str, str]]:
    """name used -> (module, function) for engine functions imported anywhere in ``tree``."""
    out = {}
    for node in ast.walk(tree):
        # rooms are named as the files lie (engine.loading.pipeline); the code imports attnscope.engine...
        if isinstance(node, ast.ImportFrom) and node.level == 0 and \
                (node.module or "").removeprefix("attnscope.").startswith("engine"):
            for a in node.names:
                module = node.module.removeprefix("attnscope.")
                if module in face and a.name in face[module]:
                    module = face[module][a.name]
                if module in trees and a.name in functions(trees[module]):
                    out[a.asname or a.name] = (module, a.name)
    return out


def calls_in_order(fn: ast.AST) -> list[ast.Call]:
    found: list[ast.Call] = []

    class Visitor(ast.NodeVisitor):
        def visit_Call(self, node):
            self.generic_visit(node)          # arguments first: they are called before the call
            found.append(node)
    Visitor().visit(fn)
    return found


def walk(start_module: str, start: str) -> list[str]:
    trees = modules()
    face = faces(trees)
    seen, order = set(), []

    def visit(module: str, name: str) -> None:
        if (module, name) in seen:
            return
        seen.add((module, name))
        order.append(f"{module}:{name}")
        fn = functions(trees[module])[name]
        names = imported(trees[module], face, trees)
        local = functions(trees[module])
        for call in calls_in_order(fn):
            if isinstance(call.func, ast.Name):
                if call.func.id in names:
                    visit(*names[call.func.id])
                elif call.func.id in local:
                    visit(module, call.func.id)
    visit(start_module, start)
    return order


def own_rooms(order: list[str], package: str) -> list[str]:
    """The walk through ``package``'s own modules: the stages of a pipeline, its calls out to
    the helpers below it (errors, files, devices) left out."""
    return [step for step in order if step.startswith(package + ".")]


def main() -> None:
    module, name = (sys.argv[1], sys.argv[2]) if len(sys.argv) > 2 else ("engine.loading.pipeline", "load")
    order = walk(module, name)
    package = module.rsplit(".", 1)[0]
    for room in loading_walk.stays(order):
        print("   ", room)
    print(json.dumps({"every engine module": loading_walk.summary(order),
                      f"{package} only": loading_walk.summary(own_rooms(order, package))}))


if __name__ == "__main__":
    main()
