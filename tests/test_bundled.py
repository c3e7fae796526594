"""The bundled checkpoints load, open by default, and still score what they recorded."""
from pathlib import Path

import pytest

from engine.catalog import CHECKPOINTS, default_source
from engine.checkpoint import load_checkpoint

TRANSLATOR = CHECKPOINTS / "translator.safetensors"
GPT = CHECKPOINTS / "gpt.safetensors"


def test_the_app_opens_on_the_trained_translator():
    assert Path(default_source()) == TRANSLATOR


@pytest.mark.parametrize("path", [TRANSLATOR, GPT], ids=["translator", "gpt"])
def test_bundled_checkpoints_are_small_and_made_by_our_command(path):
    assert path.stat().st_size < 20 * 1024 * 1024
    training = load_checkpoint(path).meta["training"]
    family = path.stem
    assert training["command"].startswith(f"attnscope train {family}")


def test_translator_reaches_its_recorded_bleu_on_a_sample():
    from engine.corpora.sources import translation_splits
    from engine.evaluation import translation_scores

    loaded = load_checkpoint(TRANSLATOR)
    recorded = loaded.meta["training"]["metrics"]
    assert recorded["bleu"] >= 60 and recorded["sentences"] == 1000
    test = translation_splits(None, loaded.meta["training"]["seed"])["test"]
    sample = translation_scores(loaded, test[:120])
    assert sample["bleu"] >= recorded["bleu"] - 10


def test_gpt_beats_the_unigram_baseline_on_a_sample():
    from engine.corpora.sources import text_splits
    from engine.evaluation import language_model_scores

    loaded = load_checkpoint(GPT)
    recorded = loaded.meta["training"]["metrics"]
    assert recorded["val_loss"] < recorded["unigram_loss"] - 1.0
    train, valid = text_splits(None, loaded.meta["training"]["seed"])
    sample = language_model_scores(loaded, train[:3000], valid[:150])
    assert sample["val_loss"] < sample["unigram_loss"] - 1.0
