"""Activation patching over prompt pairs (issue 39), against a reference written with plain
PyTorch forward hooks on the models' own modules (names written out here, per model):

- exact patching of every point equals running the corrupted text once per cell with that
  one activation of the clean run put in (1e-5 on the metric), for our GPT, Hugging Face's
  GPT-2 and Llama with grouped-query attention; noising and the log-probability metric too;
- patching the clean run's activations into the clean run changes nothing, bit for bit (a
  batch of one; in batches, to float rounding);
- a batch of one and a batch of many give the same numbers; stop() ends it (RunCancelled);
- bad pairs (lengths, answers, an encoder) are refused in one sentence naming what is wrong;
- interventions (a head zero- or mean-ablated, an edge knocked out) hold in every forward of
  exact patching, attribution patching and direct logit attribution, as in the reference run
  with the same interventions, fresh hooks each forward (issue 45);
- the answers offered for a pair: the likeliest tokens, then an id the user chose whatever its
  rank, each as its own text (its leading space kept, no '##' on the first of a list).
"""
from pathlib import Path

import numpy as np
import pytest
import torch

from attnscope.engine.adapters import adapter_for
from attnscope.engine.experiments.pairs import PromptPair, frame_pair, read_pairs
from attnscope.engine.experiments.patching import exact_patching, run_to_end
from attnscope.engine.experiments.points import LOGPROB, POINTS
from attnscope.engine.inputs import InputError
from attnscope.engine.interventions import Edge, HeadRef, Interventions, applied
from attnscope.engine.kinds import DECODER_SELF
from attnscope.engine.loading.catalog import open_model
from attnscope.engine.loading.demo import random_model
from attnscope.engine.traces.base import RunCancelled
from tests.helpers.hf_tiny import tiny_folder
from attnscope.engine.decoding.greedy import frame

ROOT = Path(__file__).resolve().parents[2]
GPT = str(ROOT / "resources/checkpoints/gpt.safetensors")
TRANSLATOR = str(ROOT / "resources/checkpoints/translator.safetensors")
# Equal lengths in every tokenizer used here (checked by frame_pair in each test).
PAIRS = {"gpt": PromptPair("the king is dead long live the king", "the lord is dead long live the lord",
                           " king", " lord"),
         "gpt2": PromptPair("the big dog sees the small cat", "the small cat sees the big dog", " cat", " dog"),
         "llama": PromptPair("the big dog sees the small cat", "the small cat sees the big dog", " cat", " dog")}


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    """Our GPT and translator, and tiny Hugging Face GPT-2, Llama (GQA), T5 and BART."""
    root = tmp_path_factory.mktemp("patching-tiny")
    out = {"gpt": open_model(GPT, "cpu"), "translator": open_model(TRANSLATOR, "cpu")}
    out |= {arch: open_model(str(tiny_folder(root, arch, seed=3)), "cpu") for arch in ("gpt2", "llama", "t5", "bart")}
    for m in out.values():
        m.model.eval()
    return out


# ---- the reference: forward hooks on named modules, one run per cell -----------------------------
def parts(name, model):
    """(blocks, heads' output projection, attention module, MLP module) per layer, by name."""
    if name == "llama":
        blocks = list(model.model.layers)
        return blocks, [b.self_attn.o_proj for b in blocks], [b.self_attn for b in blocks], [b.mlp for b in blocks]
    blocks = list(model.transformer.h)           # our GPT and GPT-2 share nanoGPT's names
    return blocks, [b.attn.c_proj for b in blocks], [b.attn for b in blocks], [b.mlp for b in blocks]


