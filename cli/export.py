"""attnscope export MODEL --text "..." --out DIR: views and traces as files, no display needed.

For papers and scripts: the heads grid, one head, or the head lines as PNG/SVG (drawn
offscreen by the same widgets the window uses, exactly what File > Export View writes: the
plot with its titles and colorbar, light unless --theme dark), or the trace as NPZ/CSV. Every file is
written to a temporary name beside its target and renamed when complete.
"""
from __future__ import annotations

import os

from cli.common import (BAD_INPUT, image_size, int_in, open_or_explain, out_folder, print_json, say, text,
                        writable_problem)

VIEWS = ("grid", "head", "lines")


def register(sub) -> None:
    p = sub.add_parser("export", help="write views (PNG/SVG) or the trace (NPZ/CSV) of a model on a text")
    p.add_argument("model", help="checkpoint, Hugging Face folder, 'minilm', 'random-<family>', or a recording "
                                 "(attnscope record; then no --text)")
    p.add_argument("--text", default=None, type=text)
    p.add_argument("--target", default=None, type=text, help="translator: a target prefix (default: its own translation)")
    p.add_argument("--pair", default=None, type=text, help="BERT: a second sentence")
    p.add_argument("--out", required=True, type=out_folder, help="folder to write into")
    p.add_argument("--view", choices=VIEWS, default="grid")
    p.add_argument("--format", choices=["png", "svg", "npz", "csv"], default="png")
    p.add_argument("--kind", default=None, help="attention kind (default: the last the model has)")
    p.add_argument("--value-weighted", action="store_true",
                   help="alpha_ij ||f(x_j)|| per row as shares (Kobayashi et al., 2020) instead of the weights")
    p.add_argument("--layer", type=int_in(0, 10_000), default=0)
    p.add_argument("--head", type=int_in(0, 10_000), default=0)
    p.add_argument("--size", default=(1200, 800), type=image_size, help="image size WxH, each side 16 to 8192")
    p.add_argument("--theme", choices=["light", "dark"], default="light",
                   help="PNG/SVG: the colours of File > Export View in that theme (default light)")
    p.set_defaults(func=run)


def run(args) -> int:
    from engine.inputs import InputError
    from engine.traces.tracing import trace_text

    problem = writable_problem(args.out)
    if problem:
        say(problem)
        return BAD_INPUT
    from engine.traces.recording_file import is_recording, load_recording

    if args.text is None or is_recording(args.model):    # a recording draws with no model
        if args.text is None and not str(args.model).endswith(".safetensors"):
            say("--text is required (unless MODEL is a recording made by attnscope record)")
            return BAD_INPUT
        loaded, trace = None, load_recording(args.model)     # RecordingError: one sentence, exit 2
    else:
        loaded = open_or_explain(args.model, args.device or "cpu")
        if loaded is None:
            return BAD_INPUT
        try:
            trace = trace_text(loaded, args.text, target=args.target, pair=args.pair,
                               value_weighted=args.value_weighted)
        except InputError as exc:
            say(exc)
            return BAD_INPUT
    out = args.out
    if args.format in ("npz", "csv"):
        from engine.inspection import export
        path = (export.save_npz if args.format == "npz" else export.save_csv)(trace, out / f"trace.{args.format}")
        print_json({"written": [str(path)], "kinds": trace.kinds, "notes": trace.notes})
        return 0
    kind = args.kind or trace.kinds[-1]
    if kind not in trace.kinds:
        say(f"this model has no {kind!r} attention; it has {', '.join(trace.kinds)}")
        return BAD_INPUT
    layers, heads = trace.shape(kind)[:2]
    if args.layer >= layers or args.head >= heads:
        say(f"--layer must be below {layers} and --head below {heads} for this model's {kind} attention "
            f"(got layer {args.layer}, head {args.head})")
        return BAD_INPUT
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")  # no display needed
    from gui.render import render_view

    w, h = args.size
    path = render_view(loaded, trace, args.view, kind, args.layer, args.head, f"{w}x{h}",
                       out / f"{args.view}.{args.format}", dark=args.theme == "dark")
    print_json({"written": [str(path)], "view": args.view, "kind": kind, "notes": trace.notes})
    return 0
