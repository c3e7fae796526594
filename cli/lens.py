"""attnscope lens MODEL --text T [--target PREFIX] --json: the logit lens, layer by layer.

For each decoder layer and each position, the five tokens the residual stream would predict
through the model's own final norm and unembedding (engine.interventions.lens); the last
layer is the model's own prediction.
"""
from __future__ import annotations

from attnscope.cli.common import BAD_INPUT, add_text_options, open_predicting, print_json, text, text_of


def register(sub) -> None:
    p = sub.add_parser("lens", help="logit lens: each decoder layer's top-5 next tokens per position (JSON)")
    p.add_argument("model", help="checkpoint, Hugging Face folder or hub id, random-<family>")
    add_text_options(p, chat=True)
    p.add_argument("--target", type=text, default=None, help="an encoder-decoder's decoder prefix (default: its own "
                                                             "greedy output)")
    p.add_argument("--json", action="store_true", help="print JSON (the only output format)")
    p.set_defaults(func=run)


def run(args) -> int:
    from attnscope.results import lens

    body = text_of(args)
    loaded = open_predicting(args.model, args.device or "auto", "the logit lens")
    if loaded is None:
        return BAD_INPUT
    print_json(lens(loaded, body, target=args.target).to_json())   # ndif:MODEL: one nnsight job where it is served
    return 0
