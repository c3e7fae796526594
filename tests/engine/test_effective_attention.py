"""Effective attention of a linear-attention layer (issue 57, item 4; engine.seam.linear_mixing).

A tiny random Qwen3.5 (one gated-delta-net layer, one full-attention layer, float32): the seam
records what the linear layer mixes with, the matrix M it implies reproduces the layer's core
output (before its gated norm) to 1e-5, the trace and its export carry the kind, the model's own
output and its softmax layers are unchanged; an intervention on it is refused, value-weighted
attention and the neuron view leave it out, said in one sentence.
"""
import numpy as np
import pytest
import torch

from attnscope.engine.inputs import InputError
from attnscope.engine.kinds import DECODER_SELF, EFFECTIVE, NOT_SOFTMAX
from attnscope.engine.seam import recording
from attnscope.engine.seam.call import Site
from attnscope.engine.seam.linear_mixing import MixingCall
from tools.family_sweep import TEXT, build
from attnscope.engine.traces import reading


@pytest.fixture(scope="module")
def loaded(tmp_path_factory):
    from attnscope.engine.loading.catalog import open_model

    folder = build(tmp_path_factory.mktemp("qwen35"), "qwen3_5_text", "decoder")
    return open_model(str(folder), "cpu")


def _ids(loaded, n=37):
    vocab = loaded.model.config.get_text_config().vocab_size
    return (3 + torch.arange(n) * 7 % (vocab - 3))[None]                 # (1, n)


def _mixer(loaded):
    return next(m for m in loaded.model.modules() if getattr(m, "attnscope_mixing_site", None) is not None)


def test_the_linear_layer_is_found_and_said(loaded):
    assert loaded.model.config.get_text_config().layer_types == ["linear_attention", "full_attention"]
    assert _mixer(loaded).attnscope_mixing_site == Site(EFFECTIVE, 0)
    assert "Effective attention: 1 linear-attention layer (1 gated delta net)" in loaded.meta["notes"]


def _mixing_and_core(loaded, n):
    """One recorded forward of ``n`` tokens: the linear layer's MixingCall, its M (H, T, T) and its core
    output (T, H, Dv) as the model hands it to its gated norm."""
    mixer, core = _mixer(loaded), []
    handle = mixer.norm.register_forward_pre_hook(lambda _m, args: core.append(args[0].detach()))
    try:
        with torch.no_grad(), recording(keep_values=True) as rec:
            loaded.model(input_ids=_ids(loaded, n), use_cache=False)
    finally:
        handle.remove()
    call = rec.calls[Site(EFFECTIVE, 0)]
    m = call.weights(0)                                                     # (H, T, T)
    assert m.shape[1] == n and float(m.triu(1).abs().max()) == 0.0          # causal: no key after the query
    return call, m, core[0].reshape(n, m.shape[0], -1).float()


def _reproduced(call, m, want) -> bool:
    got = torch.einsum("hts,hsd->thd", m, call.v[0].float())                # (T, H, Dv)
    return float((got - want).abs().max()) <= 1e-5 * max(1.0, float(want.abs().max()))


@pytest.mark.parametrize("n", [37, 70])          # one chunk of the function's 64 steps, and two
def test_effective_attention_reproduces_the_core_output(loaded, n):
    call, m, want = _mixing_and_core(loaded, n)
    assert isinstance(call, MixingCall) and call.v is not None and m.shape[0] == _mixer(loaded).num_v_heads
    assert _reproduced(call, m, want)
    block = call.mixing(0, [1], slice(5, 20), slice(3, 11))                 # a block is the same cells
    assert torch.allclose(block[0], m[1, 5:20, 3:11], atol=1e-7)


@pytest.fixture(scope="module")
def mamba(tmp_path_factory):
    from attnscope.engine.loading.catalog import open_model

    return open_model(str(build(tmp_path_factory.mktemp("bamba"), "bamba", "decoder")), "cpu")


@pytest.mark.parametrize("n", [37, 300])         # one chunk of the scan's 256 steps, and two
def test_a_mamba2_layers_effective_attention_reproduces_its_scan(mamba, n):
    """Bamba (Granite 4 hybrid, Falcon-H1 and Nemotron-H call the same scan): M = L ⊙ (C Bᵀ) dt plus D
    on the diagonal, read from transformers' own mamba2_chunk_scan, against the scan's output."""
    assert "1 Mamba-2" in mamba.meta["notes"]
    assert _reproduced(*_mixing_and_core(mamba, n))


