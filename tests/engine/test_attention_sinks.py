"""Attention sinks (issue 45, item 6): gpt-oss and its kin give each head a learned logit
(``s_aux``) that joins every row's softmax denominator and reads no value, so its rows sum to
less than 1. The seam applies it exactly: the model's logits, the recorded weights (rows
below 1, as eager's), a saved recording, decoding, ablation and knockout all equal
transformers' own eager numbers on tiny random models whose sinks are drawn from N(0, 2).
Every family of the installed transformers that passes sinks is either shown exactly or
refused in one sentence; a keyword the seam does not understand is refused naming it; and a
model whose seam output differs from its eager forward is refused when it is opened.
"""
import ast
import json
from pathlib import Path

import numpy as np
import pytest
import torch

from attnscope.engine.decoding.session import DecodeSession, DecodeSettings
from attnscope.engine.interventions import Edge, HeadRef, Interventions, applied
from attnscope.engine.kinds import DECODER_SELF
from attnscope.engine.loading.catalog import open_model
from attnscope.engine.errors import HFModelError
from attnscope.engine.seam import AttentionCall, Site, attend, recording
from attnscope.engine.traces.recorded import RecordedTrace
from attnscope.engine.traces.recording_file import load_recording, save_recording
from attnscope.engine.traces.tracing import trace_text
from tests.helpers.hf_sinks import sink_folder
from tests.helpers.hf_tiny import tiny_folder
from attnscope.engine.traces import reading

TEXT = "the big dog sees the small cat and the cat sees the dog"     # longer than the 4-token window

# Every family of the installed transformers whose attention is handed sinks, and what attnscope
# does with it: shown exactly, or refused (with the words the refusal says).
SHOWN = ("gpt_oss", "granite_swa", "granitemoe_swa", "flint", "mimo_v2_flash", "deepseek_v4", "hy_v4")
REFUSED = {"hy_v4_vl": "not a text transformer", "openai_privacy_filter": "not a text transformer",
           "inkling2": "not a text transformer", "inkling2_loop": "not a text transformer"}


# Granite's eager attention returns the softmax over the keys alone and scales its output by
# sigmoid(lse - sink) after: the same output, but weights summing to 1 that are not the ones used.
BEFORE_THE_SINK = ("granite_swa", "granitemoe_swa")


@pytest.fixture(scope="module")
def root(tmp_path_factory):
    return tmp_path_factory.mktemp("sinks")


@pytest.fixture(scope="module")
def models(root):
    return {f: open_model(str(sink_folder(root, f)), "cpu") for f in SHOWN}


@pytest.fixture(scope="module")
def eager(root):
    """transformers' own reference: each folder loaded with its eager attention, float32."""
    from transformers import AutoModelForCausalLM

    return {f: AutoModelForCausalLM.from_pretrained(sink_folder(root, f), attn_implementation="eager",
                                                    dtype=torch.float32).eval() for f in SHOWN}


def eager_run(reference, loaded, text=TEXT):
    enc = loaded.tokenizer(text, return_tensors="pt")
    with torch.no_grad():
        out = reference(**enc, output_attentions=True)
    return enc, out.logits, torch.stack([a[0] for a in out.attentions]).numpy()     # (L, H, T, T)


def one_sentence(message: str) -> bool:
    return "\n" not in message and message.rstrip().endswith(".") and "Traceback" not in message


# ---- the numbers ------------------------------------------------------------------------------
@pytest.mark.parametrize("family", SHOWN)
def test_logits_and_recorded_weights_equal_eager_with_rows_below_one(models, eager, family):
    loaded = models[family]
    enc, logits, expected = eager_run(eager[family], loaded)
    with torch.no_grad():
        ours = loaded.model(**enc).logits
    torch.testing.assert_close(ours, logits, atol=1e-5, rtol=0)
    trace = trace_text(loaded, TEXT)
    w = reading.weights(trace, DECODER_SELF)                                          # (L, H, T, T)
    assert w.sum(-1).min() < 0.9 and w.sum(-1).max() < 1.0 + 1e-6           # the sinks take their share
    if family in BEFORE_THE_SINK:      # eager scales its output, not its weights: theirs are ours, renormalised
        np.testing.assert_allclose(w / w.sum(-1, keepdims=True), expected, atol=1e-5)
    else:
        np.testing.assert_allclose(w, expected, atol=1e-5)


