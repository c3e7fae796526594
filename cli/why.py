"""attnscope why MODEL --text T --head L.H --query I --key J [--versus J2] [--loadings] --json

Why does a head attend here: the score of one cell split into (query source x key source)
terms (engine.experiments.why). Positions index the tokens the model reads, specials
included, as ``export`` writes them: the query side and the key side of the kind (a cross-
attention query is a decoder position, its key an encoder position).
"""
from __future__ import annotations

import argparse

from attnscope.cli.common import BAD_INPUT, add_text_options, open_or_explain, print_json, text, text_of, whole_number
from attnscope.cli.intervene import KIND_PREFIX, head_arg

KINDS = {**KIND_PREFIX, **{k: k for k in KIND_PREFIX.values()}}


def _kind(value: str) -> str:
    if value not in KINDS:
        raise argparse.ArgumentTypeError(f"the kind is one of {', '.join(repr(k) for k in KINDS)}, got {value!r}")
    return KINDS[value]


def _position(value: str) -> int:
    return whole_number(value, "a position")


def register(sub) -> None:
    p = sub.add_parser("why", help="split one attention score into query-source x key-source terms (JSON)")
    p.add_argument("model", help="checkpoint, Hugging Face folder or hub id, random-<family>")
    add_text_options(p, chat=True)
    p.add_argument("--target", type=text, default=None, help="an encoder-decoder's decoder prefix (default: its own "
                                                             "greedy output)")
    p.add_argument("--head", type=head_arg, required=True, help="the head as L.H (layer.head, 0-based); may start "
                                                                "with enc:, dec: or cross:")
    p.add_argument("--kind", type=_kind, default=None, help="encoder self, decoder self or cross (or enc, dec, cross); "
                                                            "default: the decoder's self-attention (an encoder's)")
    p.add_argument("--query", type=_position, required=True, help="the query position (0-based, specials included)")
    p.add_argument("--key", type=_position, required=True, help="the key position")
    p.add_argument("--versus", type=_position, default=None, help="another key of the same row to compare with")
    p.add_argument("--loadings", action="store_true", help="also the head's loadings: the attention-weighted mean "
                                                           "of the table over its cells")
    p.add_argument("--json", action="store_true", help="print JSON (the only output format)")
    p.set_defaults(func=run)


def run(args) -> int:
    from attnscope.engine.inputs import InputError
    from attnscope.results import why

    body = text_of(args)
    head_kind, layer, head = args.head
    if head_kind and args.kind and head_kind != args.kind:
        raise InputError(f"--head says {head_kind} and --kind says {args.kind}: give one kind.")
    loaded = open_or_explain(args.model, args.device or "auto")
    if loaded is None:
        return BAD_INPUT
    answer = why(loaded, body, layer, head, args.query, args.key, kind=head_kind or args.kind, versus=args.versus,
                 loadings=args.loadings, target=args.target)
    print_json(answer.to_json())
    return 0