def seq2seq_parts(name, model):
    """An encoder-decoder's {point: modules by layer}, by name: heads are read at the input of
    each kind's output projection, the decoder's stream at its blocks."""
    if name == "translator":
        enc, dec = list(model.encoder), list(model.decoder)
        self_, cross, enc_self = ([l.self_attn for l in dec], [l.cross_attn for l in dec],
                                  [l.self_attn for l in enc])
        proj = lambda mods: [m.c_proj for m in mods]  # noqa: E731
    elif name == "t5":
        enc, dec = list(model.encoder.block), list(model.decoder.block)
        self_, cross, enc_self = ([b.layer[0].SelfAttention for b in dec], [b.layer[1].EncDecAttention for b in dec],
                                  [b.layer[0].SelfAttention for b in enc])
        proj = lambda mods: [m.o for m in mods]  # noqa: E731
    else:                                         # bart
        enc, dec = list(model.model.encoder.layers), list(model.model.decoder.layers)
        self_, cross, enc_self = ([l.self_attn for l in dec], [l.encoder_attn for l in dec],
                                  [l.self_attn for l in enc])
        proj = lambda mods: [m.out_proj for m in mods]  # noqa: E731
    return {"heads": proj(self_), "cross-heads": proj(cross), "encoder-heads": proj(enc_self), "resid-pre": dec,
            "attn-out": self_}


SEQ2SEQ = ("translator", "t5", "bart")


def module_for(name, model, point, layer):
    side = "in" if point in ("heads", "heads-by-pos", "resid-pre") or "heads" in point else "out"
    if name in SEQ2SEQ:
        return seq2seq_parts(name, model)[point.replace("-by-pos", "")][layer], side
    blocks, proj, attn, mlp = parts(name, model)
    return {"heads": proj, "heads-by-pos": proj, "resid-pre": blocks, "attn-out": attn, "mlp-out": mlp}[point][layer], side


def n_layers(name, model, point):
    if name in SEQ2SEQ:
        return len(seq2seq_parts(name, model)[point.replace("-by-pos", "")])
    return len(parts(name, model)[0])


def first(x):
    return x[0] if isinstance(x, tuple) else x


def run_model(name, model, ids):
    """Last-position logits of a plain forward: ``ids`` a decoder's ids, or (source, target)."""
    if name in SEQ2SEQ:
        src, tgt = (torch.tensor([x]) for x in ids)
        out = model(src, tgt) if name == "translator" else model(input_ids=src, decoder_input_ids=tgt)
    else:
        x = torch.tensor([ids])
        out = model(x) if name == "gpt" else model(input_ids=x)
    return out.logits[0, -1].float()


def fed(name, framed):
    return (framed.source_ids, framed.target_ids) if name in SEQ2SEQ else framed.target_ids


def ref_run(name, loaded, ids, answers, metric="logit_diff", keep=None, put=None, spec=None):
    """One plain forward of ``ids``; ``keep`` [(module, side)] stores those tensors, ``put``
    (module, side, fn) edits one; ``spec``: with those interventions (fresh hooks). Returns
    (metric, kept)."""
    model, kept, handles = loaded.model, {}, []
    for module, side in keep or []:
        if side == "in":
            handles.append(module.register_forward_pre_hook(lambda m, a: kept.__setitem__(id(m), a[0].detach())))
        else:
            handles.append(module.register_forward_hook(lambda m, a, o: kept.__setitem__(id(m), first(o).detach())))
    if put:
        module, side, fn = put
        if side == "in":
            handles.append(module.register_forward_pre_hook(lambda m, a: (fn(a[0]), *a[1:])))
        else:
            handles.append(module.register_forward_hook(
                lambda m, a, o: (fn(o[0]), *o[1:]) if isinstance(o, tuple) else fn(o)))
    try:
        with torch.no_grad(), applied(spec):
            logits = run_model(name, model, ids)
    finally:
        for h in handles:
            h.remove()
    value = logits[answers[0]] - logits[answers[1]] if metric == "logit_diff" else \
        torch.log_softmax(logits, -1)[answers[0]]
    return float(value), kept