def test_gpt_oss_was_wrong_without_the_sinks(models, eager, monkeypatch):
    """The issue's numbers: with the sinks dropped the logits move and every row sums to 1."""
    import attnscope.engine.seam.hf_attention as hf

    loaded = models["gpt_oss"]
    enc, logits, expected = eager_run(eager["gpt_oss"], loaded)
    monkeypatch.setattr(hf, "_sink", lambda module, s_aux, heads, queries: None)
    with torch.no_grad():
        dropped = loaded.model(**enc).logits
    assert (dropped - logits).abs().max() > 1e-2
    assert np.abs(reading.weights(trace_text(loaded, TEXT), DECODER_SELF).sum(-1) - 1).max() < 1e-5
    assert expected.sum(-1).min() < 0.5


def test_every_way_a_long_trace_reads_a_head_keeps_the_sinks(models, eager):
    """A trace not computed whole: tiles from the kernel's log-sum-exp (the full layer), from the
    weights of whole rows (the sliding one, whose mask no log-sum-exp kernel takes), from the
    log-sum-exp the overview keeps, and the strongest keys with their leftover."""
    loaded = models["gpt_oss"]
    _, _, expected = eager_run(eager["gpt_oss"], loaded)
    with torch.no_grad(), recording(lse=True) as rec:
        loaded.model(**loaded.tokenizer(TEXT, return_tensors="pt"))
    calls = {DECODER_SELF: rec.layers(DECODER_SELF)}
    assert calls[DECODER_SELF][0].lse is None and calls[DECODER_SELF][1].lse is not None
    tokens = [str(i) for i in range(expected.shape[-1])]

    def fresh():
        return RecordedTrace(calls, model_name="t", family="hf-decoder", source_tokens=[], target_tokens=tokens)
    trace = fresh()
    for layer in range(2):
        for head in range(4):
            np.testing.assert_allclose(reading.tile(trace, DECODER_SELF, layer, head, slice(2, 9), slice(0, 7)),
                                       expected[layer, head, 2:9, 0:7], atol=1e-5)
    trace = fresh()
    thumbs = reading.thumbnails(trace, DECODER_SELF, 4, "mean")
    assert thumbs.pooled.shape[:2] == (2, 4)
    np.testing.assert_allclose(reading.row(trace, DECODER_SELF, 0, 3, 6), expected[0, 3, 6], atol=1e-5)
    keys, weights, leftover = fresh().strongest_keys(DECODER_SELF, 0, [0, 1, 2, 3], slice(0, len(tokens)), 3)
    np.testing.assert_allclose(weights.sum(-1) + leftover, expected[0].sum(-1), atol=1e-5)
    np.testing.assert_allclose(weights, np.take_along_axis(expected[0], keys, -1), atol=1e-5)


def test_the_neuron_view_keeps_the_sink(models):
    from attnscope.engine.inspection.neurons import query_keys

    trace = trace_text(models["gpt_oss"], TEXT)
    for layer in range(2):
        view = query_keys(trace, DECODER_SELF, layer, 2)
        assert "sink" in view.note
        rows = np.stack([view.row(i)["weights"] for i in range(trace.shape(DECODER_SELF)[2])])
        np.testing.assert_allclose(rows, reading.layer(trace, DECODER_SELF, layer)[2], atol=1e-5)


@pytest.mark.parametrize("family", ["gpt_oss", "mimo_v2_flash"])
def test_greedy_steps_equal_generate_and_their_rows_a_full_recompute(models, eager, family):
    loaded, model = models[family], eager[family]
    session = DecodeSession(loaded, TEXT, DecodeSettings(max_new_tokens=4))
    steps = list(session.steps())
    ours = steps[-1].output_ids
    enc = loaded.tokenizer(TEXT, return_tensors="pt")
    with torch.no_grad():
        generated = model.generate(**enc, max_new_tokens=4, do_sample=False, num_beams=1)[0].tolist()
    assert ours == generated[enc["input_ids"].shape[1]:][:len(ours)]
    prefix = session.stepper.prompt_ids
    for i, step in enumerate(steps):
        with torch.no_grad():
            out = model(input_ids=torch.tensor([prefix + ours[:i]]), output_attentions=True)
        np.testing.assert_allclose(step.self_rows, torch.stack([a[0, :, -1] for a in out.attentions]).numpy(),
                                   atol=1e-5)


