"""Retrieval heads (engine/atlas/retrieval.py, issue 56): needle probes built from the corpus,
the copy given to the model, and a head retrieving where its strongest key is the needle's
same token. Checked against a brute-force reading of the whole weights, and on the bundled GPT,
whose layer 3 head 3 is the head that copies."""
from __future__ import annotations

import numpy as np
import pytest

from attnscope.engine.adapters import adapter_for
from attnscope.engine.atlas.build import _record, atlas_kind
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
    calls = _record(adapter, framed, kind)
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


@pytest.mark.parametrize("lengths", [[100_000], [1], [20]])
def test_lengths_the_model_cannot_read_are_one_sentence(gpt, lengths):
    _, adapter, kind = gpt
    with pytest.raises(InputError) as caught:
        retrieval_scores(adapter, kind, None, lengths)
    message = str(caught.value)
    assert "\n" not in message and message.endswith(".")