def reference(name, loaded, pair, point, noising=False, metric="logit_diff", n_heads=None, spec=None):
    base, source = (pair.clean, pair.corrupt) if noising else (pair.corrupt, pair.clean)
    mods = [module_for(name, loaded.model, point, lay) for lay in range(n_layers(name, loaded.model, point))]
    _, src = ref_run(name, loaded, fed(name, source), pair.answers, metric, keep=mods, spec=spec)
    if n_heads is None:
        n_heads = loaded.model.config.n_head if name == "gpt" else loaded.model.config.num_attention_heads
    tokens = len(base.source_ids if point.startswith("encoder") else base.target_ids)
    out = {}
    for lay, (module, side) in enumerate(mods):
        clean = src[id(module)]                                   # (1, T, D) or merged heads (1, T, H * Dv)
        dv = clean.shape[-1] // n_heads
        by_pos, heads = point.endswith("-by-pos"), "heads" in point
        cells = ([(p, h) for p in range(tokens) for h in range(n_heads)] if by_pos and heads else
                 [(h,) for h in range(n_heads)] if heads else [(p,) for p in range(tokens)])
        for cell in cells:
            def fn(x, cell=cell):
                x = x.clone()
                if heads and not by_pos:
                    x[:, :, cell[0] * dv:(cell[0] + 1) * dv] = clean[:, :, cell[0] * dv:(cell[0] + 1) * dv]
                elif heads:
                    p, h = cell
                    x[:, p, h * dv:(h + 1) * dv] = clean[:, p, h * dv:(h + 1) * dv]
                else:
                    x[:, cell[0]] = clean[:, cell[0]]
                return x
            out[(lay, *cell)] = ref_run(name, loaded, fed(name, base), pair.answers, metric, put=(module, side, fn),
                                        spec=spec)[0]
    return out


def as_cells(array):
    return {idx: float(v) for idx, v in np.ndenumerate(array)}


# ---- exact patching --------------------------------------------------------------------------------
@pytest.mark.parametrize("name", ["gpt", "gpt2", "llama"])
@pytest.mark.parametrize("point", POINTS)
def test_exact_patching_equals_a_forward_hook_reference(models, name, point):
    loaded = models[name]
    pair = frame_pair(loaded, PAIRS[name])
    result = run_to_end(exact_patching(loaded, pair, (point,)))
    ours, ref = as_cells(result.results[point]), reference(name, loaded, pair, point)
    assert ours.keys() == ref.keys()
    np.testing.assert_allclose([ours[k] for k in ref], list(ref.values()), atol=1e-5, rtol=0)
    assert result.clean == pytest.approx(ref_run(name, loaded, fed(name, pair.clean), pair.answers)[0], abs=1e-5)
    assert result.corrupt == pytest.approx(ref_run(name, loaded, fed(name, pair.corrupt), pair.answers)[0], abs=1e-5)


@pytest.mark.parametrize("name", ["gpt", "llama"])
def test_noising_and_the_logprob_metric_equal_the_reference(models, name):
    loaded = models[name]
    pair = frame_pair(loaded, PAIRS[name])
    for point in ("heads", "resid-pre"):
        result = run_to_end(exact_patching(loaded, pair, (point,), noising=True, metric=LOGPROB))
        ref = reference(name, loaded, pair, point, noising=True, metric=LOGPROB)
        np.testing.assert_allclose([as_cells(result.results[point])[k] for k in ref], list(ref.values()), atol=1e-5)


@pytest.mark.parametrize("name", ["gpt", "gpt2", "llama"])
def test_clean_into_clean_changes_nothing_bit_for_bit(models, name):
    loaded = models[name]
    framed = frame_pair(loaded, PAIRS[name])
    same = type(framed)(framed.clean, framed.clean, framed.answers)
    result = run_to_end(exact_patching(loaded, same, POINTS, max_batch=1))
    for point, values in result.results.items():
        assert (values == result.clean).all(), point
    # In batches the rows after the patched layer are computed as one matrix product, whose
    # sums a BLAS may order otherwise than for one row: equal to float rounding.
    batched = run_to_end(exact_patching(loaded, same, POINTS))
    for point, values in batched.results.items():
        np.testing.assert_allclose(values, result.clean, atol=1e-5, rtol=0, err_msg=point)


