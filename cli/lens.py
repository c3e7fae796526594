"""attnscope lens MODEL --text T [--target PREFIX] --json: the logit lens, layer by layer.

For each decoder layer and each position, the five tokens the residual stream would predict
through the model's own final norm and unembedding (engine.interventions.lens); the last
layer is the model's own prediction.
"""
from __future__ import annotations

from attnscope.cli.common import BAD_INPUT, add_text_options, model_notes, open_predicting, print_json, text, text_of
from attnscope.cli.why import check_target


def register(sub) -> None:
    p = sub.add_parser("lens", help="logit lens: each decoder layer's top-5 next tokens per position (JSON)")
    p.add_argument("model", help="checkpoint, Hugging Face folder or hub id, random-<family>")
    add_text_options(p, chat=True)
    p.add_argument("--target", type=text, default=None, help="an encoder-decoder's decoder prefix (default: its own "
                                                             "greedy output)")
    p.add_argument("--json", action="store_true", help="print JSON (the only output format)")
    p.set_defaults(func=run)


def run(args) -> int:
    from attnscope.engine.interventions import logit_lens
    from attnscope.engine.remote import remote_lens, remote_of

    body = text_of(args)
    loaded = open_predicting(args.model, args.device or "auto", "the logit lens")
    if loaded is None:
        return BAD_INPUT
    check_target(loaded, args.target)
    if remote_of(loaded) is not None:            # ndif:MODEL: read where it is served, one nnsight job
        lens = remote_lens(loaded, body)
    else:
        lens = logit_lens(loaded, body, target=args.target)
    layers = [{"layer": layer, "top": [[[int(i), float(p)] for i, p in zip(ids, ps)]
                                       for ids, ps in zip(lens.top_ids[layer], lens.top_p[layer])]}
              for layer in range(lens.n_layers)]
    print_json({"model": loaded.name, "token_ids": lens.token_ids, "tokens": lens.tokens, "layers": layers,
                **model_notes(loaded)})
    return 0
