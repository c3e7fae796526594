"""attnscope atlas: every head of a model across a corpus (engine.atlas), in one file.

``attnscope atlas MODEL --corpus PATH --out A.safetensors [--chat]`` builds the atlas, or
resumes it where a stopped one left off (the same command), with progress on stderr (``--chat``:
each document as the user's turn, through the model's chat template);
``attnscope atlas A.safetensors --json [--head L.H]`` prints one JSON object: every head with
every metric, or one head's top contexts, decile samples and Q/K projection. It opens the
file only, never the model.
"""
from __future__ import annotations

import re
import sys
import time

from attnscope.cli.common import BAD_INPUT, int_in, open_or_explain, print_json, say


def register(sub) -> None:
    p = sub.add_parser("atlas", help="every head across a corpus: build an atlas, or print one (JSON)")
    p.add_argument("source", help="a model (checkpoint, Hugging Face folder or hub id) to build from, "
                                  "or an atlas .safetensors to print")
    p.add_argument("--corpus", default=None, help="a text file, a folder of .txt files, or JSONL with a \"text\" "
                                                  "field (default: the bundled Shakespeare)")
    p.add_argument("--out", default=None, help="the atlas file to build or resume (.safetensors)")
    p.add_argument("--length", type=int_in(2, 1 << 20), default=None,
                   help="tokens per document (default 4,096, at most the model's context)")
    p.add_argument("--docs", type=int_in(1, 10**9), default=None, help="documents to read (default: the whole corpus)")
    p.add_argument("--top", type=int_in(1, 4096), default=32, help="top contexts kept per head (default 32)")
    p.add_argument("--retrieval", type=_lengths, default=None, metavar="LENGTHS",
                   help="retrieval probes of these lengths in tokens, e.g. 1024,4096: each head's retrieval score")
    p.add_argument("--chat", action="store_true", help="a chat model: each document is the user's turn, read "
                                                       "through the model's own chat template")
    p.add_argument("--json", action="store_true", help="print the atlas as JSON")
    p.add_argument("--head", default=None, help="one head, as L.H (0-based): its contexts and Q/K projection")
    p.set_defaults(func=run)


def _lengths(value: str) -> list[int]:
    """LENGTHS as the option takes them: whole numbers of tokens, comma-separated."""
    from attnscope.cli.common import whole_number

    return [whole_number(part.strip(), "a probe length (tokens)", hi=1 << 20) for part in value.split(",")]


def run(args) -> int:
    from attnscope.results import open_atlas

    if args.out is None:
        if not args.source.endswith(".safetensors") or not args.json:
            say("give --out A.safetensors to build an atlas, or an atlas file and --json to print one")
            return BAD_INPUT
        found_atlas = open_atlas(args.source)
        if args.head is None:
            print_json(found_atlas.to_json())
            return 0
        found = re.fullmatch(r"L?(\d+)\.H?(\d+)", args.head.strip())
        if found is None:
            say(f"--head takes a layer and a head as L.H (e.g. 3.3), not {args.head!r}")
            return BAD_INPUT
        print_json(found_atlas.head(int(found[1]), int(found[2])))
        return 0
    return _build(args)


def _build(args) -> int:
    from attnscope.results import atlas

    loaded = open_or_explain(args.source, args.device or "auto")
    if loaded is None:
        return BAD_INPUT

    started, first = time.monotonic(), []

    def report(progress) -> None:
        what, done, asked = progress
        if what == "retrieval":
            print(f"\rretrieval probes: {done:,} of {asked:,}", end="", file=sys.stderr, flush=True)
            return
        first.append(done)                    # the first report of this session: resumed documents are not timed
        eta = ""
        if asked is not None and done > first[0]:
            left = (time.monotonic() - started) / (done - first[0] + 1) * (asked - done)
            eta = f", about {left:,.0f} s left"
        print(f"\ratlas: {done:,}{'' if asked is None else f' of {asked:,}'} documents{eta}", end="",
              file=sys.stderr, flush=True)

    state = atlas(loaded, args.out, corpus=args.corpus, length=args.length, docs=args.docs, top=args.top,
                  retrieval=args.retrieval, report=report, chat=args.chat).state
    print(file=sys.stderr)
    say(f"{args.out}: {state.docs_done:,} documents, {int(state.meta['tokens_done']):,} tokens")
    return 0
