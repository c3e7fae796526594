"""attnscope intervene MODEL --text T [--ablate L.H ...] [--mean-ablate L.H ...] [--knockout Q:K@LAYERS ...] --json

The next-token distribution at the text's last position without and with the changes
(engine.interventions.effect): both forwards read the same ids. A head is ``L.H``; a
knockout ``QUERY:KEY@LAYERS`` with positions 0-based over the ids fed (``*`` every
position, ``a-b`` a range) and LAYERS ``3``, ``2-5`` or ``all``. Either may start with a
kind, ``enc:``, ``dec:`` or ``cross:``; without one it is the decoder's self-attention (an
encoder's self-attention for an encoder).
"""
from __future__ import annotations

import argparse

from attnscope.cli.common import (BAD_INPUT, add_text_options, open_predicting, print_json, shown, text, text_of,
                                  whole_number)

SPAN_MAX = 10 ** 12 - 1  # a span is a lazy range: the engine refuses it against the text in words
KIND_PREFIX = {"enc": "encoder self", "dec": "decoder self", "cross": "cross"}
SYNTAX = ("heads are L.H (layer.head, 0-based); knockouts QUERY:KEY@LAYERS, positions 0-based over the ids fed "
          "(N, A-B or *), LAYERS N, A-B or all; any of them may start with enc:, dec: or cross: (default: the "
          "decoder's self-attention; an encoder's self-attention for an encoder)")


def _kind(value: str) -> tuple[str | None, str]:
    head, sep, rest = value.partition(":")
    if sep and head in KIND_PREFIX:
        return KIND_PREFIX[head], rest
    return None, value


def _span(part: str, what: str) -> tuple[int, ...] | range | None:
    """``*`` (None: all), ``N`` (a one-tuple) or ``A-B`` (a range: ``0-1000000000`` stays two
    numbers, refused by the engine against the text's length, never a billion-element tuple)."""
    if part in ("*", "all"):
        return None
    lo, dash, hi = part.partition("-")
    a = whole_number(lo, f"{what} (N, A-B or *)", hi=SPAN_MAX)
    b = whole_number(hi, f"{what} (N, A-B or *)", hi=SPAN_MAX) if dash else a
    if a < 0 or b < a:
        raise argparse.ArgumentTypeError(f"{what} {part!r} is not a range from a low to a high number >= 0")
    return range(a, b + 1) if dash else (a,)


def head_arg(value: str):
    kind, rest = _kind(value)
    layer, dot, head = rest.partition(".")
    if not dot:
        raise argparse.ArgumentTypeError(f"expected a head as L.H such as 1.3 (optionally cross:1.3), got "
                                         f"{shown(value)}")
    return kind, whole_number(layer, "a head's layer (L of L.H)"), whole_number(head, "a head's number (H of L.H)")


def knockout_arg(value: str):
    kind, rest = _kind(value)
    edge, at, layers = rest.partition("@")
    query, colon, key = edge.partition(":")
    if not (colon and at):
        raise argparse.ArgumentTypeError(f"expected QUERY:KEY@LAYERS such as 5:0@all or cross:2:1@0-1, got {value!r}")
    return kind, _span(query, "QUERY"), _span(key, "KEY"), _span(layers, "LAYERS")


def default_kind(loaded) -> str:
    return "encoder self" if loaded.role == "encoder" else "decoder self"


def spec_from(args, loaded):
    """The Interventions the options ask for, kinds defaulted for this model."""
    from attnscope.engine.interventions import MEAN, ZERO, Edge, HeadRef, Interventions

    dflt = default_kind(loaded)
    spec = Interventions()
    for heads, mode in ((args.ablate, ZERO), (args.mean_ablate, MEAN)):
        spec = spec.ablate([HeadRef(k or dflt, layer, h) for k, layer, h in heads or []], mode)
    for k, q, key, layers in args.knockout or []:
        spec = spec.block(Edge(k or dflt, q, key, layers))
    return spec


def register(sub) -> None:
    p = sub.add_parser("intervene", help="ablate heads / knock out attention edges; next-token before/after (JSON)",
                       description=__doc__.split("\n\n", 1)[1], epilog=SYNTAX)
    p.add_argument("model", help="checkpoint, Hugging Face folder or hub id, random-<family>")
    add_text_options(p, chat=True)
    p.add_argument("--target", type=text, default=None, help="an encoder-decoder's decoder prefix (default: its own "
                                                             "greedy output)")
    p.add_argument("--ablate", type=head_arg, nargs="+", action="extend", metavar="L.H", help="zero ablation")
    p.add_argument("--mean-ablate", type=head_arg, nargs="+", action="extend", metavar="L.H",
                   help="mean ablation (the head's mean output over the text's positions)")
    p.add_argument("--knockout", type=knockout_arg, nargs="+", action="extend", metavar="QUERY:KEY@LAYERS",
                   help="block attention edges (score -inf)")
    p.add_argument("--json", action="store_true", help="print JSON (the only output format)")
    p.set_defaults(func=run)


def run(args) -> int:
    from attnscope.results import intervene

    body = text_of(args)          # before the model loads: a missing file costs nothing
    loaded = open_predicting(args.model, args.device or "auto", "comparing them before and after (the window "
                             "ablates an encoder's heads and shows its attention change)")
    if loaded is None:
        return BAD_INPUT
    answer = intervene(loaded, body, spec_from(args, loaded), target=args.target)   # InputError (exit 2): in numbers
    print_json(answer.to_json())
    return 0
