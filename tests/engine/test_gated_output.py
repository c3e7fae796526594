"""Gated attention outputs (issue 57): Qwen3.5's full-attention layers compute
o_proj((p·v) ⊙ σ(g)). The weights are the softmax's; what a head adds to the stream is its
gated output through W_O's slice. Held against transformers with forward hooks on the
model's own o_proj (named here, in the reference only):

- the gate is found, not named: the adapter's gated projection is each layer's o_proj, and a
  family without a gate has none;
- direct logit attribution: the heads, MLPs, embeddings and biases sum to the logit
  difference, no attention output is left over for the bias, and a head's share is its gated
  output through the final norm onto the answers (1e-5);
- exact patching of a head equals transformers with that head's gated output (o_proj's input)
  replaced by the clean run's (1e-5); attribution patching equals its formula at o_proj's input;
- Why: the terms of a score in the second layer (whose stream holds the first layer's gated
  heads) sum to the model's own score;
- value-weighted attention is refused in one sentence naming the gate.
"""
from pathlib import Path

import numpy as np
import pytest
import torch

from attnscope.engine.adapters import adapter_for
from attnscope.engine.experiments.pairs import PromptPair, frame_pair
from attnscope.engine.experiments.patching import exact_patching, run_to_end
from attnscope.engine.inputs import InputError
from attnscope.engine.kinds import DECODER_SELF
from attnscope.engine.loading.catalog import open_model
from attnscope.engine.seam import Site

PAIR = PromptPair("the big dog sees the small cat", "the small cat sees the big dog", " cat", " dog")
TEXT = "the big dog sees the small cat"


def gated_folder(root: Path) -> Path:
    """A tiny random Qwen3.5 whose two layers are both full (gated) attention."""
    from transformers import AutoModelForCausalLM

    from tests.helpers.hf_tiny import _bpe_tokenizer
    from tools.family_sweep import tiny_config

    folder = Path(root) / "qwen3_5_gated"
    tokenizer = _bpe_tokenizer("decoder")
    config = tiny_config("qwen3_5_text", max(len(tokenizer), 64))
    config.layer_types = ["full_attention"] * 2
    torch.manual_seed(0)
    model = AutoModelForCausalLM.from_config(config).eval()
    with torch.no_grad():                        # a gate far from 1/2 everywhere: scale q_proj's gate rows up
        for layer in model.model.layers:
            layer.self_attn.q_proj.weight.mul_(4.0)
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder


@pytest.fixture(scope="module")
def qwen(tmp_path_factory):
    loaded = open_model(str(gated_folder(tmp_path_factory.mktemp("gated"))), "cpu")
    loaded.model.eval()
    return loaded


def o_projs(loaded):
    return [layer.self_attn.o_proj for layer in loaded.model.model.layers]


def run(loaded, ids, answers, keep=(), put=None):
    """transformers' own forward of ``ids``: (logit difference, {id(module): its input}); ``put``
    (module, fn) edits one module's input."""
    kept, handles = {}, []
    for m in keep:
        handles.append(m.register_forward_pre_hook(lambda mod, a: kept.__setitem__(id(mod), a[0].detach())))
    if put is not None:
        handles.append(put[0].register_forward_pre_hook(lambda _m, a: (put[1](a[0]), *a[1:])))
    try:
        logits = loaded.model(input_ids=torch.tensor([ids])).logits[0, -1].float()
    finally:
        for h in handles:
            h.remove()
    return float(logits[answers[0]] - logits[answers[1]]), kept


def test_the_gate_is_found_at_each_layers_own_projection(qwen, tmp_path):
    adapter = adapter_for(qwen)
    for layer, proj in enumerate(o_projs(qwen)):
        module, heads = adapter.gated_projection(Site(DECODER_SELF, layer))
        assert module is proj and heads == qwen.model.config.num_attention_heads
        assert adapter.output_projection(Site(DECODER_SELF, layer))[0] is proj.weight
    from tests.helpers.hf_tiny import tiny_folder
    llama = adapter_for(open_model(str(tiny_folder(tmp_path, "llama")), "cpu"))
    assert all(llama.gated_projection(s) is None for s in llama.site_modules())


@torch.no_grad()
def test_dla_shares_are_the_gated_heads_and_sum_to_the_logit_difference(qwen):
    from attnscope.engine.experiments.dla import direct_logit_attribution

    pair = frame_pair(qwen, PAIR)
    dla = direct_logit_attribution(qwen, pair)
    r = dla.results
    assert r["heads"].sum() + r["mlp"].sum() + r["embed"] + r["bias"] == pytest.approx(dla.clean, abs=1e-5)
    assert abs(float(r["bias"])) < 1e-5          # no o_proj bias: nothing of the attention is left to the bias
    norm, projs = qwen.model.model.norm, o_projs(qwen)
    ids = pair.clean.target_ids
    clean, kept = run(qwen, ids, pair.answers, keep=(*projs, norm))
    assert dla.clean == pytest.approx(clean, abs=1e-5)
    x = kept[id(norm)][0, -1].float()                                            # the final stream (D,)
    per = norm(x[None])[0].float() / x                                           # N frozen at x: elementwise
    a, b = pair.answers
    w_u = qwen.model.get_output_embeddings().weight.float()
    direction = w_u[a] - w_u[b]
    heads = qwen.model.config.num_attention_heads
    for layer, proj in enumerate(projs):
        gated = kept[id(proj)][0, -1].float()                                    # (H * Dv,) (p·v) ⊙ σ(g)
        dv = gated.shape[0] // heads
        for h in range(heads):
            c = gated[h * dv:(h + 1) * dv] @ proj.weight[:, h * dv:(h + 1) * dv].float().T
            assert r["heads"][layer, h] == pytest.approx(float((c * per) @ direction), abs=1e-5)


