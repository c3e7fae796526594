"""attnscope compare HF_FOLDER_OR_NAME --text "...": Hugging Face's BERT against the same
weights in attnscope's encoder, as JSON (max absolute difference per layer and overall)."""
from __future__ import annotations

from pathlib import Path

from cli.common import BAD_INPUT, model_notes, print_json, say, text


def register(sub) -> None:
    p = sub.add_parser("compare", help="check attnscope's BERT against Hugging Face's on the same weights (JSON)")
    p.add_argument("model", help="a Hugging Face folder, a hub name (online only), or 'minilm' (bundled)")
    p.add_argument("--text", default="time flies like an arrow", type=text)
    p.add_argument("--pair", default=None, type=text, help="a second sentence (segment B)")
    p.set_defaults(func=run)


def run(args) -> int:
    from engine.catalog import MINILM, open_model
    from engine.hf import compare, hf_to_scratch, load_hf_model

    device = args.device or "cpu"
    try:
        if args.model == MINILM or Path(args.model).expanduser().exists():
            hf = open_model(args.model, device)   # the one loader boundary
        else:
            hf = load_hf_model(args.model, device)  # a hub name: downloaded (online only), then checked the same way
        if hf.family != "hf-bert":
            say(f"{args.model} is a {hf.family} model; 'compare' needs a Hugging Face BERT folder (or 'minilm').")
            return BAD_INPUT
        ours = hf_to_scratch(hf)
        diff = compare(hf, ours, args.text, args.pair)
    except ValueError as exc:  # ModelLoadError, HFModelError, InputError
        say(exc)
        return BAD_INPUT
    print_json({"model": hf.name, "text": args.text, "pair": args.pair, "tokens": diff["tokens"],
                "max_abs_diff_per_layer": diff["per_layer"], "max_abs_diff": diff["max"], **model_notes(hf)})
    return 0
