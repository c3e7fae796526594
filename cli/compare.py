"""attnscope compare HF_FOLDER_OR_NAME --text "...": Hugging Face's BERT against the same
weights in attnscope's encoder, as JSON (max absolute difference per layer and overall)."""
from __future__ import annotations

import sys

from cli.common import BAD_INPUT, print_json


def register(sub) -> None:
    p = sub.add_parser("compare", help="check attnscope's BERT against Hugging Face's on the same weights (JSON)")
    p.add_argument("model", help="a Hugging Face folder, a hub name (online only), or 'minilm' (bundled)")
    p.add_argument("--text", default="time flies like an arrow")
    p.add_argument("--pair", default=None, help="a second sentence (segment B)")
    p.set_defaults(func=run)


def run(args) -> int:
    from engine.hf import HFModelError, compare, hf_to_scratch, load_hf_model, minilm_path
    from engine.tracing import InputError

    try:
        source = minilm_path() if args.model == "minilm" else args.model
        hf = load_hf_model(source, args.device or "cpu")
        ours = hf_to_scratch(hf)
        diff = compare(hf, ours, args.text, args.pair)
    except (HFModelError, InputError, ValueError) as exc:
        print(f"attnscope: {exc}", file=sys.stderr)
        return BAD_INPUT
    print_json({"model": hf.name, "text": args.text, "pair": args.pair, "tokens": diff["tokens"],
                "max_abs_diff_per_layer": diff["per_layer"], "max_abs_diff": diff["max"]})
    return 0