@pytest.mark.parametrize("per", ["head", "query"])
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
@pytest.mark.parametrize("case", ["causal", "window", "padding and bias", "softcap"])
def test_each_way_the_seam_computes_a_call_applies_the_sink(case, dtype, per, tmp_path):
    """The fused kernel rescaled by its log-sum-exp (a plain causal float32 call on the CPU), the
    sink as one more key (a mask, or half precision), the written-out softmax (softcap), each
    against softmax([scores, sink])[:-1] @ v in float64; a row that sees no key reads 0. A sink
    is one logit per head (gpt-oss) or one per query (Inkling 2 projects it from the token); a
    recorded trace's tiles and row blocks keep it."""
    from attnscope.engine.traces import reading

    torch.manual_seed(1)
    b, hq, hkv, t, d = 2, 4, 2, 7, 8
    q, k, v = (torch.randn(b, h, t, d) for h in (hq, hkv, hkv))
    sink = torch.randn(hq) * 2 if per == "head" else torch.randn(b, hq, t) * 2
    mask = bias = None
    allowed = torch.ones(t, t, dtype=torch.bool).tril()                             # (T, T)
    if case == "window":
        allowed &= ~torch.ones(t, t, dtype=torch.bool).tril(-3)
        mask = allowed[None, None]
    if case == "padding and bias":
        allowed = allowed[None].repeat(b, 1, 1)
        allowed[1, :, :2] = False                                                   # example 1: two pads on the left
        mask = torch.zeros(b, 1, t, t).masked_fill(~allowed[:, None], torch.finfo(torch.float32).min)
        bias = torch.randn(1, hq, t, t)
    call = AttentionCall(Site(DECODER_SELF, 0), q.to(dtype), k.to(dtype), v.to(dtype), mask=mask, bias=bias,
                         scale=d ** -0.5, causal=case in ("causal", "softcap"), sink=sink,
                         softcap=2.0 if case == "softcap" else None)
    out = attend(call).double()
    s = (q.double() @ k.double().repeat_interleave(2, 1).transpose(-1, -2)) * d ** -0.5
    if case == "softcap":
        s = 2.0 * torch.tanh(s / 2.0)
    if bias is not None:
        s = s + bias.double()
    s = s.masked_fill(~(allowed if allowed.dim() == 2 else allowed[:, None]), float("-inf"))
    column = sink.double().view(1, hq, 1, 1) if per == "head" else sink.double()[..., None]   # (B|1, Hq, T|1, 1)
    with_sink = torch.cat([s, column.expand(b, hq, t, 1)], -1)
    w = torch.softmax(with_sink, -1)[..., :-1]
    expected = w @ v.double().repeat_interleave(2, 1)
    tol = 1e-5 if dtype == torch.float32 else 3e-2
    torch.testing.assert_close(out, expected, atol=tol, rtol=0)
    torch.testing.assert_close(call.weights(None).double(), w, atol=tol, rtol=0)
    if case == "padding and bias":
        assert (out[1, :, :2] == 0).all()                                          # the pads' rows see no key
    assert (call.lse is not None) == (case == "causal" and dtype == torch.float32)
    trace = RecordedTrace({DECODER_SELF: [call.detached()]}, model_name="t", family="hf-decoder", source_tokens=[],
                          target_tokens=[str(i) for i in range(t)], batch_index=1)
    np.testing.assert_allclose(reading.tile(trace, DECODER_SELF, 0, 3, slice(2, 6), slice(0, 5)),
                               w[1, 3, 2:6, :5].numpy(), atol=tol)
    for r0, block in reading.row_blocks(trace, DECODER_SELF, 0, step=3):                # (H, r, Tk)
        np.testing.assert_allclose(block.double().numpy(), w[1, :, r0:r0 + block.shape[1]].numpy(), atol=tol)
    if case == "padding and bias" and dtype == torch.float32:                      # a saved recording keeps it
        again = load_recording(save_recording(trace, tmp_path / "sinks"))
        np.testing.assert_allclose(reading.weights(again, DECODER_SELF)[0], w[1].numpy(), atol=tol)


