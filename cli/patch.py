"""attnscope patch MODEL --clean TEXT --corrupt TEXT --answers CORRECT WRONG [--what ...]
[--method exact|attribution|dla] [--noising] [--metric logit_diff|logprob] [--pairs FILE] --json

Activation patching over a prompt pair (engine.experiments): the corrupted text runs with one
activation of the clean run put back (--noising: the other way round), and each number is the
metric of that patched run at the last position. --what chooses the points: heads (each
head's output, all positions), heads-by-pos, resid-pre (the residual stream before each
layer), attn-out and mlp-out (by position); positions are 0-based over the ids fed. An
encoder-decoder (the translator, T5, BART, Marian) reads the texts as its source and --target
as the decoder's prefix; its cross-heads and encoder-heads can be patched too.
attribution estimates the same numbers from one backward; dla gives each head's and MLP's
share of the clean logit difference. Answers are texts the tokenizer makes one token
(" Mary", with its space) or id:N. --pairs reads a TSV (clean, corrupt, answer, wrong
answer; one pair a line) and prints each point normalised per pair ((patched - corrupt) /
(clean - corrupt)) and averaged. --clean-file and --corrupt-file take texts too long for an
argument. --chat reads both texts as a user's turn of a chat, through the
model's own template (--system: a system turn before it).
"""
from __future__ import annotations

from pathlib import Path

from attnscope.cli.common import BAD_INPUT, int_in, open_predicting, print_json, say, text


def register(sub) -> None:
    from attnscope.engine.experiments import METHODS, METRICS, SEQ2SEQ_POINTS

    p = sub.add_parser("patch", help="activation / attribution patching and direct logit attribution over a prompt "
                                     "pair (JSON)", description=__doc__.split("\n\n", 1)[1])
    p.add_argument("model", help="checkpoint, Hugging Face folder or hub id, random-<family>, ndif:<hub id> (exact "
                                 "patching of heads on NDIF; ATTNSCOPE_NDIF=local: here through nnsight)")
    p.add_argument("--clean", type=text, default=None, help="the clean text")
    p.add_argument("--corrupt", type=text, default=None, help="the corrupted text (as many tokens as the clean one)")
    p.add_argument("--clean-file", type=Path, default=None, help="a UTF-8 file holding the clean text (a long context)")
    p.add_argument("--corrupt-file", type=Path, default=None, help="a UTF-8 file holding the corrupted text")
    p.add_argument("--answers", type=text, nargs=2, metavar=("CORRECT", "WRONG"), default=None,
                   help="the clean answer and the corrupted one: one token each (' Mary') or id:N")
    p.add_argument("--pairs", type=Path, default=None, help="a TSV of pairs: clean, corrupt, answer, wrong answer")
    p.add_argument("--what", nargs="+", choices=SEQ2SEQ_POINTS, default=["heads"],
                   help="what to patch (default: heads, the decoder's self-attention; an encoder-decoder also has "
                        "cross-heads and encoder-heads, each by position too)")
    p.add_argument("--method", choices=METHODS, default="exact", help="exact patching (default), attribution "
                                                                      "patching, or direct logit attribution")
    p.add_argument("--noising", action="store_true", help="run the clean text with corrupted activations put in")
    p.add_argument("--metric", choices=METRICS, default="logit_diff",
                   help="the answers' logit difference (default) or the answer's log-probability")
    p.add_argument("--target", type=text, default=None, help="an encoder-decoder's decoder prefix, the same for both "
                                                             "texts: the metric is on the next token after it "
                                                             "(default: none, the first token)")
    p.add_argument("--batch", type=int, default=None, help="at most this many patched copies in one forward")
    p.add_argument("--max-seconds", type=int_in(1, 7 * 86_400), default=None,
                   help="--pairs: refuse a file estimated (from its first pair) to take longer (default 3600)")
    p.add_argument("--chat", action="store_true", help="a chat model: each text is the user's turn, read through the "
                                                       "tokenizer's own chat template with the reply's start added")
    p.add_argument("--system", type=text, default=None, help="with --chat: a system turn before each user's turn")
    p.add_argument("--json", action="store_true", help="print JSON (the only output format)")
    p.set_defaults(func=run)


def pairs_of(args):
    """The prompt pairs the options give, or InputError in one sentence."""
    from dataclasses import replace

    from attnscope.engine.experiments import PromptPair, read_pairs
    from attnscope.engine.inputs import Chat, InputError, read_utf8

    for name in ("clean", "corrupt"):                # a text a command line cannot carry (128 KB an argument)
        path = getattr(args, f"{name}_file")
        if path is not None:
            if getattr(args, name) is not None:
                raise InputError(f"Give the {name} text as --{name} or as --{name}-file, not both.")
            setattr(args, name, read_utf8(path))
    typed = [args.clean is not None, args.corrupt is not None, args.answers is not None]
    if args.system is not None and not args.chat:
        raise InputError("--system is a turn of a chat: give --chat too.")
    if args.pairs is not None:
        if any(typed):
            raise InputError("Give --pairs FILE or --clean, --corrupt and --answers, not both.")
        pairs = read_pairs(args.pairs)
    elif not all(typed):
        raise InputError("Give --clean TEXT, --corrupt TEXT and --answers CORRECT WRONG (or --pairs FILE).")
    else:
        pairs = [PromptPair(args.clean, args.corrupt, *args.answers)]
    if args.chat:        # both texts as a user's turn, in the same chat form (as the window's Patching reads them)
        pairs = [replace(p, clean=Chat.of(p.clean, args.system), corrupt=Chat.of(p.corrupt, args.system)) for p in pairs]
    return pairs


SAY_EVERY_S = 5.0    # a file of pairs says which pair it is on at most this often (stderr)


def progress_lines():
    """What a long patch says on stderr: each estimate once ("Patching: ..." for a pair, "Patching
    N pairs: ..." for a file), then which pair it is on, every SAY_EVERY_S seconds at most."""
    import time

    last = [time.monotonic()]

    def show(p) -> None:
        pair, _, text = p.text.rpartition(": Patching") if p.text.startswith("Pair ") else ("", "", p.text)
        if not pair and text.startswith("Patching"):               # one pair's estimate, or the file's
            say(text)
        elif pair == "Pair 1 of " + pair.split(" of ")[-1] and p.done == 0:
            say(p.text)                                             # the first pair's estimate, once
        elif p.text.startswith("Pair ") and time.monotonic() - last[0] > SAY_EVERY_S:
            last[0] = time.monotonic()
            say(p.text.split(":", 1)[0] + " ...")
    return show


def run(args) -> int:
    from attnscope.results import patch

    if args.batch is not None and args.batch < 1:
        say("--batch must be at least 1")
        return BAD_INPUT
    pairs = pairs_of(args)
    loaded = open_predicting(args.model, args.device or "auto", "patching")
    if loaded is None:
        return BAD_INPUT
    options = dict(what=args.what, method=args.method, noising=args.noising, metric=args.metric, target=args.target,
                   max_batch=args.batch, max_seconds=args.max_seconds, progress=progress_lines())
    answer = patch(loaded, pairs[0], **options) if args.pairs is None else patch(loaded, pairs=pairs, **options)
    print_json(answer.to_json())
    return 0
