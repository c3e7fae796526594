"""Retrieval heads (engine/atlas/retrieval.py, issue 56): needle probes built from the corpus,
the copy given to the model, and a head retrieving where its strongest key is the needle's
same token. Checked against a brute-force reading of the whole weights, and on the bundled GPT,
whose layer 3 head 3 is the head that copies."""
from __future__ import annotations

import numpy as np
import pytest

from attnscope.engine.adapters import adapter_for
from attnscope.engine.atlas.forward import atlas_kind, record
from attnscope.engine.atlas.retrieval import build_probes, probe_hits, retrieval_scores
from attnscope.engine.inputs import InputError
from attnscope.engine.loading.catalog import open_model


@pytest.fixture(scope="module")
def gpt():
    loaded = open_model("gpt", "cpu")
    return loaded, adapter_for(loaded), atlas_kind(loaded)


def test_the_bundled_gpts_copying_head_retrieves_most(gpt):
    loaded, adapter, kind = gpt
    found = retrieval_scores(adapter, kind, None, [128, 256])
    score = found["score"]                                                     # (L, H)
    assert found["probes"] == 10 and score.shape == (4, 4)
    assert np.unravel_index(score.argmax(), score.shape) == (3, 3)
    assert score.min() >= 0 and score.max() <= 1


def test_a_probes_hits_equal_a_brute_force_reading_of_every_weight(gpt):
    _, adapter, kind = gpt
    probe = build_probes(adapter, None, [120], depths=(0.5,))[0]
    framed, starts = adapter.frame_ids(probe.ids)
    offset = starts[kind]
    calls = record(adapter, framed, kind)
    ids = np.asarray(probe.ids)
    (n0, n1), (c0, c1) = probe.needle, probe.copy
    expected = np.zeros((len(calls), calls[0].q.shape[1]), np.int64)
    for layer, call in enumerate(calls):
        whole = call.weights(0).numpy()                                         # (H, T, T), small here
        for i in range(c0, c1):                                                 # the row writing token i
            strongest = whole[:, offset + i - 1].argmax(-1) - offset            # (H,)
            expected[layer] += (strongest >= n0) & (strongest < n1) & (ids[np.clip(strongest, 0, None)] == ids[i])
    np.testing.assert_array_equal(probe_hits(calls, probe, offset), expected)
    assert probe.ids[n0:n1] == probe.ids[c0:c1] and len(probe.ids) == 120


@pytest.mark.parametrize("lengths", [[100_000], [1], [12]])   # 12: no room for a 4-token needle twice
def test_lengths_the_model_cannot_read_are_one_sentence(gpt, lengths):
    _, adapter, kind = gpt
    with pytest.raises(InputError) as caught:
        retrieval_scores(adapter, kind, None, lengths)
    message = str(caught.value)
    assert "\n" not in message and message.endswith(".")


def test_an_atlas_keeps_its_retrieval_scores_and_the_same_command_resumes(gpt, tmp_path, monkeypatch):
    import io
    import json
    from contextlib import redirect_stderr, redirect_stdout

    from attnscope.cli.entry import main
    from attnscope.engine.atlas import load_state

    out = tmp_path / "a.safetensors"
    argv = ["atlas", "gpt", "--out", str(out), "--docs", "1", "--length", "64",
            "--retrieval", "128,256"]
    with redirect_stdout(io.StringIO()), redirect_stderr(io.StringIO()):
        assert main(argv) == 0
    first = load_state(out).arrays["retrieval.score"]                          # (L, H)
    assert np.unravel_index(first.argmax(), first.shape) == (3, 3)
    import attnscope.engine.atlas.retrieval as retrieval

    def again(*_args, **_kw):
        raise AssertionError("the probes ran again")
    monkeypatch.setattr(retrieval, "retrieval_scores", again)
    with redirect_stdout(io.StringIO()), redirect_stderr(io.StringIO()):
        assert main(argv) == 0                                                 # done already: kept as it is
    np.testing.assert_array_equal(load_state(out).arrays["retrieval.score"], first)
    printed = io.StringIO()
    with redirect_stdout(printed):
        assert main(["atlas", str(out), "--json"]) == 0
    summary = json.loads(printed.getvalue())
    assert summary["retrieval"]["lengths"] == [128, 256] and "Wu et al." in summary["retrieval"]["definition"]
    best = max(summary["heads"], key=lambda h: h["retrieval"])
    assert best["name"] == "L3.H3"
