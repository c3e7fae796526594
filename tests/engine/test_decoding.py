"""Step-wise decoding: cached steps equal a full recompute, beams are exact, sampling is seeded."""
import itertools
import math

import numpy as np
import pytest
import torch

from attnscope.engine.decoding.session import DecodeSession, DecodeSettings, decode_all
from attnscope.engine.loading.demo import random_model
from attnscope.engine.models.outputs import CROSS, DECODER_SELF
from attnscope.engine.inputs import InputError
from attnscope.engine.seam import recording

TEXT = "the big dog sees the small cat ."


@pytest.mark.parametrize("family", ["translator", "gpt"])
def test_cached_steps_match_a_full_recompute(family):
    loaded = random_model(family, seed=2)
    session = DecodeSession(loaded, TEXT, DecodeSettings(max_new_tokens=5))
    steps = list(session.steps())
    assert len(steps) >= 1
    tok = loaded.tgt_tokenizer
    prompt = [tok.bos_id] if family == "translator" else tok.encode(TEXT)
    src = torch.tensor([loaded.tokenizer.encode(TEXT) + [loaded.tokenizer.eos_id]])
    with torch.no_grad():
        for i, step in enumerate(steps):
            seq = torch.tensor([prompt + [s.token_id for s in steps[:i]]])
            with recording() as rec:
                out = loaded.model(src, seq) if family == "translator" else loaded.model(seq)
            probs = torch.softmax(out.logits[0, -1], -1)
            assert step.token_id == int(probs.argmax())
            assert step.probability == pytest.approx(float(probs.max()), abs=1e-5)
            rows = np.stack([c.weights(0)[:, -1].numpy() for c in rec.layers(DECODER_SELF)])  # (L, H, T)
            np.testing.assert_allclose(step.self_rows, rows, atol=1e-5)
            if family == "translator":
                cross = np.stack([c.weights(0)[:, -1].numpy() for c in rec.layers(CROSS)])
                np.testing.assert_allclose(step.cross_rows, cross, atol=1e-5)
            else:
                assert step.cross_rows is None


def test_beam_of_vocabulary_width_equals_exhaustive_search():
    """Over two steps a beam as wide as the vocabulary keeps every prefix, so it must find
    the best sequence an exhaustive search finds (same length-normalised score)."""
    loaded = random_model("translator", seed=4)
    v = loaded.tgt_tokenizer.vocab_size
    eos = loaded.tgt_tokenizer.eos_id
    src = torch.tensor([loaded.tokenizer.encode(TEXT) + [loaded.tokenizer.eos_id]])
    settings = DecodeSettings(strategy="beam", beam_width=v, max_new_tokens=2, length_penalty=1.0)
    result = decode_all(loaded, TEXT, settings)
    bos = loaded.tgt_tokenizer.bos_id
    with torch.no_grad():  # log p(a) and, for every first token a, log p(b | a) in one batch
        first = torch.log_softmax(loaded.model(src, torch.tensor([[bos]])).logits[0, -1], -1)
        seqs = torch.tensor([[bos, a] for a in range(v)])
        second = torch.log_softmax(loaded.model(src.expand(v, -1), seqs).logits[:, -1], -1)  # (V, V)
    scored = [(float(first[eos]), [eos])]
    scored += [(float(first[a] + second[a, b]) / 2, [a, b]) for a, b in itertools.product(range(v), range(v)) if a != eos]
    best_score, best = max(scored)
    final = result.steps[-1].output_ids
    assert final == best
    assert max(h.score for h in result.steps[-1].beams) >= best_score - 1e-4


def test_eos_ends_a_hypothesis_and_the_session():
    loaded = random_model("translator", seed=1)
    eos = loaded.tgt_tokenizer.eos_id
    with torch.no_grad():  # make EOS the certain next token
        loaded.model.generator.bias[eos] = 100.0
    greedy = decode_all(loaded, TEXT)
    assert len(greedy.steps) == 1 and greedy.steps[0].token_id == eos and greedy.steps[0].finished
    assert greedy.output_tokens == []
    beam = decode_all(loaded, TEXT, DecodeSettings(strategy="beam", beam_width=3))
    assert beam.steps[-1].finished and all(h.finished for h in beam.steps[0].beams if h.ids[-1] == eos)


