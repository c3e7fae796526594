"""Masks, softmax rows, and the seam's two paths (fused kernel, written-out maths) agreeing,
for every family; the weights a recording implies are a softmax with masked cells exactly 0."""
import pytest
import torch

from attnscope.engine.models.layers import MultiHeadAttention, causal_mask, combine_masks, key_mask
from attnscope.engine.models import Bert, BertConfig, GPT, GPTConfig, Translator, TranslatorConfig
from attnscope.engine.models.outputs import CROSS, DECODER_SELF, ENCODER_SELF
from attnscope.engine.seam import AttentionCall, SeamHook, Site, attend, hooks, recording

PAD = 0


class WrittenOut(SeamHook):
    """Edits nothing, but makes every call take the written-out (eager) path."""

    def edits(self, site):
        return True


def attentions(run):
    """(the output of ``run()``, kind -> per-layer weights (B, H, Tq, Tk) from the recording)."""
    with recording() as rec:
        out = run()
    return out, {kind: [c.weights(None) for c in rec.layers(kind)] for kind in rec.kinds()}


def call_weights(q, k, v, mask):
    return AttentionCall(Site(ENCODER_SELF, 0), q, k, v, mask=mask, scale=q.shape[-1] ** -0.5).weights(None)


def test_rows_sum_to_one_and_masked_cells_are_exactly_zero():
    torch.manual_seed(0)
    q, k, v = (torch.randn(2, 3, 6, 8) for _ in range(3))
    ids = torch.tensor([[5, 6, 7, 8, 0, 0], [5, 6, 7, 8, 9, 10]])
    mask = combine_masks(key_mask(ids, ids != PAD), causal_mask(6))
    w = call_weights(q, k, v, mask)
    assert w.shape == (2, 3, 6, 6)
    assert torch.all((w.sum(-1) - 1).abs() < 1e-5)
    full = mask.expand_as(w)
    assert torch.all(w[~full] == 0)
    assert torch.all(w[0, :, :, 4:] == 0)          # padding columns, every query
    assert torch.all(w.triu(diagonal=1) == 0)       # no future


def test_causal_mask_with_cache_offsets():
    m = causal_mask(2, 5)[0, 0]
    assert m.tolist() == [[True, True, True, True, False], [True, True, True, True, True]]


def test_fully_masked_row_is_zero_not_nan():
    q, k, v = (torch.randn(1, 1, 2, 4) for _ in range(3))
    mask = torch.tensor([[[[False, False], [True, False]]]])
    w = call_weights(q, k, v, mask)
    assert not torch.isnan(w).any() and w[0, 0, 0].sum() == 0


@pytest.mark.parametrize("cross", [False, True])
def test_mha_fused_and_written_out_paths_agree(cross):
    torch.manual_seed(1)
    mha = MultiHeadAttention(32, 4, cross=cross).eval()
    mha.site = Site(CROSS if cross else DECODER_SELF, 0)
    x, mem = torch.randn(2, 5, 32), torch.randn(2, 7, 32)
    mask = key_mask(ids := torch.tensor([[1] * 7, [1] * 5 + [0] * 2]), ids != PAD) if cross else causal_mask(5)
    (a, _), found = attentions(lambda: mha(x, mem if cross else None, mask))
    with hooks(WrittenOut()):
        b, _ = mha(x, mem if cross else None, mask)
    (w,) = found[CROSS if cross else DECODER_SELF]
    assert w.shape == (2, 4, 5, 7 if cross else 5)
    torch.testing.assert_close(a, b, atol=1e-5, rtol=0)


def test_an_empty_hook_changes_nothing_bit_for_bit():
    torch.manual_seed(2)
    q, k, v = torch.randn(1, 4, 6, 8), torch.randn(1, 2, 6, 8), torch.randn(1, 2, 6, 8)   # grouped-query
    call = AttentionCall(Site(DECODER_SELF, 0), q, k, v, mask=causal_mask(6), scale=0.3)
    plain = attend(call)
    with hooks(SeamHook()):
        assert torch.equal(attend(call), plain)


def _models():
    torch.manual_seed(0)
    return {
        "translator": Translator(TranslatorConfig(30, 40, d_model=32, n_head=4, n_encoder_layers=2, n_decoder_layers=2, d_ff=64)),
        "translator-preln-shared": Translator(TranslatorConfig(30, 30, d_model=32, n_head=2, n_encoder_layers=1,
                                                               n_decoder_layers=2, d_ff=64, norm_first=True, share_embeddings=True)),
        "gpt": GPT(GPTConfig(30, block_size=16, n_layer=2, n_head=4, n_embd=32)),
        "gpt-rope": GPT(GPTConfig(30, block_size=16, n_layer=2, n_head=2, n_embd=32, position="rope")),
        "bert": Bert(BertConfig(30, hidden_size=32, num_hidden_layers=2, num_attention_heads=4, intermediate_size=64)),
    }


