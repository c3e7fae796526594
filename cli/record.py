"""attnscope record MODEL --text-file F --out R.safetensors: a Run's recording as one file.

The recording (queries and keys as the model used them, each row's log-sum-exp, masks,
tokens; engine.traces.recording_file) opens in File > Open Recording and in
``attnscope export R.safetensors`` with no model: record where the model runs (a GPU
machine), look anywhere.
"""
from __future__ import annotations

from pathlib import Path

from attnscope.cli.common import BAD_INPUT, add_text_options, open_or_explain, print_json, say, text, text_of

def register(sub) -> None:
    p = sub.add_parser("record", help="run a model on a text and save its recording (queries, keys) as one file")
    p.add_argument("model", help="checkpoint, Hugging Face folder or hub id, minilm, random-<family>, "
                                    "ndif:<hub id> (run on NDIF; ATTNSCOPE_NDIF=local: here through nnsight)")
    add_text_options(p, chat=True)
    p.add_argument("--target", default=None, type=text, help="encoder-decoders: a target prefix")
    p.add_argument("--pair", default=None, type=text, help="encoders: a second sentence")
    p.add_argument("--out", required=True, type=Path, help="the .safetensors file to write")
    p.set_defaults(func=run)


def run(args) -> int:
    from attnscope.engine.traces import recording_target
    from attnscope.results import record

    body = text_of(args)
    recording_target(args.out)     # before the model loads: never over a user's file (RecordingError, exit 2)
    loaded = open_or_explain(args.model, args.device or "auto")
    if loaded is None:
        return BAD_INPUT
    answer = record(loaded, body, args.out, target=args.target, pair=args.pair, say=say)   # ndif: one job, every row
    print_json(answer.to_json())
    return 0
