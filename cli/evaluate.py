"""attnscope eval CKPT: score a checkpoint on the split it never saw, as JSON.

The checkpoint names its corpus and seed, so the same held-out split is rebuilt:
BLEU and chrF on the test split for a translator; validation loss, perplexity and the
unigram baseline for a GPT.
"""
from __future__ import annotations

from cli.common import BAD_INPUT, open_or_explain, print_json


def register(sub) -> None:
    p = sub.add_parser("eval", help="evaluate a checkpoint and print JSON")
    p.add_argument("checkpoint")
    p.add_argument("--limit", type=int, default=1000, help="test sentences to score (translator)")
    p.set_defaults(func=run)


def evaluate(loaded, limit: int | None = 1000) -> dict:
    from engine.corpora.sources import text_splits, translation_splits
    from engine.evaluation import language_model_scores, translation_scores

    training = loaded.meta.get("training", {})
    corpus, seed = training.get("corpus_path"), int(training.get("seed") or 0)
    if loaded.family == "translator":
        splits = translation_splits(corpus, seed, int(training.get("train_pairs") or 20000))
        return translation_scores(loaded, splits["test"], limit=limit)
    if loaded.family == "gpt":
        return language_model_scores(loaded, *text_splits(corpus, seed))
    raise ValueError(f"there is nothing to evaluate for a {loaded.family} model")


def run(args) -> int:
    loaded = open_or_explain(args.checkpoint, args.device or "auto")
    if loaded is None:
        return BAD_INPUT
    try:
        scores = evaluate(loaded, args.limit)
    except ValueError as exc:
        print(f"attnscope: {exc}", file=__import__("sys").stderr)
        return BAD_INPUT
    print_json({"checkpoint": args.checkpoint, "family": loaded.family, **scores})
    return 0