def test_batches_of_one_and_of_many_agree(models):
    loaded = models["gpt2"]
    pair = frame_pair(loaded, PAIRS["gpt2"])
    one = run_to_end(exact_patching(loaded, pair, ("heads-by-pos",), max_batch=1))
    many = run_to_end(exact_patching(loaded, pair, ("heads-by-pos",)))
    np.testing.assert_allclose(one.results["heads-by-pos"], many.results["heads-by-pos"], atol=1e-5)


def test_progress_comes_with_an_estimate_and_stop_ends_it(models):
    loaded = models["gpt"]
    pair = frame_pair(loaded, PAIRS["gpt"])
    seen = []
    steps = exact_patching(loaded, pair, ("heads-by-pos",), max_batch=8, stop=lambda: len(seen) > 3)
    with pytest.raises(RunCancelled):
        run_to_end(steps, seen.append)
    assert "patched runs in batches of 8" in seen[1].text
    assert seen[1].total == 4 * 8 * 4 and seen[-1].done < seen[1].total


# ---- encoder-decoders: the metric on the decoder's next token after a prefix ------------------
S2S_POINTS = ("heads", "cross-heads", "cross-heads-by-pos", "encoder-heads", "encoder-heads-by-pos", "resid-pre",
              "attn-out")


@pytest.mark.parametrize("name", SEQ2SEQ)
def test_encoder_decoders_patch_every_kind_of_head_as_the_reference(models, name):
    loaded = models[name]
    prefix = "der" if name == "translator" else "the"
    pair = frame_pair(loaded, PromptPair("the dog sees the cat", "the cat sees the dog", "id:5", "id:6"),
                      target=prefix)
    assert pair.clean.target_ids == pair.corrupt.target_ids and len(pair.clean.target_ids) == 2
    result = run_to_end(exact_patching(loaded, pair, S2S_POINTS))
    for point in S2S_POINTS:
        ours = as_cells(result.results[point])
        ref = reference(name, loaded, pair, point, n_heads=result.results["heads"].shape[1])
        assert ours.keys() == ref.keys(), point
        np.testing.assert_allclose([ours[k] for k in ref], list(ref.values()), atol=1e-5, rtol=0, err_msg=point)
    assert result.token_ids["target"] == pair.clean.target_ids and result.token_ids["clean"] == pair.clean.source_ids
    same = type(pair)(pair.clean, pair.clean, pair.answers)
    still = run_to_end(exact_patching(loaded, same, S2S_POINTS, max_batch=1))
    assert all((v == still.clean).all() for v in still.results.values())


def test_an_encoder_decoder_pair_compares_its_sources_and_takes_an_empty_prefix(models):
    loaded = models["translator"]
    with pytest.raises(InputError, match=r"The clean source is \d+ tokens and the corrupted source \d+, first differing at token"):
        frame_pair(loaded, PromptPair("the dog sees the cat .", "the dog sees .", "id:5", "id:6"))
    pair = frame_pair(loaded, PromptPair("the dog sees the cat .", "the cat sees the dog .", "id:5", "id:6"))
    assert len(pair.clean.target_ids) == 1                      # the start token: the first word to come
    from attnscope.engine.experiments.dla import direct_logit_attribution
    with pytest.raises(InputError, match="for an encoder-decoder use exact or attribution"):
        direct_logit_attribution(loaded, pair)