def test_a_sink_logit_per_query_is_kept_as_one_per_query():
    from attnscope.engine.seam.hf_attention import _sink

    varying = torch.randn(1, 4, 5, 1)
    assert _sink(None, varying, 4, 5).shape == (1, 4, 5)                          # Inkling 2: per query
    assert _sink(None, varying[:, :, :1].expand(1, 4, 5, 1), 4, 5).shape == (4,)   # the same in every row: per head


# ---- what a Run keeps and changes -------------------------------------------------------------
def test_a_saved_recording_keeps_the_sinks_and_an_older_one_still_opens(models, eager, root, tmp_path):
    from safetensors import safe_open

    loaded = models["gpt_oss"]
    _, _, expected = eager_run(eager["gpt_oss"], loaded)
    path = save_recording(trace_text(loaded, TEXT), tmp_path / "oss")
    with safe_open(str(path), framework="pt") as f:
        assert json.loads(f.metadata()["attnscope"])["version"] == 2 and f"{DECODER_SELF}/0/sink" in set(f.keys())
    back = load_recording(path)
    assert back.calls[DECODER_SELF][1].sink is not None
    np.testing.assert_allclose(reading.weights(back, DECODER_SELF), expected, atol=1e-5)
    plain = save_recording(trace_text(open_model(str(tiny_folder(root, "llama")), "cpu"), TEXT), tmp_path / "llama")
    with safe_open(str(plain), framework="pt") as f:
        assert json.loads(f.metadata()["attnscope"])["version"] == 1     # no sinks: as an older attnscope wrote it
    assert load_recording(plain).calls[DECODER_SELF][0].sink is None


def test_zero_ablation_equals_zeroed_output_projection_columns(models, root):
    """Head 1 of layer 0 switched off at the seam == its slice of o_proj's input zeroed in the
    eager model (the sinks still in every row)."""
    from transformers import AutoModelForCausalLM

    loaded = models["gpt_oss"]
    reference = AutoModelForCausalLM.from_pretrained(sink_folder(root, "gpt_oss"), attn_implementation="eager",
                                                     dtype=torch.float32).eval()
    with torch.no_grad():
        reference.model.layers[0].self_attn.o_proj.weight[:, 8:16] = 0
    enc = loaded.tokenizer(TEXT, return_tensors="pt")
    spec = Interventions().ablate([HeadRef(DECODER_SELF, 0, 1)])
    with torch.no_grad(), applied(spec):
        ours = loaded.model(**enc).logits
    with torch.no_grad():
        torch.testing.assert_close(ours, reference(**enc).logits, atol=1e-5, rtol=0)


def test_knockout_equals_eager_with_that_cell_masked(models, eager):
    """Query 6 -> key 5 blocked in layer 1: the trace's cell is 0, its row renormalises over the
    other keys and the sink (still below 1), and the logits equal eager attention whose mask
    forbids that cell."""
    loaded, reference = models["gpt_oss"], eager["gpt_oss"]
    enc = loaded.tokenizer(TEXT, return_tensors="pt")
    spec = Interventions().block(Edge(DECODER_SELF, (6,), (5,), (1,)))
    knocked = trace_text(loaded, TEXT, interventions=spec)

    def masked(module, args, kwargs):
        mask = kwargs["attention_mask"].clone()
        mask[..., 6, 5] = torch.finfo(mask.dtype).min
        return args, {**kwargs, "attention_mask": mask}
    handle = reference.model.layers[1].self_attn.register_forward_pre_hook(masked, with_kwargs=True)
    try:
        with torch.no_grad():
            out = reference(**enc, output_attentions=True)
    finally:
        handle.remove()
    with torch.no_grad(), applied(spec):
        ours = loaded.model(**enc).logits
    torch.testing.assert_close(ours, out.logits, atol=1e-5, rtol=0)
    w = reading.layer(knocked, DECODER_SELF, 1)                                        # (H, T, T)
    assert (w[:, 6, 5] == 0).all() and w[:, 6].sum(-1).max() < 1.0
    np.testing.assert_allclose(w, out.attentions[1][0].numpy(), atol=1e-5)


