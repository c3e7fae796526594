"""attnscope translate CKPT "text" and attnscope generate CKPT "prompt": decode, print JSON.

Both run engine.decoding to the end with the strategy asked for, and print the tokens so
a script can check what the model did.
"""
from __future__ import annotations

import sys

from cli.common import BAD_INPUT, open_or_explain, print_json


def _strategy_options(p) -> None:
    p.add_argument("--strategy", choices=["greedy", "beam", "sample"], default="greedy")
    p.add_argument("--beam-width", type=int, default=4)
    p.add_argument("--temperature", type=float, default=1.0)
    p.add_argument("--top-k", type=int, default=0)
    p.add_argument("--top-p", type=float, default=1.0)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--max-new-tokens", type=int, default=40)


def register(sub) -> None:
    t = sub.add_parser("translate", help="translate a sentence with a translator checkpoint (JSON)")
    t.add_argument("checkpoint")
    t.add_argument("text")
    _strategy_options(t)
    t.set_defaults(func=run, family="translator")
    g = sub.add_parser("generate", help="continue a prompt with a GPT checkpoint (JSON)")
    g.add_argument("checkpoint")
    g.add_argument("text", metavar="prompt")
    _strategy_options(g)
    g.set_defaults(func=run, family="gpt")


def run(args) -> int:
    from engine.decoding import DecodeSettings, decode_all
    from engine.tracing import InputError

    loaded = open_or_explain(args.checkpoint, args.device or "auto")
    if loaded is None:
        return BAD_INPUT
    if loaded.family != args.family:
        print(f"attnscope: {args.checkpoint} is a {loaded.family} model; "
              f"'{'translate' if args.family == 'translator' else 'generate'}' needs a {args.family}.", file=sys.stderr)
        return BAD_INPUT
    settings = DecodeSettings(strategy=args.strategy, beam_width=args.beam_width, temperature=args.temperature,
                              top_k=args.top_k, top_p=args.top_p, seed=args.seed, max_new_tokens=args.max_new_tokens)
    try:
        result = decode_all(loaded, args.text, settings)
    except InputError as exc:
        print(f"attnscope: {exc}", file=sys.stderr)
        return BAD_INPUT
    out = {"model": loaded.name, "strategy": args.strategy}
    if args.family == "translator":
        out |= {"source_tokens": result.source_tokens, "output_tokens": result.output_tokens, "translation": result.text}
    else:
        out |= {"prompt_tokens": result.prompt_tokens, "output_tokens": result.output_tokens,
                "continuation": result.text}
    print_json(out)
    return 0