def test_the_models_own_output_is_unchanged(loaded):
    ids = _ids(loaded)
    with torch.no_grad():
        plain = loaded.model(input_ids=ids, use_cache=False).logits
        with recording(keep_values=True) as rec:
            recorded = loaded.model(input_ids=ids, use_cache=False).logits
    assert Site(EFFECTIVE, 0) in rec.calls and Site(DECODER_SELF, 0) in rec.calls
    assert torch.equal(plain, recorded)


def test_the_trace_and_its_export_carry_the_kind(loaded, tmp_path):
    from transformers import AutoModelForCausalLM

    from attnscope.engine.adapters import adapter_for
    from attnscope.engine.decoding.greedy import OWN_OUTPUT_TOKENS, frame
    from attnscope.engine.inspection.export import load_npz, save_npz
    from attnscope.engine.traces import reading
    from attnscope.engine.traces.tracing import trace_text

    trace = trace_text(loaded, TEXT)
    assert trace.kinds == [DECODER_SELF, EFFECTIVE]
    L, H, tq, tk = trace.shape(EFFECTIVE)
    assert (L, tq, tk) == (1, len(trace.target_tokens), len(trace.target_tokens))
    eff = reading.weights(trace, EFFECTIVE)                                 # (1, H, T, T)
    assert np.isfinite(eff).all() and (eff < 0).any()                      # not a softmax: negative cells
    thumbs = reading.thumbnails(trace, EFFECTIVE, 8)
    assert thumbs.pooled.shape[:2] == (1, H)
    assert EFFECTIVE in NOT_SOFTMAX
    # the softmax layer is the model's own eager softmax
    reference = AutoModelForCausalLM.from_pretrained(loaded.meta["folder"] or loaded.name, attn_implementation="eager",
                                                     dtype=torch.float32).eval()
    framed = frame(adapter_for(loaded), TEXT, max_new_tokens=OWN_OUTPUT_TOKENS)
    with torch.no_grad():
        theirs = [a for a in reference(input_ids=torch.tensor([framed.target_ids]), output_attentions=True).attentions
                  if isinstance(a, torch.Tensor)]
    assert len(theirs) == 1
    np.testing.assert_allclose(reading.weights(trace, DECODER_SELF)[0], theirs[0][0].numpy(), atol=1e-5)
    back = load_npz(save_npz(trace, tmp_path / "t.npz"))
    assert EFFECTIVE in back.kinds
    np.testing.assert_allclose(reading.weights(back, EFFECTIVE), eff, atol=0)


@pytest.mark.parametrize("which", ["ablation", "knockout"])
def test_an_intervention_on_effective_attention_is_refused_in_one_sentence(loaded, which):
    from attnscope.engine.interventions.refs import Edge, HeadRef
    from attnscope.engine.interventions.spec import Interventions
    from attnscope.engine.traces.tracing import trace_text

    spec = Interventions(ablated=((HeadRef(EFFECTIVE, 0, 1), "zero"),)) if which == "ablation" else \
        Interventions(knockout=(Edge(EFFECTIVE, (3,), (1,)),))
    with pytest.raises(InputError) as info:
        trace_text(loaded, TEXT, interventions=spec)
    said = str(info.value)
    assert "not a softmax" in said and "\n" not in said and said.rstrip().endswith("."), said


def test_value_weighted_attention_leaves_effective_attention_out_and_says_so(loaded, monkeypatch):
    from attnscope.engine.adapters import adapter_for
    from attnscope.engine.traces.tracing import trace_text

    # Qwen3.5 gates its softmax heads before the output projection, so no projection reads them
    # (a refusal of its own); a stand-in W_O, ungated, lets the Run reach the kinds it weighs.
    config = loaded.model.config.get_text_config()
    w_out = torch.ones(config.hidden_size, config.num_attention_heads * config.head_dim)
    monkeypatch.setattr(type(adapter_for(loaded)), "output_projection", lambda self, site: (w_out, None))
    monkeypatch.setattr(type(adapter_for(loaded)), "gated_projection", lambda self, site: None, raising=False)
    trace = trace_text(loaded, TEXT, value_weighted=True)
    assert trace.kinds == [DECODER_SELF]
    assert any("softmax layers only" in n for n in trace.notes)