# ---- bad input ---------------------------------------------------------------------------------------
def test_bad_pairs_are_refused_in_one_sentence(models, tmp_path):
    gpt = models["gpt"]
    with pytest.raises(InputError, match=r"clean text is 3 tokens and the corrupted text 4, first differing at token 2 \('king'"):
        frame_pair(gpt, PromptPair("the king is", "the lord is dead", " a", " b"))
    with pytest.raises(InputError, match=r"The answer ' kingdoms and' is \d+ tokens \(.*\), not one"):
        frame_pair(gpt, PromptPair("the king is", "the lord is", " kingdoms and", " b"))
    with pytest.raises(InputError, match="id:N with N from 0 to 1279"):
        frame_pair(gpt, PromptPair("the king is", "the lord is", "id:99999", " b"))
    assert frame_pair(gpt, PromptPair("the king is", "the lord is", "id:7", "id:8")).answers == (7, 8)
    with pytest.raises(InputError, match="no text"):
        frame_pair(gpt, PromptPair("  ", "the lord is", " a", " b"))
    with pytest.raises(InputError, match="is an encoder without a language-model head"):
        frame_pair(random_model("bert"), PromptPair("the dog", "the cat", " a", " b"))
    bad = tmp_path / "pairs.tsv"
    bad.write_text("the king is\tthe lord is\t king\t lord\nthe king\tthe queen\t king\n")
    with pytest.raises(InputError, match=r"pairs.tsv, line 2: expected 'clean<TAB>corrupt<TAB>answer<TAB>wrong"):
        read_pairs(bad)
    good = tmp_path / "good.tsv"
    good.write_text("the king is\tthe lord is\t king\t lord\n\n")
    assert read_pairs(good) == [PromptPair("the king is", "the lord is", " king", " lord")]


# ---- attribution patching and direct logit attribution ------------------------------------------------
def ref_attribution(name, loaded, pair, point):
    """(source - base) . d metric / d activation, the gradient by autograd at one point at a time
    (the activation made a leaf there), the activations read by forward hooks on named modules."""
    base_ids, src_ids = pair.corrupt.target_ids, pair.clean.target_ids
    layers = n_layers(name, loaded.model, point)
    mods = [module_for(name, loaded.model, point, lay) for lay in range(layers)]
    base_metric, base = ref_run(name, loaded, base_ids, pair.answers, keep=mods)
    _, src = ref_run(name, loaded, src_ids, pair.answers, keep=mods)
    n_heads = loaded.model.config.n_head if name == "gpt" else loaded.model.config.num_attention_heads
    out = []
    for module, side in mods:
        leaf = {}

        def make_leaf(x):
            leaf["x"] = x.detach().requires_grad_()
            return leaf["x"]
        with torch.enable_grad():
            hook = (module.register_forward_pre_hook(lambda m, a: (make_leaf(a[0]), *a[1:])) if side == "in" else
                    module.register_forward_hook(lambda m, a, o: (make_leaf(o[0]), *o[1:]) if isinstance(o, tuple)
                                                 else make_leaf(o)))
            try:
                x = torch.tensor([base_ids])
                logits = (loaded.model(x) if name == "gpt" else loaded.model(input_ids=x)).logits[0, -1]
                (logits[pair.answers[0]] - logits[pair.answers[1]]).backward()
            finally:
                hook.remove()
        change = ((src[id(module)] - base[id(module)]) * leaf["x"].grad)[0]        # (T, D) or (T, H * Dv)
        if point == "heads":
            out.append(change.view(change.shape[0], n_heads, -1).sum(dim=(0, 2)))
        elif point == "heads-by-pos":
            out.append(change.view(change.shape[0], n_heads, -1).sum(dim=2))
        else:
            out.append(change.sum(dim=1))
    return base_metric + torch.stack(out).double().numpy()


@pytest.mark.parametrize("name", ["gpt", "gpt2", "llama"])
def test_attribution_patching_equals_its_formula_by_autograd(models, name):
    from attnscope.engine.experiments.attribution import agreement, attribution_patching

    loaded = models[name]
    pair = frame_pair(loaded, PAIRS[name])
    result = run_to_end(attribution_patching(loaded, pair, POINTS))
    for point in POINTS:
        np.testing.assert_allclose(result.results[point], ref_attribution(name, loaded, pair, point),
                                   atol=1e-4, rtol=1e-4, err_msg=point)
    assert result.method == "attribution"
    exact = run_to_end(exact_patching(loaded, pair, ("heads", "resid-pre")))
    r = agreement(exact, result)
    assert set(r) == {"heads", "resid-pre"} and all(-1 <= v <= 1 for v in r.values())


