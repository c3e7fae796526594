"""The bundled checkpoints load, open by default, and still score what they recorded:
the translator on its held-out constructions and on hand-written sentences, the GPT against
its unigram baseline and with its induction and previous-token heads."""
from pathlib import Path

import pytest

from attnscope.engine.loading.catalog import CHECKPOINTS, default_source
from attnscope.engine.loading.checkpoint import load_checkpoint

TRANSLATOR = CHECKPOINTS / "translator.safetensors"
GPT = CHECKPOINTS / "gpt.safetensors"


@pytest.fixture(scope="module")
def translator():
    return load_checkpoint(TRANSLATOR)


@pytest.fixture(scope="module")
def gpt():
    return load_checkpoint(GPT)


def test_the_app_opens_on_the_trained_translator():
    assert Path(default_source()) == TRANSLATOR


@pytest.mark.parametrize("path", [TRANSLATOR, GPT], ids=["translator", "gpt"])
def test_bundled_checkpoints_are_small_and_made_by_our_command(path):
    assert path.stat().st_size < 20 * 1024 * 1024
    training = load_checkpoint(path).meta["training"]
    family = path.stem
    assert training["command"].startswith(f"attnscope train {family}")


def test_translator_reaches_its_recorded_bleu_on_a_sample(translator):
    from attnscope.engine.corpora.german import CONSTRUCTIONS, make_splits
    from attnscope.engine.training.evaluation import translation_scores

    recorded = translator.meta["training"]["metrics"]
    assert recorded["sentences"] == 1000 and set(recorded["by_construction"]) == set(CONSTRUCTIONS)
    assert recorded["bleu"] >= 60
    test = make_splits(translator.meta["training"]["seed"], n_train=0, n_valid=0, n_test=1000)["test"]
    sample = translation_scores(translator, test[:120])
    assert sample["bleu"] >= recorded["bleu"] - 10


def test_translator_translates_sentences_written_by_hand(translator):
    from attnscope.engine.corpora.german import handwritten_pairs
    from attnscope.engine.training.evaluation import translation_scores

    recorded = translator.meta["training"]["metrics"]["handwritten"]
    scores = translation_scores(translator, handwritten_pairs())
    assert recorded["bleu"] >= 90 and recorded["sentences"] >= 60
    assert scores["bleu"] == pytest.approx(recorded["bleu"], abs=0.5)


def test_translator_reads_typed_text_the_way_its_corpus_is_written(translator):
    from attnscope.engine.training.evaluation import greedy_translate

    tok = translator.tokenizer
    assert tok.tokens(tok.encode("The dog doesn't sleep.")) == ["the", "dog", "does", "not", "sleep", "."]
    assert tok.decode(greedy_translate(translator, ["The dog sleeps."])[0]) == "der hund schläft."
    assert tok.unknown_words("Yesterday the dog slept under the sofa.") == ["Yesterday", "slept", "under", "sofa"]


def test_gpt_beats_the_unigram_baseline_on_a_sample(gpt):
    from attnscope.engine.corpora.sources import text_splits
    from attnscope.engine.training.evaluation import language_model_scores

    recorded = gpt.meta["training"]["metrics"]
    assert recorded["val_loss"] < recorded["unigram_loss"] - 1.0
    train, valid = text_splits(None, gpt.meta["training"]["seed"])
    sample = language_model_scores(gpt, train[:3000], valid[:150])
    assert sample["val_loss"] < sample["unigram_loss"] - 1.0


def test_gpt_heads_score_what_its_record_says(gpt):
    from attnscope.engine.training.evaluation import best_heads

    recorded = gpt.meta["training"]["metrics"]
    heads = best_heads(gpt)
    assert heads == {k: recorded[k] for k in ("induction_head", "previous_token_head")}
    assert heads["previous_token_head"]["score"] >= 0.5  # a uniform head scores about 0.03
    assert heads["induction_head"]["score"] >= 0.3       # a uniform head scores about 0.02


def test_gpt_training_record_shows_when_its_induction_head_formed(gpt):
    history = gpt.meta["training"]["head_history"]
    induction = [record["decoder self"]["induction"] for record in history]
    assert [record["step"] for record in history] == sorted(record["step"] for record in history)
    assert induction[0] < 0.1 and max(induction) >= 0.3   # absent at first, formed during training


def test_gpt_reads_any_text_without_unknown_tokens(gpt):
    tok = gpt.tokenizer
    text = "ROMEO. Zoë's café, 3½ leagues hence! 😀"
    assert tok.unknown_words(text) == [] and tok.unk_id not in tok.encode(text)
    assert tok.decode(tok.encode(text)) == text
