"""Induction and previous-token scores: exact on a hand-built model, recorded while training."""
import numpy as np
import pytest
import torch
from torch import nn

from attnscope.engine.inspection.analysis import induction_scores, mechanism_scores, previous_token_scores, repeated_random_tokens
from attnscope.engine.loading.demo import random_model
from attnscope.engine.loading.loaded import LoadedModel
from attnscope.engine.models.outputs import DECODER_SELF, ENCODER_SELF, ModelOutput
from attnscope.engine.models.tokenizer import Tokenizer
from attnscope.engine.seam import AttentionCall, Site, attend


class HandBuiltGPT(nn.Module):
    """One layer, three heads, attention set by rule rather than learned: head 0 attends to
    the previous token, head 1 is an induction head (to the token after the latest earlier
    occurrence of the current token, else to the first position), head 2 is uniform."""

    family = "gpt"

    def __init__(self, vocab_size: int):
        super().__init__()
        self.config = type("Config", (), {"block_size": 128, "vocab_size": vocab_size})()
        self.unused = nn.Parameter(torch.zeros(1))

    def forward(self, idx, **_):
        """Each head's weights are set through the seam: equal scores, and a mask that
        leaves exactly the keys the rule names, so the softmax is exactly the rule."""
        b, t = idx.shape
        allowed = torch.zeros(b, 3, t, t, dtype=torch.bool)
        for q in range(t):
            allowed[:, 0, q, max(q - 1, 0)] = True
            earlier = [p for p in range(q) if idx[0, p] == idx[0, q]]
            allowed[:, 1, q, earlier[-1] + 1 if earlier else 0] = True
            allowed[:, 2, q, : q + 1] = True
        q = k = v = torch.zeros(b, 3, t, 1)
        attend(AttentionCall(Site(DECODER_SELF, 0), q, k, v, mask=allowed))
        return ModelOutput(torch.zeros(b, t, self.config.vocab_size), torch.zeros(b, t, 1))


@pytest.fixture(scope="module")
def words():
    return Tokenizer.train_word_level([" ".join(f"w{i}" for i in range(200))])


def test_hand_built_heads_score_exactly(words):
    loaded = LoadedModel("hand-built", "gpt", HandBuiltGPT(words.vocab_size).eval(), words)
    scores = mechanism_scores(loaded)[DECODER_SELF]
    assert scores["previous"][0, 0] == pytest.approx(1.0)
    assert scores["induction"][0, 1] == pytest.approx(1.0)
    assert scores["induction"][0, 0] == pytest.approx(0.0)
    assert scores["previous"][0, 1] < 0.1
    assert 0.005 < scores["induction"][0, 2] < 0.03  # a uniform head: about one over the position


def test_the_sequence_is_fixed_and_repeats_distinct_tokens():
    a = repeated_random_tokens(list(range(10, 500)), 40)
    assert a == repeated_random_tokens(list(range(10, 500)), 40)
    assert a[:40] == a[40:] and len(set(a[:40])) == 40


def test_scores_on_constructed_weights():
    half, start = 3, 1
    t = start + 2 * half
    w = np.zeros((1, 2, t, t))
    w[0, 0, np.arange(t), np.maximum(np.arange(t) - 1, 0)] = 1   # previous token
    for j in range(half):                                          # induction, second copy only
        w[0, 1, start + half + j, start + j + 1] = 1
    assert induction_scores(w, start, half).tolist() == [[0.0, 1.0]]
    assert previous_token_scores(w, start, 2 * half).tolist()[0][0] == 1.0


@pytest.mark.parametrize("family, kinds", [("gpt", {DECODER_SELF}), ("translator", {ENCODER_SELF, DECODER_SELF}),
                                           ("bert", {ENCODER_SELF})])
def test_every_family_of_ours_gets_scores_per_head(family, kinds):
    loaded = random_model(family, seed=0)
    loaded.model.eval()
    scores = mechanism_scores(loaded)
    assert set(scores) == kinds
    for by_name in scores.values():
        for a in by_name.values():
            assert a.ndim == 2 and np.all((a >= 0) & (a <= 1))


def test_a_model_in_training_mode_is_not_scored():
    loaded = random_model("gpt", seed=0)
    loaded.model.train()
    assert mechanism_scores(loaded) == {}


