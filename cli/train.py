"""attnscope train translator|gpt: train a from-scratch model and save one checkpoint.

Ctrl-C stops between steps and saves what is done (a second Ctrl-C aborts). At the end the
model is evaluated (BLEU/chrF on the test split, or validation loss against a unigram
baseline) and the metrics and the exact command go into the checkpoint's metadata.
"""
from __future__ import annotations

import dataclasses
import shlex
import signal
import sys
import time

from attnscope.cli.common import BAD_INPUT, float_in, int_in, out_checkpoint, print_json, say, writable_problem


def register(sub) -> None:
    p = sub.add_parser("train", help="train the translator or the GPT and save a checkpoint")
    p.add_argument("family", choices=["translator", "gpt"])
    p.add_argument("--corpus", default=None,
                   help="a TSV pairs file (translator) or a UTF-8 .txt file (gpt); default: the synthetic "
                        "English->German corpus / Shakespeare's plays")
    p.add_argument("--steps", type=int_in(1, 10_000_000), default=3000)
    p.add_argument("--size", choices=["tiny", "small"], default="small")
    p.add_argument("--batch-size", type=int_in(1, 4096), default=None, help="default: 64 (translator), 16 (gpt)")
    p.add_argument("--lr", type=float_in(0, 10, lo_open=True), default=None,
                   help="learning rate, in (0, 10]; default: 1e-3 (translator), 2e-3 (gpt)")
    p.add_argument("--position", choices=["learned", "rope"], default="learned",
                   help="gpt only: learned positions (GPT-2) or rotary (RoPE)")
    p.add_argument("--vocab-size", type=int_in(300, 50_000), default=None,
                   help="gpt only: BPE vocabulary, 256 byte pieces and 7 specials included (default 1024)")
    p.add_argument("--repeat-passages", type=float_in(0, 1), default=None,
                   help="gpt only: share of training windows that open with a passage of the text repeated, "
                        "so copying (induction heads) pays; 0 to 1 (default 0.5)")
    p.add_argument("--seed", type=int_in(0, 2**32 - 1), default=0)
    p.add_argument("--train-pairs", type=int_in(10, 1_000_000), default=20000, help="size of the synthetic training split")
    p.add_argument("--eval-limit", type=int_in(1, 1_000_000), default=1000, help="test sentences scored at the end")
    p.add_argument("--out", default=None, type=out_checkpoint,
                   help="checkpoint to write (default: <family>.safetensors); checked before training starts")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.set_defaults(func=run)


def run(args) -> int:
    from tqdm import tqdm

    from attnscope.engine.loading import CheckpointError, check_checkpoint_path, save_checkpoint
    from attnscope.engine.corpora import corpus_label, text_splits, translation_splits
    from attnscope.engine.runtime import pick_device
    from attnscope.engine.training import language_model_scores, translator_report
    from attnscope.engine.training import GPT_RECIPE, TrainConfig, run_training, train_gpt, train_translator

    try:
        device = pick_device(args.device or "auto")
        out = args.out or check_checkpoint_path(f"{args.family}.safetensors")  # before any work, not after it
    except ValueError as exc:
        say(exc)
        return BAD_INPUT
    problem = writable_problem(out.parent)
    if problem:
        say(problem)
        return BAD_INPUT
    # A GPT learns the bundled GPT's way (GPT_RECIPE) unless told otherwise; a translator from
    # TrainConfig's defaults. Options left out (None) keep those.
    chosen = {"batch_size": args.batch_size, "lr": args.lr}
    if args.family == "gpt":
        chosen.update(vocab_size=args.vocab_size, repeat_fraction=args.repeat_passages)
    base = GPT_RECIPE if args.family == "gpt" else {}
    config = TrainConfig(size=args.size, steps=args.steps, seed=args.seed, warmup=min(300, max(1, args.steps // 10)),
                         **{**base, **{k: v for k, v in chosen.items() if v is not None}},
                         model_overrides={"position": args.position} if args.family == "gpt" else {})
    try:
        if args.family == "translator":
            splits = translation_splits(args.corpus, args.seed, args.train_pairs)
            gen = train_translator(splits["train"], splits["valid"], config, device, stop=_ctrl_c_flag())
        else:
            lines_train, lines_valid = text_splits(args.corpus, args.seed)
            gen = train_gpt(lines_train, lines_valid, config, device, stop=_ctrl_c_flag())
    except ValueError as exc:  # a corpus file that cannot be read
        say(exc)
        return BAD_INPUT
    bar = tqdm(total=args.steps, unit="step", disable=args.quiet, dynamic_ncols=True)
    started = time.perf_counter()

    def show(p):
        bar.n = p.step
        post = {"loss": f"{p.loss:.3f}", "lr": f"{p.lr:.2e}"}
        if p.tokens_per_s:
            post["tok/s"] = f"{p.tokens_per_s:,.0f}"
        if p.val_loss is not None:
            post["val"] = f"{p.val_loss:.3f}"
        for kind, scores in (p.head_scores or {}).items():  # the best induction / previous-token head
            post[kind.split()[0][:3] + " ind/prev"] = f"{scores['induction'].max():.2f}/{scores['previous'].max():.2f}"
        bar.set_postfix(post, refresh=True)

    loaded = run_training(gen, show)
    bar.close()
    train_s = time.perf_counter() - started
    if args.family == "translator":
        metrics = translator_report(loaded, splits, args.eval_limit, args.corpus)
        metrics.pop("examples")
    else:
        metrics = language_model_scores(loaded, lines_train, lines_valid)
    training = {
        **loaded.meta.get("training", {}),
        "corpus": corpus_label(args.corpus, args.family),
        "corpus_path": args.corpus,
        "seed": args.seed,
        "train_pairs": args.train_pairs if args.family == "translator" and args.corpus is None else None,
        "size": args.size,
        "device": str(device),
        "train_seconds": round(train_s, 1),
        "metrics": metrics,
        "config": dataclasses.asdict(config),
        "command": "attnscope " + shlex.join(getattr(args, "argv", sys.argv[1:])),
    }
    loaded.meta["training"] = training
    try:
        path = save_checkpoint(loaded, out, training)
    except (CheckpointError, OSError) as exc:  # e.g. the disk filled up during training
        say(f"training finished but the checkpoint could not be written to {out}: {exc}")
        return 1
    print_json({"checkpoint": str(path), "steps": training["steps"], "parameters": loaded.n_parameters,
                "train_seconds": training["train_seconds"], "metrics": metrics})
    return 0


def _ctrl_c_flag():
    """A stop() for the trainer that turns true at the first Ctrl-C; the second one aborts."""
    state = {"stop": False}

    def handler(signum, frame):
        if state["stop"]:
            signal.signal(signal.SIGINT, signal.default_int_handler)
            raise KeyboardInterrupt
        state["stop"] = True
        print("\nattnscope: stopping after this step and saving (Ctrl-C again to abort)", file=sys.stderr)

    try:
        signal.signal(signal.SIGINT, handler)
    except ValueError:  # not the main thread (e.g. called from a test runner thread)
        pass
    return lambda: state["stop"]
