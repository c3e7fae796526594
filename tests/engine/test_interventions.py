"""Interventions at the seam (issue 33): each test would fail on a wrong implementation.

- an empty intervention leaves logits bit-identical;
- zero-ablating a head equals zeroing that head's input columns of the output projection;
- mean ablation puts the head's mean over the text's positions at every position;
- a knocked-out edge reads exactly 0, its row re-sums to 1, and equals a reference run that
  masks that score; the model's output equals a reference that renormalises the weights;
- the logit lens at the last layer is the model's own prediction, and at an earlier layer
  the final norm and unembedding applied to that layer's residual stream;
- on the bundled translator, ablating its strongest cross-attention head changes a translation;
- the CLI (intervene, lens) prints what the engine computes and refuses bad input in one line.
"""
import io
import json
from contextlib import redirect_stdout
from pathlib import Path

import pytest
import torch

from attnscope.engine.adapters import Prepared, adapter_for
from attnscope.engine.decoding.session import decode_all, model_output
from attnscope.engine.interventions import Edge, HeadRef, Interventions, applied
from attnscope.engine.interventions.lens import logit_lens
from attnscope.engine.kinds import CROSS, DECODER_SELF
from attnscope.engine.inputs import Prompt
from attnscope.engine.loading.catalog import open_model
from attnscope.engine.seam import SeamHook, Site, hooks, recording
from attnscope.engine.traces.tracing import trace_text
from tests.helpers.hf_tiny import tiny_folder
from attnscope.engine.decoding.greedy import frame
from attnscope.engine.traces import reading

ROOT = Path(__file__).resolve().parents[2]
TRANSLATOR = str(ROOT / "resources/checkpoints/translator.safetensors")
GPT = str(ROOT / "resources/checkpoints/gpt.safetensors")
HF = ("gpt2", "llama", "gemma2", "t5", "bart")
TEXT = "the big dog sees the small cat ."
TEN = [line.split("\t")[0] for line in (ROOT / "resources/corpora/handwritten_en_de.tsv").read_text().splitlines()[:10]]


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    root = tmp_path_factory.mktemp("interventions-tiny")
    out = {"translator": open_model(TRANSLATOR, "cpu"), "gpt": open_model(GPT, "cpu")}
    out |= {arch: open_model(str(tiny_folder(root, arch)), "cpu") for arch in HF}
    for m in out.values():
        m.model.eval()
    return out


def logits(loaded, spec=None, framed=None):
    adapter = adapter_for(loaded)
    framed = framed or frame(adapter, TEXT)
    with torch.no_grad(), applied(spec):
        return adapter.forward(framed)[0].float()


def kind_of(loaded) -> str:
    return CROSS if loaded.role == "encoder-decoder" else DECODER_SELF


@pytest.mark.parametrize("name", ["translator", "gpt", *HF])
def test_empty_intervention_is_bit_identical(models, name):
    loaded = models[name]
    assert torch.equal(logits(loaded), logits(loaded, Interventions()))
    spec = Interventions().ablate([HeadRef(kind_of(loaded), 0, 1)]).restore([HeadRef(kind_of(loaded), 0, 1)])
    assert spec.empty and torch.equal(logits(loaded), logits(loaded, spec))


def _out_proj(module):
    """(the output projection, True when its weight is stored (in, out) as GPT-2's Conv1D)."""
    for name in ("c_proj", "o_proj", "o", "out_proj", "dense"):
        proj = getattr(module, name, None)
        if proj is not None:
            return proj, type(proj).__name__ == "Conv1D"
    raise AssertionError(f"no output projection on {type(module).__name__}")


