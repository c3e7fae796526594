"""Why a head attends: one score split into (query source x key source) terms (engine + CLI).

The independent float64 references per family are in test_why_reference.py; here: the terms
sum to the model's own score at every kind, the weight is the one every view draws, the
bundled GPT's induction head is explained by its previous-token head, loadings average the
table as the attention weighs it, and every bad input is one sentence.
"""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from attnscope.engine.experiments import RUNNER_UP, why
from attnscope.engine.inputs import InputError
from attnscope.engine.loading import open_model
from attnscope.engine.loading.demo import random_model
from attnscope.engine.traces import trace_text
from attnscope.engine.traces import reading

ROOT = Path(__file__).resolve().parents[2]
GPT = ROOT / "resources" / "checkpoints" / "gpt.safetensors"
REPEATED = "the king is dead and the queen is sad . the king is dead and the queen is sad ."


@pytest.fixture(scope="module")
def translator():
    return random_model("translator", seed=3)


@pytest.fixture(scope="module")
def gpt():
    return open_model(str(GPT), "cpu")


def _same_up_to_float32(got, want) -> None:
    """Two forwards of other batch shapes (chunks, a second key) add the same float32 numbers in
    another order: torch splits a matmul by shape and by threads, and a loaded machine gave 7e-7
    on terms up to ~6 (issue 53). Each term is a d_model-long float32 dot product, so its last
    bits move by ~eps32 (1.2e-7) x its size x a few: 1e-5 of the table's largest term holds that
    and still fails a wrong copy or position (off by 0.1 or more)."""
    want = np.asarray(want)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5 * max(1.0, float(np.abs(want).max())))


def _close(a: float, b: float, scale: float) -> bool:
    return abs(a - b) <= 1e-5 * max(1.0, scale)


@pytest.mark.parametrize("kind, layer, head, query, key", [
    ("encoder self", 1, 2, 3, 1), ("decoder self", 1, 1, 3, 2), ("cross", 0, 3, 2, 4), ("cross", 1, 0, 1, 0)])
def test_terms_sum_to_the_models_own_score_and_the_weight_is_the_drawn_one(translator, kind, layer, head, query, key):
    text, target = "the dog sees the cat", "der Hund sieht"
    split = why(translator, text, kind, layer, head, query, key, target=target)
    assert _close(split.exact_sum, split.score, np.abs(split.terms).sum())
    assert split.terms.shape == (len(split.query_sources), len(split.key_sources))
    assert split.query_sources[-1] == split.key_sources[-1] == "bias"
    trace = trace_text(translator, text, target=target)
    row = reading.row(trace, kind, layer, head, query)
    assert split.weight == pytest.approx(float(row[key]), abs=1e-6)
    assert list(split.query_tokens) == list(reading.query_tokens(trace, kind))
    assert list(split.key_tokens) == list(reading.key_tokens(trace, kind))
    if kind == "cross":      # the key side of cross-attention is the encoder's
        assert all(name.startswith("enc.") for name in split.key_sources[:-1])
        assert not any(name.startswith("enc.") for name in split.query_sources)
        assert any(name.startswith(f"L{layer}.H") for name in split.query_sources)   # this layer's self heads
    if kind == "decoder self" and layer == 1:
        assert "L0.X0" in split.query_sources


def test_softmax_of_the_row_of_scores_is_the_row_of_weights(translator):
    """Each key's split score, plus its position bias, through the softmax, is the drawn row."""
    text, target = "the dog sees the cat", "der Hund"
    trace = trace_text(translator, text, target=target)
    row = reading.row(trace, "encoder self", 1, 1, 2)
    scores = [why(translator, text, "encoder self", 1, 1, 2, j, target=target) for j in range(len(row))]
    logits = np.array([s.exact_sum + s.position_bias for s in scores])
    soft = np.exp(logits - logits.max())
    np.testing.assert_allclose(soft / soft.sum(), row, atol=1e-5)


def test_versus_is_the_same_table_for_another_key_and_the_runner_up_is_the_rows_second(gpt):
    split = why(gpt, REPEATED, "decoder self", 3, 3, 15, 3, versus=RUNNER_UP)
    row = reading.row(trace_text(gpt, REPEATED), "decoder self", 3, 3, 15)
    order = np.argsort(-row)
    assert split.versus.key == int(order[1] if order[0] == 3 else order[0])
    again = why(gpt, REPEATED, "decoder self", 3, 3, 15, split.versus.key)
    _same_up_to_float32(split.versus.terms, again.terms)
    assert split.versus.weight == pytest.approx(again.weight, abs=1e-6)   # a few float32 ulps of a weight <= 1
    diff = split.as_json()["versus"]["difference"]
    _same_up_to_float32(np.array(diff), split.terms - again.terms)


def test_the_induction_head_is_explained_by_the_previous_token_head(gpt):
    """On a repeated text, the bundled GPT's induction head (3.3) attends from a token to the
    one after its earlier copy; the key side of that score is written by the previous-token
    head (2.1): K-composition."""
    split = why(gpt, REPEATED, "decoder self", 3, 3, 15, 3)          # 'is' (2nd copy) -> 'dead' (after 1st 'is')
    assert split.weight > 0.3
    assert split.key_sources[int(np.argmax(split.key_marginal))] == "L2.H1"
    a, b = np.unravel_index(np.abs(split.terms).argmax(), split.terms.shape)
    assert (split.query_sources[a], split.key_sources[b]) == ("L0.mlp", "L2.H1")


