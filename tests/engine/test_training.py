"""Training loops lower the loss, stop when asked, and report progress; evaluation scores."""
import math

import pytest

from attnscope.engine.corpora.german import make_splits
from attnscope.engine.training.evaluation import language_model_scores, translation_scores, unigram_loss
from attnscope.engine.training.loops import TrainConfig, learning_rate, run_training, train_gpt, train_translator

import torch


@pytest.fixture(scope="module")
def pairs():
    return make_splits(seed=0, n_train=300, n_valid=40, n_test=40)


def tiny(**kw):
    return TrainConfig(**{"size": "tiny", "steps": 40, "batch_size": 16, "lr": 3e-3, "warmup": 5,
                          "report_every": 5, "eval_every": 20, **kw})


def test_translator_training_lowers_the_loss(pairs):
    records = []
    loaded = run_training(train_translator(pairs["train"], pairs["valid"], tiny()), records.append)
    assert records[-1].done and records[-1].step == 40
    evaluated = [r.val_loss for r in records if r.val_loss is not None]
    assert evaluated[-1] < evaluated[0]
    assert records[-2].loss < records[0].loss
    assert all(r.tokens_per_s > 0 for r in records[:-1])
    assert loaded.meta["training"]["steps"] == 40 and not loaded.model.training


def test_training_stops_between_steps_when_asked(pairs):
    seen = []
    gen = train_translator(pairs["train"], pairs["valid"], tiny(steps=1000), stop=lambda: len(seen) >= 2)
    loaded = run_training(gen, seen.append)
    assert seen[-1].done and seen[-1].step == 10  # two reports of five steps, then stop
    assert loaded.meta["training"]["steps"] == 10


def test_probe_traces_are_yielded(pairs):
    cfg = tiny(steps=10, probe_every=5, probe_text="the dog sleeps .")
    records = []
    run_training(train_translator(pairs["train"], pairs["valid"], cfg), records.append)
    probes = [r.probe for r in records if r.probe is not None]
    assert len(probes) == 2 and probes[0].source_tokens[:3] == ["the", "dog", "sleeps"]


def test_gpt_training_beats_the_unigram_baseline():
    lines = [en for en, _ in make_splits(seed=1, n_train=400, n_valid=40, n_test=10)["train"]]
    cfg = tiny(steps=60, vocab_size=200, lr=5e-3)
    loaded = run_training(train_gpt(lines[:360], lines[360:], cfg))
    scores = language_model_scores(loaded, lines[:360], lines[360:])
    assert scores["val_loss"] < scores["unigram_loss"]
    assert scores["perplexity"] == pytest.approx(math.exp(scores["val_loss"]), rel=1e-3)


def test_schedule_warms_up_then_decays():
    cfg = TrainConfig(steps=100, warmup=10, lr=1.0)
    assert learning_rate(0, cfg) == pytest.approx(0.1)
    assert learning_rate(9, cfg) == pytest.approx(1.0)
    assert learning_rate(99, cfg) < 0.11


def test_unigram_loss_of_a_constant_stream_is_small():
    ids = torch.zeros(1000, dtype=torch.long)
    assert unigram_loss(ids, ids[:100], vocab_size=10) < 0.01


def test_translation_scores_keys(pairs):
    loaded = run_training(train_translator(pairs["train"], pairs["valid"], tiny(steps=5)))
    scores = translation_scores(loaded, pairs["test"], limit=10)
    assert set(scores) >= {"bleu", "chrf", "exact_match", "sentences", "examples"}
    assert scores["sentences"] == 10 and 0 <= scores["bleu"] <= 100


def test_repeated_passages_open_the_chosen_share_of_windows_and_keep_targets_shifted():
    from attnscope.engine.training.loops import gpt_windows, repeat_passages

    stream = torch.arange(1000)  # every id distinct: a repeat can only come from repeat_passages
    x, y = gpt_windows(stream, 64, torch.tensor([0, 100, 200, 300]))
    rx, ry = repeat_passages(x.clone(), y.clone(), 0.5, torch.Generator().manual_seed(0))
    assert torch.equal(rx[:, 1:], ry[:, :-1])             # still next-token targets
    assert torch.equal(rx[2:], x[2:]) and torch.equal(ry[2:], y[2:])  # half the windows untouched
    for row, start in zip(rx[:2], (0, 100)):
        n = int((row == start).nonzero()[1])                 # where the passage starts again
        assert 8 <= n <= 32
        assert torch.equal(row[:n], torch.arange(start, start + n))
        assert torch.equal(row[n:2 * n], row[:n])            # said again
    assert torch.equal(repeat_passages(x, y, 0.0, torch.Generator())[0], x)


def test_gpt_training_on_a_text_of_a_few_tokens_is_refused_clearly():
    """A text shorter than MIN_TRAIN_TOKENS has no window worth learning from (three tokens
    or fewer had none at all, and torch failed deep inside the batch sampler)."""
    from attnscope.engine.training.loops import MIN_TRAIN_TOKENS

    with pytest.raises(ValueError, match=f"has \\d+ tokens; a GPT needs at least {MIN_TRAIN_TOKENS}"):
        next(train_gpt(["a b c", "d e"], ["f g"], TrainConfig(size="tiny", steps=2)))