@pytest.mark.parametrize("name", ["translator", "gpt", *HF])
def test_zero_ablation_equals_zeroed_output_projection_columns(models, name):
    loaded = models[name]
    site, head = Site(kind_of(loaded), 1), 2
    module = adapter_for(loaded).site_modules()[site]
    proj, transposed = _out_proj(module)
    ablated = logits(loaded, Interventions().ablate([HeadRef(site.kind, site.layer, head)]))
    width = proj.weight.shape[0 if transposed else 1] // module_heads(loaded, site)
    cols = slice(head * width, (head + 1) * width)
    saved = proj.weight.detach().clone()
    with torch.no_grad():
        (proj.weight[cols] if transposed else proj.weight[:, cols]).zero_()
    try:
        reference = logits(loaded)
    finally:
        with torch.no_grad():
            proj.weight.copy_(saved)
    assert (ablated - logits(loaded)).abs().max() > 1e-4          # the head mattered
    torch.testing.assert_close(ablated, reference, atol=1e-5, rtol=0)


def module_heads(loaded, site) -> int:
    adapter = adapter_for(loaded)
    with torch.no_grad(), recording() as rec:
        adapter.forward(frame(adapter, TEXT))
    return rec.calls[site].q.shape[1]


class _Outputs(SeamHook):
    """Keeps the heads' outputs at one site, after every editor before it."""

    def __init__(self, site):
        self.site, self.out = site, None

    def edits(self, site):
        return site == self.site

    def edits_output_only(self, site):
        return True

    def output(self, call, out):
        self.out = out.detach().clone()
        return out


@pytest.mark.parametrize("name", ["gpt", "llama", "t5"])
def test_mean_ablation_puts_the_mean_over_positions(models, name):
    loaded = models[name]
    adapter = adapter_for(loaded)
    framed = frame(adapter, TEXT)
    site, head = Site(DECODER_SELF, 1), 1
    plain, changed = _Outputs(site), _Outputs(site)
    with torch.no_grad():
        with hooks(plain):
            adapter.forward(framed)
        with applied(Interventions().ablate([HeadRef(DECODER_SELF, 1, head)], "mean")) as made, hooks(changed):
            adapter.forward(framed)
    assert made and plain.out.shape[2] > 2
    mean = plain.out[0, head].mean(0)                                   # (Dv,)
    torch.testing.assert_close(changed.out[0, head], mean.expand_as(changed.out[0, head]), atol=1e-6, rtol=0)
    torch.testing.assert_close(changed.out[0, head + 1], plain.out[0, head + 1])   # other heads untouched


class _RenormalisedWeights(SeamHook):
    """A reference for a knockout: the edge's weight set to 0 after the softmax, rows renormalised."""

    def __init__(self, site, q, k):
        self.site, self.q, self.k = site, q, k

    def edits(self, site):
        return site == self.site

    def weights(self, call, w):
        w = w.clone()
        w[..., self.q, self.k] = 0
        return w / w.sum(-1, keepdim=True)