# ---- the doors --------------------------------------------------------------------------------
def test_a_keyword_the_seam_does_not_understand_is_refused_naming_it(root, monkeypatch):
    """The seam as it was before it knew sinks: gpt-oss is refused when opened, naming s_aux."""
    import attnscope.engine.seam.hf_attention as hf

    monkeypatch.setattr(hf, "KEYWORDS", {k: v for k, v in hf.KEYWORDS.items() if k != "s_aux"})
    with pytest.raises(HFModelError) as err:
        open_model(str(sink_folder(root, "gpt_oss")), "cpu")
    message = str(err.value)
    assert "s_aux=<tensor (4,)>" in message and "does not understand" in message and one_sentence(message)


def test_a_model_whose_seam_differs_from_eager_is_refused_at_open_with_the_numbers(root, monkeypatch):
    import attnscope.engine.seam.hf_attention as hf

    monkeypatch.setattr(hf, "_sink", lambda module, s_aux, heads, queries: None)       # the sinks dropped again
    with pytest.raises(HFModelError) as err:
        open_model(str(sink_folder(root, "gpt_oss")), "cpu")
    message = str(err.value)
    assert "away from its own eager attention's on the same input" in message and "float32" in message
    assert one_sentence(message)


def test_the_check_at_the_door_passes_leaves_the_seam_on_and_says_when_it_could_not_run(root, monkeypatch):
    from attnscope.engine.seam.hf_attention import NAME

    loaded = open_model(str(sink_folder(root, "gpt_oss")), "cpu")
    assert loaded.model.config._attn_implementation == NAME and not loaded.meta.get("notes")
    import transformers.models.gpt_oss.modeling_gpt_oss as oss

    def broken(*args, **kwargs):
        raise RuntimeError("no eager here")
    monkeypatch.setattr(oss, "eager_attention_forward", broken)
    loaded = open_model(str(sink_folder(root, "gpt_oss")), "cpu")
    assert "not checked against GptOssForCausalLM's eager attention" in loaded.meta["notes"]
    assert "no eager here" in loaded.meta["notes"] and loaded.model.config._attn_implementation == NAME
    trace_text(loaded, TEXT)                                                  # still on the seam


@pytest.mark.parametrize("family", [f for f, why in REFUSED.items() if why == "not a text transformer"])
def test_families_with_sinks_that_are_not_text_transformers_are_refused(tmp_path, family):
    from safetensors.torch import save_file

    folder = tmp_path / family
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps({"model_type": family}))
    save_file({"w": torch.zeros(1)}, str(folder / "model.safetensors"))      # refused before it is read
    with pytest.raises(HFModelError) as err:
        open_model(str(folder), "cpu")
    assert REFUSED[family] in str(err.value) and one_sentence(str(err.value))


def test_every_family_that_passes_sinks_is_covered():
    """Every modeling file of the installed transformers that hands its attention function
    ``s_aux=`` or ``sinks=`` is shown exactly above or refused: a new one fails here until it is."""
    import transformers

    found = set()
    for path in (Path(transformers.__file__).parent / "models").glob("*/modeling_*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call) and any(kw.arg in ("s_aux", "sinks") for kw in node.keywords):
                name = getattr(node.func, "id", getattr(node.func, "attr", ""))
                if "attention" in name or "attn" in name:
                    found.add(path.parent.name)
    assert found == set(SHOWN) | set(REFUSED)


def test_head_statistics_show_the_learned_sink_only_for_a_model_that_has_one(models, root):
    """gpt-oss's rows leave their sink's share of 1: Head statistics shows it, each head's mean
    of what its rows leave. A model without sinks leaves rounding only: that column is nan
    (hidden in the view, as [CLS] is for a text without one), not 0.000 for every head."""
    from attnscope.engine.inspection import trace_head_statistics

    trace = trace_text(models["gpt_oss"], TEXT)
    kind = trace.kinds[0]
    shown = trace_head_statistics(trace, kind)["learned_sink"]                 # (L, H)
    rows = reading.weights(trace, kind).astype(np.float64).sum(-1)           # (L, H, T)
    np.testing.assert_allclose(shown, np.clip(1 - rows, 0, None).mean(-1), atol=1e-5)
    assert (shown > 0).all()
    plain = trace_text(open_model(str(tiny_folder(root, "llama")), "cpu"), TEXT)
    assert np.isnan(trace_head_statistics(plain, plain.kinds[0])["learned_sink"]).all()