def test_the_neuron_view_refuses_effective_attention_in_one_sentence(loaded):
    from attnscope.engine.inspection import query_keys
    from attnscope.engine.traces.tracing import trace_text

    with pytest.raises(ValueError, match="not a softmax"):
        query_keys(trace_text(loaded, TEXT), EFFECTIVE, 0, 0)


def test_a_saved_recording_leaves_effective_attention_out_and_says_so(loaded, tmp_path):
    from attnscope.engine.traces import load_recording, save_recording
    from attnscope.engine.traces.tracing import trace_text

    trace = trace_text(loaded, TEXT)
    back = load_recording(save_recording(trace, tmp_path / "r.recording.safetensors"))
    assert back.kinds == [DECODER_SELF]
    assert any("Effective attention is not in this recording" in n for n in back.notes)
    np.testing.assert_allclose(reading.layer(back, DECODER_SELF, 0), reading.layer(trace, DECODER_SELF, 0), atol=1e-6)


def test_a_layer_whose_mixing_reaches_no_seam_is_said_by_number(tmp_path):
    """Jamba's Mamba layer runs its scan inline: it is named as not drawn exactly; its softmax layer is drawn."""
    from attnscope.engine.loading.catalog import open_model
    from attnscope.engine.traces.tracing import trace_text

    loaded = open_model(str(build(tmp_path, "jamba", "decoder")), "cpu")
    said = [n for n in loaded.meta["notes"].split(". ") if "cannot be drawn exactly" in n]
    assert len(said) == 1 and said[0].startswith("Layer 0 (JambaMambaDecoderLayer) of 2"), loaded.meta["notes"]
    assert trace_text(loaded, TEXT).kinds == [DECODER_SELF]


def test_a_long_trace_reads_effective_attention_a_block_at_a_time(loaded, monkeypatch):
    """Past one layer at once (LAYER_BYTES lowered here), blocks come from the layer's own function on
    one-hot values of their columns alone: the same cells as the whole layer."""
    import attnscope.engine.traces.recorded as recorded
    from attnscope.engine.traces import reading
    from attnscope.engine.traces.tracing import trace_text

    whole = reading.weights(trace_text(loaded, TEXT), EFFECTIVE)[0]           # (H, T, T) read whole
    monkeypatch.setattr(recorded, "LAYER_BYTES", 64)
    monkeypatch.setattr(recorded.RecordedTrace, "densify", lambda self, *a, **k: self)   # nothing held whole
    trace = trace_text(loaded, TEXT)
    T = trace.shape(EFFECTIVE)[2]
    assert trace.recording.strongest_keys(EFFECTIVE, 0, [0], slice(0, T), 3) is None   # read through blocks
    blocked = trace.block(EFFECTIVE, 0, [0, 2], slice(3, T), slice(1, 9)).cpu().numpy()
    np.testing.assert_allclose(blocked, whole[[0, 2], 3:, 1:9], atol=1e-6)


def test_a_failure_of_effective_attention_never_costs_the_softmax_layers(tmp_path, monkeypatch):
    """A mixing function that cannot be replayed (here: it breaks on one-hot values) is said in one
    sentence at load; the model opens and its softmax layers are drawn."""
    from attnscope.engine.loading.catalog import open_model
    from attnscope.engine.seam import linear_mixing
    from attnscope.engine.traces.tracing import trace_text

    def broken(self, *args, **kwargs):
        raise RuntimeError("no one-hot values here")
    monkeypatch.setattr(linear_mixing.MixingCall, "mixing", broken)
    loaded = open_model(str(build(tmp_path, "qwen3_5_text", "decoder")), "cpu")
    assert "effective attention could not be computed (no one-hot values here)" in loaded.meta["notes"]
    assert "Layer 0 (Qwen3_5DecoderLayer) of 2" in loaded.meta["notes"]
    assert trace_text(loaded, TEXT).kinds == [DECODER_SELF]