@pytest.mark.parametrize("name", ["gpt", "translator", "llama", "gemma2", "t5"])
def test_knockout_cell_is_zero_rows_renormalise_and_equal_a_masked_reference(models, name):
    loaded = models[name]
    kind = kind_of(loaded)
    q, k, layer = 3, 1, 1
    spec = Interventions().block(Edge(kind, (q,), (k,), (layer,)))
    base, knocked = trace_text(loaded, TEXT), trace_text(loaded, TEXT, interventions=spec)
    w = reading.layer(knocked, kind, layer)                                          # (H, Tq, Tk)
    assert (w[:, q, k] == 0).all()
    rows = w.sum(-1)
    assert abs(rows[rows > 0] - 1).max() < 1e-5
    # reference: the unchanged layer's scores with that cell masked (the layers before are unchanged)
    adapter = adapter_for(loaded)
    with torch.no_grad(), recording() as rec:
        adapter.forward(frame(adapter, TEXT))
    s = rec.calls[Site(kind, layer)].scores()                               # (H, Tq, Tk)
    s[:, q, k] = float("-inf")
    torch.testing.assert_close(torch.from_numpy(w), torch.nan_to_num(torch.softmax(s, -1)), atol=1e-5, rtol=0)
    assert abs(reading.layer(base, kind, layer)[:, q, k]).max() > 0                  # the edge carried weight before
    framed = frame(adapter, TEXT)
    with torch.no_grad(), hooks(_RenormalisedWeights(Site(kind, layer), q, k)):
        reference = adapter.forward(framed)[0].float()
    torch.testing.assert_close(logits(loaded, spec, framed), reference, atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("name", ["translator", "gpt", *HF])
def test_lens_last_layer_is_the_models_prediction(models, name):
    loaded = models[name]
    lens = logit_lens(loaded, TEXT)
    adapter = adapter_for(loaded)
    probs = torch.softmax(logits(loaded, framed=frame(adapter, TEXT)), -1)     # (T, V)
    top = probs.topk(5, -1)
    assert lens.n_layers == len(adapter.residual_blocks()) and len(lens.token_ids) == probs.shape[0]
    torch.testing.assert_close(torch.from_numpy(lens.top_p[-1]), top.values, atol=1e-5, rtol=0)
    assert (lens.top_ids[-1] == top.indices.numpy()).all()
    assert abs(lens.final_p[-1] - probs.max(-1).values.numpy()).max() < 1e-5


def test_lens_earlier_layer_is_final_norm_and_unembedding_of_that_layer(models):
    gpt = models["gpt"]
    model, adapter = gpt.model, adapter_for(gpt)
    framed = frame(adapter, TEXT)
    kept = []
    handle = model.transformer.h[1].register_forward_hook(lambda _m, _i, out: kept.append(out[0] if isinstance(out, tuple) else out))
    try:
        lens = logit_lens(gpt, TEXT)
    finally:
        handle.remove()
    with torch.no_grad():
        expected = torch.softmax(model.lm_head(model.transformer.ln_f(kept[0]))[0], -1).topk(5, -1)
    torch.testing.assert_close(torch.from_numpy(lens.top_p[1]), expected.values, atol=1e-5, rtol=0)
    assert lens.n_layers == model.config.n_layer and not (lens.top_ids[1] == lens.top_ids[-1]).all()


@pytest.mark.parametrize("name", ["translator", "gpt", *HF])
def test_lens_computes_each_block_once_and_reads_each_layer_as_the_models_own_forward(models, name, monkeypatch):
    """Walked as a user: the Lens ran the whole model again for every layer (16 forwards, 175 s
    at 4k tokens of a 236 M Llama on a CPU). Each block is computed once; a layer is read
    through the final norm and unembedding where they are all that follows the last block, else
    by the model's own forward with every block handing back its recorded output, the last one
    this layer's stream. Either way the numbers are those of the model's whole forward with that
    layer's stream in place of the last block's output (the old way, computed here)."""
    loaded = models[name]
    adapter = adapter_for(loaded)
    blocks = adapter.residual_blocks()
    framed = frame(adapter, TEXT)
    streams = []
    hooks_ = [b.register_forward_hook(lambda _m, _i, out: streams.append(out[0] if isinstance(out, tuple) else out))
              for b in blocks]
    with torch.no_grad():
        adapter.forward(framed)
    for h in hooks_:
        h.remove()
    expected = []
    for hidden in streams[:-1]:                                      # the old way: the whole forward again
        swap = blocks[-1].register_forward_hook(
            lambda _m, _i, out, h=hidden: (h, *out[1:]) if isinstance(out, tuple) else h)
        with torch.no_grad():
            expected.append(torch.softmax(adapter.forward(framed)[0].float(), -1).topk(5, -1))
        swap.remove()
    adapter.final_norm()                                             # found once per model, by a forward of its own
    prepared = Prepared(Prompt.of(TEXT), adapter, framed)           # its own greedy output: framed above, once
    block_class = type(blocks[0])
    computed = []
    real = block_class.forward
    mine = {id(b) for b in blocks}                                   # T5's encoder blocks are T5Blocks too
    monkeypatch.setattr(block_class, "forward",
                        lambda self, *a, **k: computed.append(id(self) in mine) or real(self, *a, **k))
    lens = logit_lens(loaded, prepared)
    assert sum(computed) == len(blocks)                              # each block once, whatever follows it
    for layer, top in enumerate(expected):
        assert (lens.top_ids[layer] == top.indices.numpy()).all(), layer
        torch.testing.assert_close(torch.from_numpy(lens.top_p[layer]), top.values, atol=1e-6, rtol=0)


def test_gemma2_lens_applies_the_final_softcap(models):
    gemma = models["gemma2"]
    assert gemma.model.config.final_logit_softcapping
    gemma.model.config.final_logit_softcapping, cap = None, gemma.model.config.final_logit_softcapping
    try:
        uncapped = logit_lens(gemma, TEXT)
    finally:
        gemma.model.config.final_logit_softcapping = cap
    capped = logit_lens(gemma, TEXT)
    assert abs(capped.top_p - uncapped.top_p).max() > 1e-4                  # the cap is part of the lens


def strongest_cross_head(translator) -> HeadRef:
    """The cross-attention head whose zero ablation flips the most next-token predictions over
    the ten texts, read teacher-forced on the model's own translations (ties: larger change)."""
    adapter = adapter_for(translator)
    framed = [frame(adapter, t) for t in TEN]
    best = None
    n_layers = translator.model.config.n_decoder_layers
    for layer in range(n_layers):
        for head in range(translator.model.config.n_head):
            ref = HeadRef(CROSS, layer, head)
            flips, change = 0, 0.0
            for f in framed:
                before, after = logits(translator, None, f), logits(translator, Interventions().ablate([ref]), f)
                flips += int((before.argmax(-1) != after.argmax(-1)).sum())
                change += float((before - after).abs().max())
            best = max(best or (flips, change, ref), (flips, change, ref))
    return best[2]


def test_ablating_the_translators_strongest_cross_head_changes_a_translation(models):
    translator = models["translator"]
    ref = strongest_cross_head(translator)
    spec = Interventions().ablate([ref])
    changed = [t for t in TEN if model_output(translator, t, interventions=spec) != model_output(translator, t)]
    assert changed, ref
    steps = decode_all(translator, changed[0], interventions=spec).steps
    assert all(s.diff is not None and s.diff.kl >= 0 for s in steps)
    assert any(s.diff.kl > 1e-3 for s in steps)


def test_decoding_diff_before_is_the_plain_models_probabilities(models):
    gpt = models["gpt"]
    spec = Interventions().ablate([HeadRef(DECODER_SELF, 2, 1), HeadRef(DECODER_SELF, 3, 3)])
    plain = decode_all(gpt, "To be, or not to be,")
    changed = decode_all(gpt, "To be, or not to be,", interventions=spec)
    assert plain.text != changed.text
    first = changed.steps[0].diff
    before = dict(plain.steps[0].candidates)
    for token, p_before, p_after in first.rows:
        if token in before:
            assert abs(p_before - before[token]) < 1e-5
    assert dict((t, a) for t, _, a in first.rows)[changed.steps[0].token] == pytest.approx(changed.steps[0].probability, abs=1e-6)


def run_cli(*argv) -> tuple[int, dict | None]:
    from attnscope.cli.entry import main

    out = io.StringIO()
    with redirect_stdout(out):
        code = main(list(argv))
    return code, json.loads(out.getvalue()) if code == 0 else None


def test_cli_intervene_and_lens(models):
    code, empty = run_cli("intervene", GPT, "--text", "To be, or not to be", "--json")
    assert code == 0 and empty["logits_max_abs_change"] == 0 and empty["kl"] == 0
    assert empty["next"]["before"] == empty["next"]["after"] and len(empty["next"]["before"]) == 10
    code, out = run_cli("intervene", GPT, "--text", "To be, or not to be", "--ablate", "2.1", "--mean-ablate", "3.3",
                        "--knockout", "5:0-1@all", "--json")
    gpt = models["gpt"]
    ids = frame(adapter_for(gpt), "To be, or not to be").target_ids
    assert code == 0 and out["token_ids"] == ids and out["kl"] > 0
    spec = (Interventions().ablate([HeadRef(DECODER_SELF, 2, 1)]).ablate([HeadRef(DECODER_SELF, 3, 3)], "mean")
            .block(Edge(DECODER_SELF, (5,), (0, 1), None)))
    after = torch.softmax(logits(gpt, spec, frame(adapter_for(gpt), "To be, or not to be"))[-1], -1)
    assert out["next"]["after"][0][0] == int(after.argmax()) and abs(out["next"]["after"][0][1] - float(after.max())) < 1e-5
    code, lens = run_cli("lens", TRANSLATOR, "--text", "the dog sleeps .", "--json")
    assert code == 0 and len(lens["layers"]) == models["translator"].model.config.n_decoder_layers
    translator = models["translator"]
    final = torch.softmax(logits(translator, framed=frame(adapter_for(translator), "the dog sleeps .")), -1)
    assert [pos[0][0] for pos in lens["layers"][-1]["top"]] == final.argmax(-1).tolist()


@pytest.mark.parametrize("argv", [
    ["intervene", GPT, "--text", "to be", "--ablate", "9.0"],          # no such layer
    ["intervene", GPT, "--text", "to be", "--ablate", "1"],            # not L.H
    ["intervene", GPT, "--text", "to be", "--knockout", "1:0"],        # no @LAYERS
    ["intervene", GPT, "--text", "to be", "--knockout", "40:0@all"],   # no such position
    ["intervene", GPT, "--text", "to be", "--ablate", "cross:0.0"],    # the GPT has no cross-attention
    ["intervene", "minilm", "--text", "to be"],                        # an encoder predicts nothing
    ["lens", "minilm", "--text", "to be"],
])
def test_cli_bad_input_is_one_line_and_exit_2(argv, capsys):
    from attnscope.cli.entry import main

    with pytest.raises(SystemExit) as exc:
        code = main(argv)
        raise SystemExit(code)
    assert exc.value.code == 2
    err = capsys.readouterr().err.strip()
    assert err and len(err.splitlines()) == 1


@pytest.mark.parametrize("name", ["translator", "gpt", "random-bert", "gpt2", "llama", "t5", "bart", "minilm"])
def test_value_weighted_vectors_sum_to_the_attention_output(models, name):
    """sum_j sum_h alpha_ij f_h(x_j) + b_O equals what the output projection wrote (1e-5)."""
    from attnscope.engine.traces.value_weighted import head_vectors

    loaded = models[name] if name in models else open_model(name, "cpu")
    loaded.model.eval()
    adapter = adapter_for(loaded)
    site = next(s for s in adapter.sites() if s.layer == 1)
    w_out, b_out = adapter.output_projection(site)
    proj = next(m for m in loaded.model.modules() if getattr(m, "weight", None) is w_out or
                (getattr(m, "weight", None) is not None and m.weight.dim() == 2 and m.weight.data_ptr() == w_out.data_ptr()))
    written = []
    handle = proj.register_forward_hook(lambda _m, _i, out: written.append(out.detach()))
    try:
        with torch.no_grad(), recording(keep_values=True) as rec:
            adapter.forward(frame(adapter, TEXT))
    finally:
        handle.remove()
    call = rec.calls[site]
    alpha = call.weights()                                                    # (H, Tq, Tk)
    total = sum(alpha[h] @ head_vectors(call, w_out, h) for h in range(alpha.shape[0]))   # (Tq, D)
    if b_out is not None:
        total = total + b_out.float()
    torch.testing.assert_close(total, written[-1][0].float(), atol=1e-5, rtol=1e-5)


def test_value_weighted_trace_rows_are_shares_of_alpha_times_norm(models):
    gpt = models["gpt"]
    plain = trace_text(gpt, TEXT)
    vw = trace_text(gpt, TEXT, value_weighted=True)
    adapter = adapter_for(gpt)
    with torch.no_grad(), recording(keep_values=True) as rec:
        adapter.forward(frame(adapter, TEXT))
    call = rec.calls[Site(DECODER_SELF, 2)]
    from attnscope.engine.traces.value_weighted import value_norms

    expected = reading.layer(plain, DECODER_SELF, 2) * value_norms(call, adapter.output_projection(call.site)[0]).numpy()[:, None]
    expected /= expected.sum(-1, keepdims=True)
    assert abs(reading.layer(vw, DECODER_SELF, 2) - expected).max() < 1e-5
    assert abs(reading.layer(vw, DECODER_SELF, 2) - reading.layer(plain, DECODER_SELF, 2)).max() > 1e-3
    assert vw.kinds == plain.kinds and vw.target_tokens == plain.target_tokens


def test_decoding_takes_a_mean_ablated_heads_mean_over_the_whole_text(models):
    """The translator's decoding starts from a lone [BOS]; the mean is still over the text's
    positions (the source, and the plain model's own translation on the decoder side)."""
    from attnscope.engine.decoding.session import DecodeSession
    from attnscope.engine.interventions.ablation import HeadAblation

    translator = models["translator"]
    adapter = adapter_for(translator)
    site, head = Site(DECODER_SELF, 0), 2
    plain = _Outputs(site)
    framed = frame(adapter, TEN[0])
    with torch.no_grad(), hooks(plain):
        adapter.forward(framed)
    session = DecodeSession(translator, TEN[0], interventions=Interventions().ablate([HeadRef(DECODER_SELF, 0, head)], "mean"))
    ablation = next(h for h in session.changes if isinstance(h, HeadAblation))
    assert plain.out.shape[2] == len(framed.target_ids) > 3
    torch.testing.assert_close(ablation.means[(site, head)], plain.out[0, head].mean(0), atol=1e-6, rtol=0)
    steps = list(session.steps())
    assert steps and all(s.diff is not None for s in steps)


def test_on_the_translator_the_effect_is_read_where_the_translation_first_changes(models):
    """Issue 40: the panel compared the token after the whole translation (+0.0 %, KL 0) while
    the ablation changed a word mid-sentence; the effect is read at the first step whose choice
    the change alters."""
    from attnscope.engine.interventions.effect import intervention_effect

    translator = models["translator"]
    spec = Interventions().ablate([strongest_cross_head(translator)])
    text = next(t for t in TEN if model_output(translator, t, interventions=spec) != model_output(translator, t))
    result = intervention_effect(translator, text, spec)
    framed = frame(adapter_for(translator), text)
    before, after = logits(translator, framed=framed), logits(translator, spec, framed=framed)
    changed = (before.argmax(-1) != after.argmax(-1)).nonzero().flatten().tolist()
    assert changed and result.position == changed[0] < len(result.token_ids) - 1
    assert result.predicted == int(before[changed[0]].argmax()) and result.kl > 1e-3
    assert result.relative_change < 0 and result.as_json()["position"] == changed[0]
    gpt_effect = intervention_effect(models["gpt"], TEXT, spec=Interventions().ablate([HeadRef(DECODER_SELF, 0, 0)]))
    assert gpt_effect.position == len(gpt_effect.token_ids) - 1    # a decoder: the token after the text


def test_an_empty_interventions_is_false_and_a_change_is_true():
    """The window passes its Interventions to every Run, empty most of the time: ``if spec:``
    reads "something to change", as a list does (the dense fallback refused an empty one)."""
    from attnscope.engine.interventions import Interventions
    from attnscope.engine.interventions.refs import Edge, HeadRef

    empty = Interventions()
    assert not empty and empty.empty
    assert Interventions().ablate([HeadRef("decoder self", 0, 1)])
    assert Interventions().block(Edge("decoder self", (3,), (1,)))