@pytest.mark.parametrize("name", ["gpt", "gpt2", "llama"])
def test_direct_logit_attribution_sums_to_the_logit_difference(models, name):
    from attnscope.engine.experiments.dla import direct_logit_attribution

    loaded = models[name]
    pair = frame_pair(loaded, PAIRS[name])
    dla = direct_logit_attribution(loaded, pair)
    total = dla.results["heads"].sum() + dla.results["mlp"].sum() + dla.results["embed"] + dla.results["bias"]
    assert total == pytest.approx(dla.clean, abs=1e-4)
    assert dla.clean == pytest.approx(ref_run(name, loaded, pair.clean.target_ids, pair.answers)[0], abs=1e-5)
    assert np.abs(dla.results["heads"]).max() > 0


def test_a_heads_share_is_its_output_through_the_final_layernorm_onto_the_answers(models):
    """Our GPT by hand: head h's output through its W_O slice, centred, divided by the run's
    sigma of the final residual stream, times ln_f's gain, onto W_U[a] - W_U[b]."""
    from attnscope.engine.experiments.dla import direct_logit_attribution

    loaded = models["gpt"]
    pair = frame_pair(loaded, PAIRS["gpt"])
    model = loaded.model
    blocks, proj, _, _ = parts("gpt", model)
    mods = [(p, "in") for p in proj] + [(model.transformer.ln_f, "in")]
    _, kept = ref_run("gpt", loaded, pair.clean.target_ids, pair.answers, keep=mods)
    x = kept[id(model.transformer.ln_f)][0, -1]
    sigma = torch.sqrt(x.var(unbiased=False) + model.transformer.ln_f.eps)
    a, b = pair.answers
    direction = (model.lm_head.weight[a] - model.lm_head.weight[b]).detach()
    dla = direct_logit_attribution(loaded, pair)
    dv = model.config.n_embd // model.config.n_head
    for layer in (0, 3):
        for h in (1, 2):
            merged = kept[id(proj[layer])][0, -1]
            c = merged[h * dv:(h + 1) * dv] @ proj[layer].weight[:, h * dv:(h + 1) * dv].T
            share = ((c - c.mean()) / sigma * model.transformer.ln_f.weight) @ direction
            assert dla.results["heads"][layer, h] == pytest.approx(float(share.detach()), abs=1e-5)


# ---- interventions hold in every forward (issue 45: patching ignored a switched-off head) --------------
OFF = {"zero": Interventions().ablate([HeadRef(DECODER_SELF, 1, 2), HeadRef(DECODER_SELF, 3, 3)]),
       "mean": Interventions().ablate([HeadRef(DECODER_SELF, 1, 2)], "mean"),
       "knockout": Interventions().block(Edge(DECODER_SELF, None, (1, 2), (2, 3)))}


@pytest.mark.parametrize("off", OFF)
def test_exact_patching_runs_with_the_interventions_as_the_reference_does(models, off):
    """Each patched run equals the reference run of that cell with the same interventions (a
    mean-ablated head's mean is its own run's, so the copies are not batched together); the
    unpatched runs are the models' runs with them, not without."""
    loaded, spec = models["gpt"], OFF[off]
    pair = frame_pair(loaded, PAIRS["gpt"])
    result = run_to_end(exact_patching(loaded, pair, ("heads", "resid-pre"), interventions=spec))
    plain = run_to_end(exact_patching(loaded, pair, ("heads",)))
    clean = ref_run("gpt", loaded, pair.clean.target_ids, pair.answers, spec=spec)[0]
    assert result.clean == pytest.approx(clean, abs=1e-5) and abs(result.clean - plain.clean) > 1e-3
    assert result.corrupt == pytest.approx(ref_run("gpt", loaded, pair.corrupt.target_ids, pair.answers,
                                                   spec=spec)[0], abs=1e-5)
    for point in ("heads", "resid-pre"):
        ours, ref = as_cells(result.results[point]), reference("gpt", loaded, pair, point, spec=spec)
        np.testing.assert_allclose([ours[k] for k in ref], list(ref.values()), atol=1e-5, rtol=0, err_msg=point)
    if off == "zero":                      # a switched-off head patched: nothing comes back
        assert result.results["heads"][3, 3] == pytest.approx(result.corrupt, abs=1e-6)