def test_loadings_are_the_attention_weighted_mean_of_the_scores(gpt):
    """On a short text every cell counts: the loadings' total is the head's mean score under
    its own weights, sum_ij w_ij s_ij / sum_ij w_ij."""
    text = "the king is dead . the king is dead ."
    split = why(gpt, text, "decoder self", 3, 3, 7, 3, loadings=True)
    ld = split.loadings
    assert ld.exact and ld.coverage == pytest.approx(1.0) and ld.keys_per_row is None
    trace = trace_text(gpt, text)
    n = len(split.query_tokens)
    total, mass = 0.0, 0.0
    for i in range(n):
        row = reading.row(trace, "decoder self", 3, 3, i)
        for j in range(i + 1):
            total += row[j] * why(gpt, text, "decoder self", 3, 3, i, j).exact_sum
            mass += row[j]
    assert ld.terms.sum() == pytest.approx(total / mass, rel=1e-4)


def test_loadings_of_a_long_text_are_over_a_stated_sample(gpt, monkeypatch):
    from attnscope.engine.experiments import score_split

    monkeypatch.setattr(score_split, "EXACT_CELLS", 8)
    monkeypatch.setattr(score_split, "SAMPLED_ROWS", 4)
    monkeypatch.setattr(score_split, "KEYS_PER_ROW", 3)
    split = why(gpt, REPEATED, "decoder self", 3, 3, 15, 3, loadings=True)
    ld = split.loadings
    assert not ld.exact and len(ld.rows) == 4 and ld.keys_per_row == 3 and 0 < ld.coverage <= 1
    assert np.isfinite(ld.terms).all()


def test_a_recording_is_told_that_why_needs_the_model(gpt, tmp_path):
    trace = trace_text(gpt, "the king is dead")
    with pytest.raises(InputError, match="needs the model itself"):
        why(trace, "the king is dead", "decoder self", 0, 0, 1, 0)


@pytest.mark.parametrize("change, message", [
    (dict(kind="cross"), "no 'cross' attention"),
    (dict(layer=4), "layer is 4, but there are 4"),
    (dict(head=7), "head of decoder self layer 0 is 7"),
    (dict(query=99), "query position"),
    (dict(key=3), "cannot see key 3"),
    (dict(versus=3), "cannot see key 3"),
    (dict(query=-1), "is -1, but"),
    (dict(key="2"), "whole number"),
    (dict(text=""), "text"),
])
def test_bad_questions_get_one_sentence(gpt, change, message):
    asked = dict(text="the king is dead", kind="decoder self", layer=0, head=0, query=2, key=1)
    asked.update(change)
    text = asked.pop("text")
    with pytest.raises(InputError, match=message):
        why(gpt, text, **asked)


def _cli(*args):
    return subprocess.run([sys.executable, str(ROOT / "main.py"), *args], capture_output=True, text=True, cwd=ROOT,
                          timeout=300)


def test_the_command_prints_one_object_and_refuses_in_one_line(tmp_path):
    out = _cli("why", str(GPT), "--text", REPEATED, "--head", "3.3", "--query", "15", "--key", "3", "--versus", "12",
               "--json")
    assert out.returncode == 0, out.stderr
    got = json.loads(out.stdout)
    for key in ("model", "kind", "layer", "head", "query", "key", "tokens", "ids", "score", "weight", "position_bias",
                "query_sources", "key_sources", "terms", "versus", "notes"):
        assert key in got
    assert set(got["versus"]) >= {"key", "score", "weight", "terms"}
    assert abs(np.array(got["terms"]).sum() - got["score"]) < 1e-4
    assert got["tokens"][15] == "is" and got["versus"]["key"] == 12
    bad = _cli("why", str(GPT), "--text", "the king", "--head", "3.3", "--query", "0", "--key", "1", "--json")
    assert bad.returncode == 2 and bad.stdout == "" and len(bad.stderr.strip().splitlines()) == 1
    assert "mask hides it" in bad.stderr
    odd = _cli("why", str(GPT), "--text", "the king", "--head", "x", "--query", "0", "--key", "0", "--json")
    assert odd.returncode == 2 and "L.H" in odd.stderr


def test_a_replay_in_chunks_gives_the_table_of_one_batch(gpt, monkeypatch):
    """A long loading reads more copies x positions than one forward holds: in chunks, the
    table and the loadings are the same numbers."""
    from attnscope.engine.experiments import score_split

    whole = why(gpt, REPEATED, "decoder self", 3, 3, 15, 3, versus=12, loadings=True)
    monkeypatch.setattr(score_split, "COPY_TOKENS", 40)          # 21 copies: one or two positions a forward
    chunked = why(gpt, REPEATED, "decoder self", 3, 3, 15, 3, versus=12, loadings=True)
    _same_up_to_float32(chunked.terms, whole.terms)
    _same_up_to_float32(chunked.versus.terms, whole.versus.terms)
    _same_up_to_float32(chunked.loadings.terms, whole.loadings.terms)
