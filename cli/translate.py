"""attnscope translate MODEL "text" and attnscope generate MODEL "prompt": decode, print JSON.

Both run engine.decoding.session to the end with the strategy asked for, and print the tokens so
a script can check what the model did. MODEL is any model that generates: translate takes
an encoder-decoder (ours, or a Hugging Face T5/BART/Marian folder); generate takes a decoder
(our GPT, GPT-2, Llama, ...) to continue a prompt, or an encoder-decoder to translate or
summarise it.
"""
from __future__ import annotations

from attnscope.cli.common import (BAD_INPUT, add_text_options, float_in, int_in, open_or_explain, print_json, say,
                                  text_of)
from attnscope.results import model_notes

MAX_BEAM = 64            # each beam keeps a KV cache and a (vocabulary)-wide score row
MAX_NEW_TOKENS = 4096


def _strategy_options(p) -> None:
    p.add_argument("--strategy", choices=["greedy", "beam", "sample"], default="greedy")
    p.add_argument("--beam-width", type=int_in(1, MAX_BEAM), default=4, help=f"beam search: 1 to {MAX_BEAM}")
    p.add_argument("--temperature", type=float_in(0, 100, lo_open=True), default=1.0, help="sampling: (0, 100]")
    p.add_argument("--top-k", type=int_in(0, 1_000_000), default=0, help="sampling: 0 (off) or the k most likely")
    p.add_argument("--top-p", type=float_in(0, 1, lo_open=True), default=1.0, help="sampling: (0, 1]")
    p.add_argument("--seed", type=int_in(0, 2**63 - 1), default=0)
    p.add_argument("--max-new-tokens", type=int_in(1, MAX_NEW_TOKENS), default=40, help=f"1 to {MAX_NEW_TOKENS}")


def register(sub) -> None:
    t = sub.add_parser("translate", help="translate a sentence with an encoder-decoder (ours or Hugging Face; JSON)")
    t.add_argument("checkpoint", metavar="model")
    add_text_options(t, positional="text")
    _strategy_options(t)
    t.set_defaults(func=run, roles=("encoder-decoder",))
    g = sub.add_parser("generate", help="continue a prompt with a decoder (or run an encoder-decoder on it; JSON)")
    g.add_argument("checkpoint", metavar="model")
    add_text_options(g, positional="prompt", chat=True)
    _strategy_options(g)
    g.set_defaults(func=run, roles=("decoder", "encoder-decoder"))


def run(args) -> int:
    from attnscope.engine.decoding import DecodeSettings, decode_all
    from attnscope.engine.inputs import InputError, Prompt, unknown_words

    body = text_of(args)
    loaded = open_or_explain(args.checkpoint, args.device or "auto")
    if loaded is None:
        return BAD_INPUT
    if loaded.role not in args.roles:
        command = "translate" if args.roles == ("encoder-decoder",) else "generate"
        say(f"{args.checkpoint} is an {loaded.role} model ({loaded.family}); '{command}' needs "
            f"{' or '.join('an ' + r if r[0] == 'e' else 'a ' + r for r in args.roles)}.")
        return BAD_INPUT
    settings = DecodeSettings(strategy=args.strategy, beam_width=args.beam_width, temperature=args.temperature,
                              top_k=args.top_k, top_p=args.top_p, seed=args.seed, max_new_tokens=args.max_new_tokens)
    try:
        result = decode_all(loaded, Prompt.of(body, what="decode"), settings)     # checked once
    except InputError as exc:
        say(exc)
        return BAD_INPUT
    out = {"model": loaded.name, "strategy": args.strategy, **model_notes(loaded)}
    unknown = unknown_words(loaded.tokenizer, str(body))
    if unknown is not None:   # words the model has no token for: it never saw them, say so
        out["unknown_words"] = unknown
    if result.notes:        # e.g. the text was cut to the model's length
        out["notes"] = result.notes
    if loaded.role == "encoder-decoder":
        out |= {"source_tokens": result.source_tokens, "output_tokens": result.output_tokens, "translation": result.text}
    else:
        out |= {"prompt_tokens": result.prompt_tokens, "output_tokens": result.output_tokens,
                "continuation": result.text}
    print_json(out)
    return 0
