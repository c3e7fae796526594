"""attnscope export MODEL --text "..." --out DIR: views and traces as files, no display needed.

For papers and scripts: the heads grid, one head, or the head lines as PNG/SVG (drawn
offscreen by the same widgets the window uses, exactly what File > Export View writes: the
plot with its titles and colorbar, light unless --theme dark), or the trace's numbers as NPZ/CSV:
what --view asks (one head, every head of --kind or of every kind, or the overview pooled),
estimated first and refused past engine.inspection.export.EXPORT_LIMIT_BYTES with the numbers
(as File > Export Trace does). Every file is written to a temporary name beside its target and
renamed when complete.
"""
from __future__ import annotations

import os

from attnscope.cli.common import (BAD_INPUT, add_text_options, image_size, int_in, kept_file, open_or_explain, out_folder,
                        print_json, say, text, text_of, writable_problem)

VIEWS = ("grid", "head", "lines", "pooled")   # pooled: numbers only (npz, csv)


def register(sub) -> None:
    p = sub.add_parser("export", help="write views (PNG/SVG) or the trace (NPZ/CSV) of a model on a text")
    p.add_argument("model", help="checkpoint, Hugging Face folder, 'minilm', 'random-<family>', or a recording "
                                 "(attnscope record; then no --text)")
    add_text_options(p, required=False, chat=True)
    p.add_argument("--target", default=None, type=text, help="translator: a target prefix (default: its own translation)")
    p.add_argument("--pair", default=None, type=text, help="BERT: a second sentence")
    p.add_argument("--out", required=True, type=out_folder, help="folder to write into")
    p.add_argument("--force", action="store_true", help="replace a file of the same name in --out (by default an "
                   "existing file is never written over)")
    p.add_argument("--view", choices=VIEWS, default="grid",
                   help="grid: every head (npz/csv: of --kind, or of every kind); head: --layer/--head of --kind; "
                        "lines: each query's strongest keys (an image); pooled: the overview's pooled numbers "
                        "(npz/csv)")
    p.add_argument("--format", choices=["png", "svg", "npz", "csv"], default="png")
    p.add_argument("--kind", default=None, help="attention kind (default: the last the model has; npz/csv of the "
                                                 "grid or pooled view: every kind)")
    p.add_argument("--value-weighted", action="store_true",
                   help="alpha_ij ||f(x_j)|| per row as shares (Kobayashi et al., 2020) instead of the weights")
    p.add_argument("--layer", type=int_in(0, 10_000), default=0)
    p.add_argument("--head", type=int_in(0, 10_000), default=0)
    p.add_argument("--size", default=(1200, 800), type=image_size, help="image size WxH, each side 16 to 8192")
    p.add_argument("--theme", choices=["light", "dark"], default="light",
                   help="PNG/SVG: the colours of File > Export View in that theme (default light)")
    p.add_argument("--max-seconds", type=int_in(1, 86_400), default=MAX_DRAW_SECONDS,
                   help=f"PNG/SVG of a long recording: refuse a drawing estimated to take longer (default "
                        f"{MAX_DRAW_SECONDS})")
    p.set_defaults(func=run)


# A drawing estimated longer is refused with its numbers, before it starts: a command-line user
# waits a minute or two with a progress bar (a 32k recording's grid, about 2-10 min on a CPU, was
# refused under the old 60 s), not for hours. Its memory is the pooled tiles and the image, a few
# MB whatever the length (the recording itself is already in memory), so time is what is refused.
MAX_DRAW_SECONDS = 3600
SAY_ESTIMATE_S = 5         # a drawing estimated longer says so (one line) and shows progress on a terminal


