"""The seam-only tools on a dense-fallback model (issue 57 part 5), one by one, on a tiny GPT-Neo:
the logit lens works (it reads each block's output, found without the seam); interventions,
patching (exact, attribution), DLA, Why, the atlas and saving a recording are each refused in one
sentence that names the tool and the reason, before anything is written; what needs no seam
(the model's own continuation, the window's Run under no interventions, Head statistics'
mechanism scores) works."""
import pytest
import torch

TEXT = "the dog sees the cat"


@pytest.fixture(scope="module")
def neo(tmp_path_factory):
    from attnscope.engine.loading.catalog import open_model
    from tools.family_sweep import build

    loaded = open_model(str(build(tmp_path_factory.mktemp("neo"), "gpt_neo", "decoder")), "cpu")
    assert loaded.meta.get("dense")
    return loaded


def _intervene(neo, _tmp):
    from attnscope import results
    from attnscope.engine.interventions import HeadRef, Interventions

    return results.intervene(neo, TEXT, Interventions().ablate([HeadRef("decoder self", 0, 0)]))


def _trace_changed(neo, _tmp):
    from attnscope.engine.interventions import HeadRef, Interventions
    from attnscope.engine.traces.tracing import trace_text

    return trace_text(neo, TEXT, interventions=Interventions().ablate([HeadRef("decoder self", 0, 0)]))


def _patch(method, what="heads"):
    def run(neo, _tmp):
        from attnscope import results

        return results.patch(neo, TEXT, "the cat sees the dog", (" dog", " cat"), what=(what,), method=method)
    return run


def _why(neo, _tmp):
    from attnscope import results

    return results.why(neo, TEXT, 0, 0, 3, 1)


def _atlas(neo, tmp):
    from attnscope import results

    return results.atlas(neo, tmp / "atlas.safetensors", docs=1, length=16)


def _record(neo, tmp):
    from attnscope import results

    return results.record(neo, TEXT, tmp / "run.safetensors")


def _step(neo, _tmp):
    from attnscope.engine.decoding import DecodeSession

    return DecodeSession(neo, TEXT)


# Each refusal names the tool asked, not the list of every seam tool.
REFUSED = {"intervene": (_intervene, "an intervention needs"), "a changed Run": (_trace_changed, "an intervention needs"),
           "patching": (_patch("exact"), "activation patching needs"),
           "patching the residual stream": (_patch("exact", "resid-pre"), "activation patching needs"),
           "attribution patching": (_patch("attribution"), "attribution patching needs"),
           "DLA": (_patch("dla"), "direct logit attribution needs"), "Why": (_why, "Why (the split"),
           "the atlas": (_atlas, "the atlas needs"), "a recording": (_record, "a recording needs"),
           "stepping the decoding": (_step, "stepping the decoding")}


@pytest.mark.parametrize("tool", sorted(REFUSED))
def test_each_seam_only_tool_is_refused_in_one_sentence_naming_the_reason(neo, tmp_path, tool):
    from attnscope.engine.inputs import InputError

    ask, words = REFUSED[tool]
    with pytest.raises(InputError) as caught:
        ask(neo, tmp_path)
    said = str(caught.value)
    assert said.startswith(f"{neo.name}: ") and words in said, said
    assert "needs attnscope's attention seam" in said or "need attnscope's attention seam" in said
    assert "own attention weights" in said and said.endswith(".") and "\n" not in said and said.count(". ") == 0
    assert list(tmp_path.iterdir()) == []          # refused before anything is written


def test_the_logit_lens_works_and_its_last_layer_is_the_models_own(neo):
    from attnscope import results
    from attnscope.engine.adapters import adapter_for

    read = results.lens(neo, TEXT)
    adapter = adapter_for(neo)
    assert len(read.layers) == adapter.sizes()[0]
    framed = adapter.prepare(TEXT).framed
    with torch.no_grad():
        own = torch.softmax(neo.model(input_ids=torch.tensor([framed.target_ids])).logits[0].float(), -1)  # (T, V)
    top = own.topk(5, dim=-1)
    for pos, row in enumerate(read.layers[-1]["top"]):
        assert [i for i, _ in row] == top.indices[pos].tolist()
        assert [p for _, p in row] == pytest.approx(top.values[pos].tolist(), abs=1e-6)
    assert "own attention weights" in read.to_json()["model_notes"]


def test_what_needs_no_seam_works(neo):
    """The window's continuation line, its Run (its interventions, none, passed as an empty
    Interventions) and Head statistics' scores: before, the first two were refused as seam
    tools and the scores stopped on numpy's "need at least one array to stack"."""
    import numpy as np

    from attnscope.engine.decoding import model_output
    from attnscope.engine.inspection import mechanism_scores
    from attnscope.engine.interventions import Interventions
    from attnscope.engine.traces.tracing import trace_text

    assert isinstance(model_output(neo, TEXT, max_new_tokens=4), str)
    layers, heads = trace_text(neo, TEXT, interventions=Interventions()).shape("decoder self")[:2]
    scores = mechanism_scores(neo)["decoder self"]
    for name in ("induction", "previous"):
        assert scores[name].shape == (layers, heads) and np.isfinite(scores[name]).all()