@torch.no_grad()
def test_a_patched_head_is_its_gated_output_put_at_the_projections_input(qwen):
    pair = frame_pair(qwen, PAIR)
    result = run_to_end(exact_patching(qwen, pair, ("heads",)))
    projs = o_projs(qwen)
    _, clean = run(qwen, pair.clean.target_ids, pair.answers, keep=projs)
    heads = qwen.model.config.num_attention_heads
    expected = np.zeros((len(projs), heads))
    for layer, proj in enumerate(projs):
        source = clean[id(proj)]
        dv = source.shape[-1] // heads
        for h in range(heads):
            def put(x, s=slice(h * dv, (h + 1) * dv), src=source):
                x = x.clone()
                x[..., s] = src[..., s]
                return x
            expected[layer, h] = run(qwen, pair.corrupt.target_ids, pair.answers, put=(proj, put))[0]
    np.testing.assert_allclose(result.results["heads"], expected, atol=1e-5, rtol=0)
    assert np.ptp(expected) > 1e-3               # the heads differ: the check can fail


def test_attribution_patching_reads_the_gradient_at_the_gated_output(qwen):
    from attnscope.engine.experiments.attribution import attribution_patching

    pair = frame_pair(qwen, PAIR)
    result = run_to_end(attribution_patching(qwen, pair, ("heads",)))
    projs = o_projs(qwen)
    with torch.no_grad():
        _, clean = run(qwen, pair.clean.target_ids, pair.answers, keep=projs)
    inputs, zeros = {}, {}

    def grab(mod, a):                            # a zero added: its gradient is the input's, no path cut
        inputs[id(mod)], zeros[id(mod)] = a[0].detach(), torch.zeros_like(a[0], requires_grad=True)
        return (a[0] + zeros[id(mod)], *a[1:])
    handles = [p.register_forward_pre_hook(grab) for p in projs]
    try:
        logits = qwen.model(input_ids=torch.tensor([pair.corrupt.target_ids])).logits[0, -1].float()
    finally:
        for h in handles:
            h.remove()
    base = logits[pair.answers[0]] - logits[pair.answers[1]]
    grads = torch.autograd.grad(base, [zeros[id(p)] for p in projs])
    heads = qwen.model.config.num_attention_heads
    expected = np.zeros((len(projs), heads))
    for layer, (proj, g) in enumerate(zip(projs, grads)):
        delta = (clean[id(proj)] - inputs[id(proj)]) * g               # (1, T, H * Dv)
        expected[layer] = delta.unflatten(-1, (heads, -1)).sum(dim=(0, 1, 3)).double().numpy()
    np.testing.assert_allclose(result.results["heads"] - float(base.detach()), expected, atol=1e-4, rtol=1e-4)


def test_why_terms_sum_to_the_score_with_gated_heads_in_the_stream(qwen):
    from attnscope.engine.experiments.score_split import why

    split = why(qwen, TEXT, DECODER_SELF, 1, 2, 5, 2)
    assert split.exact_sum == pytest.approx(split.score, abs=1e-4 * max(1.0, np.abs(split.terms).sum()))
    assert any(s.startswith("L0.H") for s in split.query_sources)


def test_value_weighted_attention_is_refused_naming_the_gate(qwen):
    from attnscope.engine.traces.tracing import trace_text

    with pytest.raises(InputError, match="gate") as caught:
        trace_text(qwen, TEXT, value_weighted=True)
    assert "\n" not in str(caught.value)


def test_a_hybrid_with_linear_blocks_is_refused_for_its_true_reason(tmp_path):
    """The default Qwen3.5 (a gated-delta-net block, then a gated softmax block): its gate is
    found, and the per-block experiments say the hybrid is why, in one sentence."""
    from attnscope.engine.experiments.dla import direct_logit_attribution
    from tools.family_sweep import build

    loaded = open_model(str(build(tmp_path, "qwen3_5_text", "decoder")), "cpu")
    adapter = adapter_for(loaded)
    assert [adapter.gated_projection(s) is not None for s in adapter.site_modules()] == [True]
    with pytest.raises(InputError, match="block 0 holds no softmax attention.*hybrid") as caught:
        direct_logit_attribution(loaded, frame_pair(loaded, PAIR))
    assert "\n" not in str(caught.value)


@torch.no_grad()
def test_the_atlas_activation_is_each_heads_gated_output_through_its_projection(qwen):
    """The atlas's head activation ||z_h W_O,h|| reads the gated z (o_proj's input), not the seam's."""
    from attnscope.engine.atlas.forward import HeadNorms, record

    adapter = adapter_for(qwen)
    framed = adapter.prepare(TEXT).framed
    norms = HeadNorms(adapter, DECODER_SELF, len(o_projs(qwen)))
    record(adapter, framed, DECODER_SELF, norms)
    _, kept = run(qwen, framed.target_ids, (0, 1), keep=o_projs(qwen))
    H = qwen.model.config.num_attention_heads
    for layer, proj in enumerate(o_projs(qwen)):
        z = kept[id(proj)][0].unflatten(-1, (H, -1)).transpose(0, 1).float()          # (H, T, Dv) gated
        w = proj.weight.float().reshape(proj.weight.shape[0], H, -1)                 # (D, H, Dv)
        want = torch.einsum("htv,dhv->htd", z, w).norm(dim=-1)                       # (H, T)
        assert torch.allclose(norms.norms[layer], want, atol=1e-5), layer