def test_attribution_and_dla_run_with_the_interventions(models):
    from attnscope.engine.experiments.attribution import attribution_patching
    from attnscope.engine.experiments.dla import direct_logit_attribution

    loaded, spec = models["gpt"], OFF["zero"]
    pair = frame_pair(loaded, PAIRS["gpt"])
    clean = ref_run("gpt", loaded, pair.clean.target_ids, pair.answers, spec=spec)[0]
    estimated = run_to_end(attribution_patching(loaded, pair, ("heads",), interventions=spec))
    assert estimated.clean == pytest.approx(clean, abs=1e-5)
    assert estimated.results["heads"][3, 3] == pytest.approx(estimated.corrupt, abs=1e-6)    # no change to put in
    dla = direct_logit_attribution(loaded, pair, interventions=spec)
    assert dla.clean == pytest.approx(clean, abs=1e-5)
    assert dla.results["heads"][3, 3] == 0 and dla.results["heads"][1, 2] == 0
    total = dla.results["heads"].sum() + dla.results["mlp"].sum() + dla.results["embed"] + dla.results["bias"]
    assert total == pytest.approx(clean, abs=1e-4)


def test_interventions_that_do_not_fit_are_refused_before_any_forward(models):
    loaded = models["gpt"]
    pair = frame_pair(loaded, PAIRS["gpt"])
    far = Interventions().ablate([HeadRef(DECODER_SELF, 9, 0)])
    with pytest.raises(InputError, match=r"do not fit .*layers are 0 to 3"):
        run_to_end(exact_patching(loaded, pair, ("heads",), interventions=far))
    past = Interventions().block(Edge(DECODER_SELF, (40,), (0,)))
    with pytest.raises(InputError, match="positions here"):
        run_to_end(exact_patching(loaded, pair, ("heads",), interventions=past))


# ---- the answers offered ---------------------------------------------------------------------------
def test_offered_answers_keep_a_chosen_id_and_read_as_their_own_text(models):
    from attnscope.engine.experiments.pairs import answer_texts, next_tokens

    gpt = models["gpt"]
    top = next_tokens(gpt, "the king is dead long live the", k=3)
    kept = next_tokens(gpt, "the king is dead long live the", k=3, keep=(7, top[0][0], 10 ** 9))
    assert kept[:3] == top                                   # then 7 once, and none past the vocabulary
    assert [i for i, _, _ in kept] == [i for i, _, _ in top] + [7]
    with torch.no_grad():
        logits = adapter_for(gpt).forward(frame(adapter_for(gpt), "the king is dead long live the"))[0, -1]
    assert kept[3][2] == pytest.approx(float(torch.softmax(logits.float(), -1)[7]), rel=1e-4)
    word, inner = adapter_for(gpt).piece_ids(" king")[0], gpt.tokenizer.token_id("ly")
    assert answer_texts(gpt, [inner, word]) == ["ly", " king"]        # the first of a list as any other
    gpt2 = models["gpt2"]                                              # byte-level BPE: 'Ġcat' and 's'
    word, inner = gpt2.tokenizer.convert_tokens_to_ids(["Ġcat", "s"])
    assert answer_texts(gpt2, [inner, word]) == ["s", " cat"]
    assert adapter_for(gpt2).piece_ids(" cat") == [word]               # typed as shown, it is that token