def test_beam_records_parents_scores_and_pruning():
    loaded = random_model("gpt", seed=3)
    steps = decode_all(loaded, TEXT, DecodeSettings(strategy="beam", beam_width=3, max_new_tokens=4)).steps
    second = steps[1].beams
    live = [h for h in second if not h.pruned and not h.finished]
    assert len(live) <= 3 and any(h.pruned for h in second)
    assert all(0 <= h.parent < 3 for h in second)
    assert all(math.isfinite(h.score) for h in second)


def test_sampling_is_seeded_and_top_k_restricts_the_support():
    loaded = random_model("gpt", seed=5)
    s = DecodeSettings(strategy="sample", seed=7, temperature=1.5, max_new_tokens=6)
    a, b = decode_all(loaded, TEXT, s), decode_all(loaded, TEXT, s)
    assert [x.token_id for x in a.steps] == [x.token_id for x in b.steps]
    other = decode_all(loaded, TEXT, DecodeSettings(strategy="sample", seed=8, temperature=1.5, max_new_tokens=6))
    assert [x.token_id for x in other.steps] != [x.token_id for x in a.steps]
    k = decode_all(loaded, TEXT, DecodeSettings(strategy="sample", seed=1, top_k=2, max_new_tokens=6))
    for step in k.steps:
        assert sum(p > 0 for _, p in step.candidates) <= 2
        assert step.token in [t for t, p in step.candidates[:2]]
    p = decode_all(loaded, TEXT, DecodeSettings(strategy="sample", seed=1, top_p=1e-9, max_new_tokens=3))
    for step in p.steps:  # a tiny nucleus keeps only the most likely token
        assert step.probability == pytest.approx(1.0)


def test_bad_input_is_refused_clearly():
    with pytest.raises(InputError, match="no text"):
        DecodeSession(random_model("gpt"), "   ")
    with pytest.raises(InputError, match="needs a model that generates text"):
        DecodeSession(random_model("bert"), TEXT)


@pytest.mark.parametrize("family", ["translator", "gpt"])
def test_a_text_longer_than_the_model_reads_is_cut_and_said(family):
    """The translator translates the text's beginning, a decoder continues from the prompt's
    end; either way the session says how long the text was and what was kept."""
    loaded = random_model(family)
    assert DecodeSession(loaded, TEXT).notes == []
    words = " ".join(f"{w}" for _ in range(60) for w in TEXT.split())
    session = DecodeSession(loaded, words)
    everything = loaded.tokenizer.encode(words)
    note, = session.notes
    assert f"has {len(everything)} tokens" in note
    if family == "translator":
        keep = loaded.model.config.max_len - 1
        assert session.source_tokens[:-1] == loaded.tokenizer.tokens(everything[:keep])
        assert f"only the first {keep} are translated" in note
    else:
        keep = loaded.model.config.block_size - 1
        assert session.prompt_tokens == loaded.tokenizer.tokens(everything[-keep:])
        assert f"truncated to its last {keep}: a continuation follows the end" in note
    assert decode_all(loaded, words, DecodeSettings(max_new_tokens=2)).notes == session.notes


@pytest.mark.parametrize("family", ["translator", "gpt"])
def test_sampling_never_draws_a_special_token_but_the_end(family):
    loaded = random_model(family, seed=4)
    tok = loaded.tgt_tokenizer
    allowed = {tok.eos_id}
    drawn = set()
    for seed in range(8):
        result = decode_all(loaded, TEXT, DecodeSettings(strategy="sample", temperature=5.0, seed=seed,
                                                         max_new_tokens=12))
        for step in result.steps:
            drawn.add(step.token_id)
            assert all(t not in ("[PAD]", "[BOS]", "[CLS]", "[SEP]", "[MASK]", "[UNK]") for t, _ in step.candidates)
    assert not (drawn & (tok.special_ids - allowed))
    assert len(drawn) > 5
