"""attnscope export MODEL --text "..." --out DIR: views and traces as files, no display needed.

For papers and scripts: the heads grid, one head, or the head lines as PNG/SVG (drawn
offscreen by the same widgets the window uses), or the trace as NPZ/CSV.
"""
from __future__ import annotations

import os
import sys
from pathlib import Path

from cli.common import BAD_INPUT, open_or_explain, print_json

VIEWS = ("grid", "head", "lines")


def register(sub) -> None:
    p = sub.add_parser("export", help="write views (PNG/SVG) or the trace (NPZ/CSV) of a model on a text")
    p.add_argument("model", help="checkpoint, Hugging Face folder, 'minilm' or 'random-<family>'")
    p.add_argument("--text", required=True)
    p.add_argument("--target", default=None, help="translator: a target prefix (default: its own translation)")
    p.add_argument("--pair", default=None, help="BERT: a second sentence")
    p.add_argument("--out", required=True, help="folder to write into")
    p.add_argument("--view", choices=VIEWS, default="grid")
    p.add_argument("--format", choices=["png", "svg", "npz", "csv"], default="png")
    p.add_argument("--kind", default=None, help="attention kind (default: the last the model has)")
    p.add_argument("--layer", type=int, default=0)
    p.add_argument("--head", type=int, default=0)
    p.add_argument("--size", default="1200x800", help="image size WxH")
    p.set_defaults(func=run)


def run(args) -> int:
    from engine.tracing import InputError, trace_text

    loaded = open_or_explain(args.model, args.device or "cpu")
    if loaded is None:
        return BAD_INPUT
    try:
        trace = trace_text(loaded, args.text, target=args.target, pair=args.pair)
    except InputError as exc:
        print(f"attnscope: {exc}", file=sys.stderr)
        return BAD_INPUT
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    if args.format in ("npz", "csv"):
        from engine import export
        path = (export.save_npz if args.format == "npz" else export.save_csv)(trace, out / f"trace.{args.format}")
        print_json({"written": [str(path)], "kinds": trace.kinds})
        return 0
    kind = args.kind or trace.kinds[-1]
    if kind not in trace.kinds:
        print(f"attnscope: this model has no {kind!r} attention; it has {', '.join(trace.kinds)}", file=sys.stderr)
        return BAD_INPUT
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")  # no display needed
    from gui.render import render_view

    path = render_view(loaded, trace, args.view, kind, args.layer, args.head, args.size,
                       out / f"{args.view}.{args.format}")
    print_json({"written": [str(path)], "view": args.view, "kind": kind, "notes": trace.notes})
    return 0
