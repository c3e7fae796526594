"""The seam-only tools on a dense-fallback model (issue 57 part 5), one by one, on a tiny GPT-Neo:
the logit lens works (it reads each block's output, found without the seam); interventions,
patching (exact, attribution), DLA, Why, the atlas and saving a recording are each refused in one
sentence that names the reason, before anything is written."""
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


REFUSED = {"intervene": (_intervene, ""), "a changed Run": (_trace_changed, "an intervention needs"),
           "patching": (_patch("exact"), ""), "patching the residual stream": (_patch("exact", "resid-pre"), ""),
           "attribution patching": (_patch("attribution"), ""), "DLA": (_patch("dla"), ""), "Why": (_why, ""),
           "the atlas": (_atlas, "the atlas needs"), "a recording": (_record, "a recording needs")}


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