def test_training_records_the_scores_with_each_probe_and_the_time_lapse_keeps_them(tmp_path):
    from attnscope.engine.corpora.german import make_splits
    from attnscope.engine.training.timelapse import Probe, load_timelapse, save_timelapse
    from attnscope.engine.training.loops import TrainConfig, run_training, train_gpt

    lines = [en for en, _ in make_splits(seed=1, n_train=200, n_valid=20, n_test=5)["train"]]
    cfg = TrainConfig(size="tiny", steps=10, batch_size=8, warmup=2, report_every=5, eval_every=0, vocab_size=200,
                      probe_every=5, probe_text="the dog sleeps .")
    records = []
    run_training(train_gpt(lines[:180], lines[180:], cfg), records.append)
    probes = [Probe.from_progress(r) for r in records if r.probe is not None]
    assert [p.step for p in probes] == [5, 10]
    assert probes[0].scores[DECODER_SELF]["induction"].shape == (1, 2)
    back = load_timelapse(save_timelapse(tmp_path / "run.timelapse.npz", probes))
    for before, after in zip(probes, back):
        for name in ("induction", "previous"):
            np.testing.assert_allclose(after.scores[DECODER_SELF][name], before.scores[DECODER_SELF][name], atol=1e-5)


def test_a_gpt_with_a_byte_tokenizer_and_no_eos_is_scored_too():
    from attnscope.engine.models import GPT, GPTConfig
    from attnscope.engine.models.tokenizer import ByteTokenizer

    model = GPT(GPTConfig(256, n_layer=1, n_head=2, n_embd=16, block_size=64)).eval()
    scores = mechanism_scores(LoadedModel("nanoGPT-like", "gpt", model, ByteTokenizer(256)))
    assert scores[DECODER_SELF]["induction"].shape == (1, 2)


def test_a_byte_fallback_bpe_counts_characters_of_its_pieces():
    from attnscope.engine.training.evaluation import characters

    tok = Tokenizer.train_bpe(["the king is dead, long live the king"] * 20, vocab_size=60)
    ids = tok.encode("the king é")
    assert characters(tok, ids) == len(" the king ") + len("é".encode())  # each piece's "▁" is a space; é is 2 bytes
    assert characters(tok, ids + [tok.eos_id]) == characters(tok, ids) + 1


def test_scores_are_computed_once_per_model_until_a_weight_changes(monkeypatch):
    """Head statistics asks on every Run; the answer depends on the weights alone."""
    import attnscope.engine.inspection.analysis as analysis

    loaded = random_model("gpt")
    calls = []
    real = analysis._mechanism_forward
    monkeypatch.setattr(analysis, "_mechanism_forward", lambda lm: calls.append(1) or real(lm))
    first = mechanism_scores(loaded)
    assert mechanism_scores(loaded) is first and len(calls) == 1
    with torch.no_grad():                        # a training step changes weights in place
        next(loaded.model.parameters()).add_(0.5)
    again = mechanism_scores(loaded)
    assert len(calls) == 2 and not np.array_equal(again[DECODER_SELF]["previous"], first[DECODER_SELF]["previous"])
    assert mechanism_scores(random_model("gpt")) is not again and len(calls) == 3   # another model: its own


def test_kept_scores_are_read_without_a_forward_and_none_until_there_are_some(monkeypatch):
    """Head statistics reads kept scores on its own worker (no queue behind the model thread):
    None before the first forward and after a weight changes, the kept dict in between."""
    import attnscope.engine.inspection.analysis as analysis

    loaded = random_model("gpt")
    calls = []
    real = analysis._mechanism_forward
    monkeypatch.setattr(analysis, "_mechanism_forward", lambda lm: calls.append(1) or real(lm))
    assert analysis.kept_mechanism_scores(loaded) is None and not calls
    first = mechanism_scores(loaded)
    assert analysis.kept_mechanism_scores(loaded) is first and len(calls) == 1
    with torch.no_grad():
        next(loaded.model.parameters()).add_(0.5)
    assert analysis.kept_mechanism_scores(loaded) is None and len(calls) == 1
    loaded.model.train()
    assert analysis.kept_mechanism_scores(loaded) == {}
