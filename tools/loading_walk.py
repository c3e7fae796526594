"""The walk of one model source through the loader: which rooms (modules) it stays in, in order.

Why: a newcomer who follows a model from the CLI's ``open_or_explain`` to a LoadedModel should
pass each room of engine/loading once, in order (resolve -> describe -> check -> build ->
attach), not go back and forth between them. This prints that walk so it can be kept short.

How: the source is opened for real (a tiny Hugging Face folder saved sharded, the same by
hub id from a local cache, and one of attnscope's bundled checkpoints) under ``sys.setprofile``. A project function (cli/, engine/)
is part of the walk when one of its arguments carries the source on: the name given, the
folder, the device, the progress callback, or an object that holds one of them (a
description, a reporter); the caller's progress bar, called back with each record, is the
caller's own and not counted. Each function counts once, at its first call, as a static walk of
the calls would see it (a loop's calls are one call). A *stay* is a run of functions of one
module; a *return* is a stay in a module already left.

    .venv/bin/python tools/loading_walk.py          # prints the walks and one JSON line
"""
from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
PROJECT = ("cli", "engine")


def _carries(value, marks: list, depth: int = 0) -> bool:
    if any(value is m for m in marks):
        return True
    if isinstance(value, (str, Path)):
        return str(value) in {str(m) for m in marks if isinstance(m, (str, Path))}
    if depth == 0 and hasattr(value, "__dict__") and not isinstance(value, type):
        try:
            return any(_carries(v, marks, 1) for v in vars(value).values())
        except TypeError:
            return False
    return False


def walk(source: str, device: str = "cpu", folder: Path | None = None) -> list[str]:
    """The modules of the functions that carried ``source`` on, in the order first called."""
    from attnscope.cli.common import LoadBar, open_or_explain

    bar = LoadBar()
    marks: list = [source, device, bar, *([folder] if folder else [])]
    seen, order = set(), []

    def profile(frame, event, _arg):
        if event != "call":
            return
        code = frame.f_code
        try:
            rel = Path(code.co_filename).resolve().relative_to(ROOT)
        except ValueError:
            return
        if rel.parts[0] not in PROJECT or (code.co_filename, code.co_firstlineno) in seen:
            return
        args = [frame.f_locals.get(n) for n in code.co_varnames[:code.co_argcount + code.co_kwonlyargcount]]
        if args and args[0] is bar:       # the caller's own progress bar drawing a record: not a room of the loader
            return
        if any(_carries(a, marks) for a in args):
            seen.add((code.co_filename, code.co_firstlineno))
            order.append(f"{'.'.join(rel.with_suffix('').parts)}:{code.co_name}")
            for a in args:        # what a stage hands on (a description, a reporter) carries the source too
                # not an array (a tensor's == answers elementwise, and data carries no source); by identity
                # nor an empty tuple: one object in all Python (a hook's args of a call by keyword), it carries nothing
                if a is not None and not (type(a) is tuple and not a) and not isinstance(a, (str, int, float, bool, Path)) \
                        and not hasattr(a, "shape") and not any(a is m for m in marks):
                    marks.append(a)

    import attnscope.cli.common as common

    original = common.LoadBar
    common.LoadBar = lambda: bar
    sys.setprofile(profile)
    try:
        loaded = open_or_explain(source, device)
    finally:
        sys.setprofile(None)
        common.LoadBar = original
    assert loaded is not None, f"{source} did not open"
    return order


def stays(order: list[str]) -> list[str]:
    out: list[str] = []
    for step in order:
        room = step.split(":")[0]
        if not out or out[-1] != room:
            out.append(room)
    return out


def summary(order: list[str]) -> dict:
    rooms = stays(order)
    returns = sum(1 for i, r in enumerate(rooms) if r in rooms[:i])
    return {"rooms": len(set(rooms)), "stays": len(rooms), "returns": returns}


def main() -> None:
    import torch

    sys.path.insert(0, str(ROOT))
    import os

    from attnscope.engine.loading.catalog import bundled_checkpoints
    from tests.helpers.hf_sharded import build_model, put_in_cache, save_sharded

    results = {}
    with tempfile.TemporaryDirectory() as tmp:
        model, tokenizer = build_model("llama", dtype=torch.bfloat16)
        folder = save_sharded(model, tokenizer, Path(tmp) / "llama")
        put_in_cache(folder, Path(tmp) / "hub", "tiny-org/llama")
        os.environ.update(HF_HUB_CACHE=str(Path(tmp) / "hub"), HF_HUB_OFFLINE="1")
        sources = {"folder": (str(folder), folder), "hub id": ("tiny-org/llama", None),
                   "checkpoint": (str(bundled_checkpoints()[0]), None)}
        for what, (source, path) in sources.items():
            order = walk(source, "cpu", path)
            print(f"# {what}: {source}")
            for room in stays(order):
                print("   ", room)
            results[what] = summary(order)
    print(json.dumps(results))


if __name__ == "__main__":
    main()
