"""attnscope compare MODEL [--with OTHER] --text "...": the attention of two models on the
same text, as JSON (max absolute difference per kind, per layer and overall).

Without --with, MODEL must be a Hugging Face BERT: it is compared with the same weights in
attnscope's own encoder (the proof that our BERT is BERT). With --with, any two models
that tokenize the same way: two checkpoints of one architecture, ours against theirs."""
from __future__ import annotations

from attnscope.cli.common import BAD_INPUT, add_text_options, print_json, say, text, text_of
from attnscope.results import model_notes


def register(sub) -> None:
    p = sub.add_parser("compare", help="check attnscope's BERT against Hugging Face's on the same weights (JSON)")
    p.add_argument("model", help="a Hugging Face folder, a hub name (online only), or 'minilm' (bundled)")
    add_text_options(p, required=False, default="time flies like an arrow")
    p.add_argument("--pair", default=None, type=text, help="a second sentence (segment B)")
    p.add_argument("--with", dest="other", default=None, help="a second model (file or folder) to compare with")
    p.set_defaults(func=run)


def run(args) -> int:
    from attnscope.engine.loading import open_model
    from attnscope.engine.inspection import compare_models
    from attnscope.engine.loading import hf_to_scratch

    device = args.device or "cpu"
    args.text = text_of(args)
    args.shown = {"text": args.text} if args.text_file is None else {"text_file": str(args.text_file)}
    try:
        hf = open_model(args.model, device)   # the one loader boundary: folders, hub ids, minilm
        if args.other is not None:
            return _compare_two(hf, open_model(args.other, device), args)
        if hf.family != "hf-bert":
            say(f"{args.model} is a {hf.family} model; 'compare' without --with needs a Hugging Face BERT folder "
                "(or 'minilm'); give --with OTHER to compare two models.")
            return BAD_INPUT
        ours = hf_to_scratch(hf)
        diff = compare_models(hf, ours, args.text, args.pair)
    except ValueError as exc:  # ModelLoadError, HFModelError, InputError
        say(exc)
        return BAD_INPUT
    print_json({"model": hf.name, **args.shown, "pair": args.pair, "tokens": diff["tokens"],
                "max_abs_diff_per_layer": diff["per_layer"], "max_abs_diff": diff["max"], "notes": diff["notes"],
                **model_notes(hf)})
    return 0


def _compare_two(a, b, args) -> int:
    from attnscope.engine.inputs import Prompt
    from attnscope.engine.inspection import compare_traces
    from attnscope.engine.traces import trace_text

    prompt = Prompt.of(args.text, pair=args.pair)          # checked once, for both models
    ta, tb = trace_text(a, prompt), trace_text(b, prompt)
    shared = [k for k in ta.kinds if k in tb.kinds]
    if not shared:
        say(f"{a.name} and {b.name} have no kind of attention in common.")
        return BAD_INPUT
    kinds = {k: compare_traces(ta, tb, k) for k in shared}
    print_json({"a": a.name, "b": b.name, **args.shown,
                "kinds": {k: {"max_abs_diff": c["max"], "max_abs_diff_per_layer": c["per_layer"]} for k, c in kinds.items()},
                "max_abs_diff": max(c["max"] for c in kinds.values()),
                "notes": list(dict.fromkeys(ta.notes + tb.notes))})     # e.g. the text cut to a model's length
    return 0
