"""attnscope heads MODEL --json: induction and previous-token scores of every head, and every
entry of the one statistics list (engine/inspection/statistics.py) on the same sequence.

The model reads a fixed (seeded) random sequence of ordinary tokens repeated twice, framed
the way it reads any text (engine.adapters: its own special tokens). An induction head
attends from a token of the second copy to the token after its first occurrence; a
previous-token head to the token just before. ``statistics`` holds each list entry's (L, H)
means per kind, ``definitions`` each entry's definition and tip: a new entry in the list is a
new key here. Works for every model attnscope opens.
"""
from __future__ import annotations

from attnscope.cli.common import BAD_INPUT, open_or_explain, print_json
from attnscope.results import model_notes


def register(sub) -> None:
    p = sub.add_parser("heads", help="induction and previous-token scores and every head statistic "
                                          "of every head (JSON)")
    p.add_argument("model", help="checkpoint, Hugging Face folder or hub id, minilm, random-<family>")
    p.add_argument("--json", action="store_true", help="print JSON (the only output format)")
    p.set_defaults(func=run)


def run(args) -> int:
    from attnscope.engine.inputs import InputError
    from attnscope.engine.inspection import mechanism_report
    from attnscope.engine.remote import remote_of

    loaded = open_or_explain(args.model, args.device or "auto")
    if loaded is None:
        return BAD_INPUT
    if (remote_of(loaded) or {}).get("mode") == "ndif":       # its forward would run on the meta device
        raise InputError(f"{loaded.name} runs on NDIF and has no weights here, and heads runs the model's forward "
                         f"here: record a text there (attnscope record {args.model} ...) to see its heads, or run the "
                         "folder here with ATTNSCOPE_NDIF=local.")
    loaded.model.eval()
    print_json({"model": loaded.name, "family": loaded.family, **mechanism_report(loaded), **model_notes(loaded)})
    return 0
