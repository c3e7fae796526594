"""attnscope eval CKPT: score a checkpoint on the split it never saw, as JSON.

The checkpoint records its corpus and seed, so the same held-out split is rebuilt:
BLEU and chrF on the test split for a translator; validation loss, perplexity and the
unigram baseline for a GPT. The record is description, never an instruction: a corpus
file it names is read only when the user names it too (``--corpus``), and its numbers
(seed, split size) are checked like any option.
"""
from __future__ import annotations

from pathlib import Path

from attnscope.cli.common import BAD_INPUT, int_in, open_or_explain, print_json, say
from attnscope.results import model_notes

MAX_TRAIN_PAIRS = 1_000_000  # the synthetic corpus rebuilt for the split: ~1 s per 20,000 pairs


def register(sub) -> None:
    p = sub.add_parser("eval", help="evaluate a checkpoint and print JSON")
    p.add_argument("checkpoint")
    p.add_argument("--limit", type=int_in(1, 1_000_000), default=1000, help="test sentences to score (translator)")
    p.add_argument("--corpus", default=None,
                   help="the corpus file the model was trained on (its record names it; it is read only when given here)")
    p.set_defaults(func=run)


def _whole(training: dict, key: str, lo: int, hi: int, default: int) -> int:
    value = training.get(key)
    if value is None:
        return default
    if type(value) is not int or not lo <= value <= hi:
        raise ValueError(f"the checkpoint's training record has {key}={value!r}; it must be a whole number "
                         f"from {lo:,} to {hi:,}. Evaluate a checkpoint saved by attnscope train.")
    return value


def evaluate(loaded, limit: int | None = 1000, corpus: str | None = None) -> dict:
    """Scores of ``loaded`` on its held-out split. ``corpus``: the file the user named, if any;
    a corpus file named only in the checkpoint is never opened."""
    from attnscope.engine.corpora import text_splits, translation_splits
    from attnscope.engine.training import language_model_scores, translator_report

    if loaded.family not in ("translator", "gpt"):
        raise ValueError(f"there is nothing to evaluate for a {loaded.family} model")
    training = loaded.meta.get("training", {})
    recorded = training.get("corpus_path")
    if corpus is None and recorded is not None:
        shown = recorded if isinstance(recorded, str) else repr(recorded)
        raise ValueError(f"this model was trained on a corpus file ({shown[:200]}); attnscope does not open files "
                         f"named inside a model. Pass it yourself: attnscope eval CHECKPOINT --corpus {Path(shown).name}")
    seed = _whole(training, "seed", 0, 2**32 - 1, 0)
    if loaded.family == "translator":
        pairs = _whole(training, "train_pairs", 1, MAX_TRAIN_PAIRS, 20000)
        splits = translation_splits(corpus, seed, pairs)
        return translator_report(loaded, splits, limit, corpus)
    return language_model_scores(loaded, *text_splits(corpus, seed))


def run(args) -> int:
    loaded = open_or_explain(args.checkpoint, args.device or "auto")
    if loaded is None:
        return BAD_INPUT
    try:
        scores = evaluate(loaded, args.limit, args.corpus)
    except ValueError as exc:
        say(f"{Path(args.checkpoint).name}: {exc}")
        return BAD_INPUT
    print_json({"checkpoint": args.checkpoint, "family": loaded.family, **scores, **model_notes(loaded)})
    return 0