def _run(name, model, src=None, tgt=None):
    if name.startswith("translator"):
        return model(src, tgt)
    if name.startswith("gpt"):
        return model(tgt)
    return model(src)


SRC = torch.tensor([[5, 6, 7, 8, 9, 3], [5, 6, 7, 3, 0, 0]])   # second example padded
TGT = torch.tensor([[2, 11, 12, 13, 14], [2, 11, 12, 0, 0]])


@pytest.mark.parametrize("name", list(_models()))
def test_family_fused_path_matches_written_out_path(name):
    model = _models()[name].eval()
    a, found = attentions(lambda: _run(name, model, SRC, TGT))
    with hooks(WrittenOut()):
        b = _run(name, model, SRC, TGT)
    out_a = a.logits if a.logits is not None else a.hidden
    out_b = b.logits if b.logits is not None else b.hidden
    torch.testing.assert_close(out_a, out_b, atol=1e-5, rtol=0)
    assert set(found) == set(model_kinds(name))
    for kind, layers in found.items():
        for w in layers:
            real_rows = w.sum(-1)
            assert torch.all((real_rows - 1).abs() < 1e-5), kind


def model_kinds(name):
    return {"translator": (ENCODER_SELF, DECODER_SELF, CROSS), "gpt": (DECODER_SELF,), "bert": (ENCODER_SELF,)}[
        name.split("-")[0]]


SRC_KEEP, TGT_KEEP = SRC != 0, TGT != 0   # how these batches were padded


def test_shapes_and_padding_columns_for_batches_of_different_lengths():
    model = _models()["translator"].eval()
    out, found = attentions(lambda: model(SRC, TGT, src_keep=SRC_KEEP, tgt_keep=TGT_KEEP))
    assert out.logits.shape == (2, 5, 40)
    assert [w.shape for w in found[ENCODER_SELF]] == [(2, 4, 6, 6)] * 2
    assert [w.shape for w in found[DECODER_SELF]] == [(2, 4, 5, 5)] * 2
    assert [w.shape for w in found[CROSS]] == [(2, 4, 5, 6)] * 2
    for w in found[ENCODER_SELF] + found[CROSS]:
        assert torch.all(w[1, :, :, 4:] == 0)   # padded source keys get no attention
    for w in found[DECODER_SELF]:
        assert torch.all(w[1, :, :, 3:] == 0)   # padded target keys get no attention
    bert = _models()["bert"].eval()
    for w in attentions(lambda: bert(SRC, attention_mask=SRC_KEEP))[1][ENCODER_SELF]:
        assert torch.all(w[1, :, :, 4:] == 0)


def test_a_pad_id_in_the_text_is_attended_to_like_any_token():
    """Masks come from how a batch was padded, never from ids: a typed "[PAD]" is a word
    (as in Hugging Face, whose tokenizer gives it attention_mask 1)."""
    typed = torch.tensor([[5, 6, 0, 8, 3]])   # id 0 is the pad id, typed by the user
    bert = _models()["bert"].eval()
    for w in attentions(lambda: bert(typed))[1][ENCODER_SELF]:
        assert torch.all(w[0, :, :, 2] > 0)
    translator = _models()["translator"].eval()
    _, found = attentions(lambda: translator(typed, torch.tensor([[2, 0, 11]])))
    for w in found[ENCODER_SELF] + found[CROSS]:
        assert torch.all(w[0, :, :, 2] > 0)
    for w in found[DECODER_SELF]:
        assert torch.all(w[0, :, 1:, 1] > 0)


@pytest.mark.parametrize("name", ["translator", "translator-preln-shared", "gpt", "gpt-rope"])
def test_decoder_cannot_see_the_future(name):
    model = _models()[name].eval()
    tgt = TGT[:1].clone()
    before = _run(name, model, SRC[:1], tgt).logits
    tgt[0, 3] = 17
    after = _run(name, model, SRC[:1], tgt).logits
    torch.testing.assert_close(before[:, :3], after[:, :3], atol=1e-6, rtol=0)
    assert not torch.allclose(before[:, 3], after[:, 3])


@pytest.mark.parametrize("name", list(_models()))
def test_gradients_reach_every_parameter(name):
    model = _models()[name].train()
    out = _run(name, model, SRC, TGT)
    (out.logits if out.logits is not None else out.hidden).square().mean().backward()
    missing = [n for n, p in model.named_parameters() if p.grad is None or not torch.any(p.grad != 0)]
    assert missing == []