def run(args) -> int:
    from attnscope.engine.inputs import InputError, Prompt
    from attnscope.engine.remote import remote_of, trace_remote
    from attnscope.engine.traces import trace_text

    problem = writable_problem(args.out) or (args.format not in ("npz", "csv") and
                                             kept_file(args.out / f"{args.view}.{args.format}", args.force))
    if problem:
        say(problem)
        return BAD_INPUT
    from attnscope.engine.traces import is_recording, load_recording

    body = text_of(args)
    if body is None or is_recording(args.model):    # a recording draws with no model
        if body is None and not str(args.model).endswith(".safetensors"):
            say("--text or --text-file is required (unless MODEL is a recording made by attnscope record)")
            return BAD_INPUT
        # --device cuda: a long recording drawn on the GPU; RecordingError (a damaged file, no such device): exit 2
        loaded, trace = None, load_recording(args.model, args.device or "cpu")
    else:
        loaded = open_or_explain(args.model, args.device or "cpu")
        if loaded is None:
            return BAD_INPUT
        try:
            prompt = Prompt.of(body, args.target, args.pair)             # checked once
            if remote_of(loaded) is not None and not args.value_weighted:   # ndif:MODEL: one nnsight job
                trace = trace_remote(loaded, prompt, say=say)
            else:
                trace = trace_text(loaded, prompt, value_weighted=args.value_weighted)
        except InputError as exc:
            say(exc)
            return BAD_INPUT
    out = args.out
    if args.format in ("npz", "csv"):
        return _write_numbers(args, trace, out)
    if args.view == "pooled":
        say("--view pooled writes the overview's pooled numbers (--format npz or csv); --view grid draws them")
        return BAD_INPUT
    kind = args.kind or trace.kinds[-1]
    if kind not in trace.kinds:
        say(f"this model has no {kind!r} attention; it has {', '.join(trace.kinds)}")
        return BAD_INPUT
    layers, heads = trace.shape(kind)[:2]
    if args.layer >= layers or args.head >= heads:
        say(f"--layer must be below {layers} and --head below {heads} for this model's {kind} attention "
            f"(got layer {args.layer}, head {args.head})")
        return BAD_INPUT
    from attnscope.engine.traces import estimate_drawing

    est = estimate_drawing(trace, kind, layers * heads if args.view == "grid" else 1)
    if est.seconds > args.max_seconds:
        say(f"Drawing the {args.view} view of this {kind} attention computes {est.describe()}, over the "
            f"{args.max_seconds:,} s allowed (--max-seconds); nothing was written. Draw one head (--view head "
            "--layer L --head H), draw it on a GPU (attnscope --device cuda export ...), or allow more time with "
            "--max-seconds.")
        return BAD_INPUT
    if est.seconds > SAY_ESTIMATE_S:
        say(f"drawing the {args.view} view: {est.describe()}")
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")  # no display needed
    from attnscope.gui.render import render_view

    w, h = args.size
    bar = _ProgressBar(f"drawing the {args.view} view")
    try:
        path = render_view(loaded, trace, args.view, kind, args.layer, args.head, f"{w}x{h}",
                           out / f"{args.view}.{args.format}", dark=args.theme == "dark", progress=bar,
                           timeout_s=max(60.0, 4 * est.seconds + 30))
    finally:
        bar.close()
    from attnscope.engine.kinds import NOT_SOFTMAX    # a signed kind: the image's colours are mixing, not weights
    notes = list(trace.notes) + ([NOT_SOFTMAX[kind]] if kind in NOT_SOFTMAX else [])
    print_json({"written": [str(path)], "view": args.view, "kind": kind, "notes": notes})
    return 0


def _write_numbers(args, trace, out) -> int:
    """--format npz/csv: what --view asks, estimated (one line when it takes a while), refused
    past the export limit, written with a progress bar."""
    from attnscope.engine.inspection import ExportAsk, ExportError, estimate_export, export_trace, refusal

    if args.view == "lines":
        say("--view lines draws each query's strongest keys as an image (png, svg); for --format "
            f"{args.format} choose --view head (one head), grid (every head) or pooled (the overview)")
        return BAD_INPUT
    what = {"head": "head", "pooled": "pooled"}.get(args.view, "kind" if args.kind else "trace")
    bar = None
    try:
        ask = ExportAsk(what, args.kind, args.layer, args.head).resolved(trace)
        est = estimate_export(trace, ask, args.format)
        problem = refusal(trace, est)
        if problem:
            say(problem)
            return BAD_INPUT
        if est.seconds > SAY_ESTIMATE_S:
            say(f"exporting {est.what}: {est.describe()}")
        problem = kept_file(out / ask.file_name(args.format), args.force)
        if problem:
            say(problem)
            return BAD_INPUT
        bar = _ProgressBar(f"exporting {ask.what}", unit="layer" if what == "pooled" else "weight")
        path = export_trace(trace, out / ask.file_name(args.format), ask, args.format, report=bar)
    except ExportError as exc:
        say(exc)
        return BAD_INPUT
    finally:
        if bar is not None:
            bar.close()
    print_json({"written": [str(path)], "what": what, "kinds": ask.kinds(trace),
                **({"layer": ask.layer, "head": ask.head} if what == "head" else {}),
                "bytes": path.stat().st_size, "notes": trace.notes})
    return 0


class _ProgressBar:
    """Progress records ((stage, done, total): a view's layers, an export's weights) as a tqdm bar
    on stderr, on a terminal only and after a second (a small export draws with no flash of bar)."""

    def __init__(self, what: str, unit: str = "layer"):
        self.what, self.unit, self.bar = what, unit, None

    def __call__(self, record) -> None:
        if not (isinstance(record, tuple) and len(record) == 3):
            return
        _stage, done, total = record
        if self.bar is None:
            import sys

            from tqdm import tqdm
            self.bar = tqdm(total=total, file=sys.stderr, delay=1.0, leave=False, unit=self.unit,
                            unit_scale=self.unit != "layer", disable=not sys.stderr.isatty(), desc=self.what)
        self.bar.update(done - self.bar.n)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()
