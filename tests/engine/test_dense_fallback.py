"""The dense fallback (engine.adapters.hf_dense, issue 57 part 5): a family whose attention never
reaches the seam (its own classes, or one module in every layer) opens eager and is drawn from its
own ``output_attentions``, equal to eager's; an encoder-decoder or a state-space model is refused in
one sentence; a long text is refused with the numbers, and what needs the seam is refused."""
import pytest

from tools.family_sweep import build, families, sweep_one

# family -> the class the sweep gives it, and words of its refusal
EXPECTED = {
    "gpt_neo": ("dense", ""), "bloom": ("dense", ""), "falcon": ("dense", ""), "albert": ("dense", ""),
    "deberta-v2": ("dense", ""), "ibert": ("dense", ""),
    "fsmt": ("refused", "does not take an encoder-decoder"), "mamba": ("refused", "its own way"),
}


@pytest.fixture(scope="module")
def root(tmp_path_factory):
    return tmp_path_factory.mktemp("dense")


@pytest.mark.parametrize("family", sorted(EXPECTED))
def test_each_family_opens_through_the_fallback_or_is_refused_in_one_sentence(root, family):
    row = sweep_one(root, family, families()[family])
    want, words = EXPECTED[family]
    assert row["class"] == want, row
    if want == "dense":
        assert row["diff"] <= 1e-5
    else:
        assert words in row["note"] and "\n" not in row["note"] and row["note"].endswith(".")


@pytest.fixture(scope="module")
def neo(tmp_path_factory):
    from attnscope.engine.loading.catalog import open_model

    return open_model(str(build(tmp_path_factory.mktemp("neo"), "gpt_neo", "decoder")), "cpu")


def test_the_trace_says_where_it_was_drawn_from(neo):
    from attnscope.engine.traces.tracing import trace_text

    trace = trace_text(neo, "the dog sees the cat")
    assert any("own attention weights; long texts need the seam" in n for n in trace.notes)
    assert "own attention weights" in neo.meta["notes"]


def test_a_long_text_is_refused_once_with_the_numbers_and_the_longest_that_fits(neo, monkeypatch):
    """The Run's own estimate (engine.traces.estimate) refuses it, in a Run's words: the bytes held, the
    longest text that fits, and that it fits."""
    from attnscope.engine.adapters import Framed, adapter_for
    from attnscope.engine.runtime.free_memory import RunTooLarge
    from attnscope.engine.traces import estimate
    from attnscope.engine.traces.tracing import trace_text

    monkeypatch.setattr(estimate, "EAGER_LIMIT_BYTES", 1 << 14)
    text = " ".join(["the big dog sees the small cat"] * 12)
    with pytest.raises(RunTooLarge, match=r"^A Run of .* would not fit in memory: .* tokens: every head held whole, "
                                          r".*Shorten the text to at most \d+ tokens: .*long texts need the seam\.$"
                       ) as caught:
        trace_text(neo, text)
    said = str(caught.value)
    assert "\n" not in said and said.count("A Run of") == 1
    longest = int(said.split("at most ")[-1].split(" tokens")[0])
    adapter = adapter_for(neo)
    assert 0 < longest < len(adapter.prepare(text).framed.target_ids)
    fits = {n: estimate.estimate_run(adapter, Framed(target_ids=[5] * n)) for n in (longest, longest + 1)}
    assert fits[longest].eager and fits[longest].fits and not fits[longest + 1].fits
    monkeypatch.undo()
    assert trace_text(neo, "the dog sees the cat").shape(adapter.kind)[0] == adapter.sizes()[0]


def test_what_needs_the_seam_is_refused_in_one_sentence(neo):
    from attnscope.engine.adapters import adapter_for
    from attnscope.engine.inputs import InputError

    adapter = adapter_for(neo)
    for ask in (adapter.sites, adapter.recorded_sizes, lambda: adapter.output_projection(None)):
        with pytest.raises(InputError, match="need(s)? attnscope's attention seam"):
            ask()
