"""Sparse attention with an indexer (DeepSeek's DSA, GLM-5, HY-V4, AXK2): the keys the indexer
picks for each query are folded into the call's mask at the seam, so the weights are the
model's own softmax over the picked keys and every other key is exactly 0 (issue 57)."""
from __future__ import annotations

import numpy as np
import pytest
import torch

from attnscope.engine.seam.hf_attention import SiteError, chosen_keys
from tools import family_sweep
from attnscope.engine.traces import reading

TOPK = 4        # family_sweep.SHRINK["index_topk"]: fewer than the text's tokens, so the indexer chooses


@pytest.fixture(scope="module")
def dsa_folder(tmp_path_factory):
    return family_sweep.build(tmp_path_factory.mktemp("dsa"), "deepseek_v32", "decoder")


def test_a_dsa_model_is_exact_and_every_key_not_picked_is_zero(dsa_folder):
    from attnscope.engine.kinds import DECODER_SELF
    from attnscope.engine.loading.catalog import open_model
    from attnscope.engine.traces.tracing import trace_text

    assert family_sweep.compare(dsa_folder, "decoder")["class"] == "exact"
    loaded = open_model(str(dsa_folder), "cpu")
    trace = trace_text(loaded, family_sweep.TEXT)
    w = reading.weights(trace, DECODER_SELF)                                          # (L, H, T, T)
    assert w.shape[-1] > TOPK
    assert ((w > 0).sum(-1) <= TOPK).all()                                   # at most the picked keys
    assert np.allclose(w.sum(-1), 1.0, atol=1e-5)                            # a softmax over those alone
    notes = loaded.meta.get("notes", "")
    assert "Sparse attention" in notes and "exactly 0" in notes


def test_the_estimate_counts_each_layers_own_mask(dsa_folder):
    from attnscope.engine.adapters import adapter_for
    from attnscope.engine.loading.catalog import open_model

    sizes = adapter_for(open_model(str(dsa_folder), "cpu")).recorded_sizes()
    layers = sum(1 for site in sizes.sites if site.kind in sizes.masks)
    assert sizes.masks and all(cell >= layers // len(sizes.masks) for cell in sizes.masks.values())


def test_picked_keys_become_the_mask_with_the_causal_triangle():
    indices = torch.tensor([[[0, 0], [0, 1], [2, 0]]])                      # (B, Tq, k)
    mask = chosen_keys(None, None, True, indices, 3, 3)                      # (B, 1, Tq, Tk)
    assert mask.tolist() == [[[[True, False, False], [True, True, False], [True, False, True]]]]
    floating = torch.zeros(1, 1, 3, 3)
    out = chosen_keys(None, floating, False, indices, 3, 3)
    assert (out[0, 0, 0, 1:] == torch.finfo(torch.float32).min).all() and out[0, 0, 2, 1] < -1e30


@pytest.mark.parametrize("indices", [torch.zeros(1, 3, 2), torch.tensor([[[0], [5], [1]]]), torch.zeros(3, 2, dtype=torch.long)])
def test_a_choice_the_seam_cannot_apply_is_one_sentence(indices):
    with pytest.raises(SiteError) as caught:
        chosen_keys(None, None, True, indices, 3, 3)
    message = str(caught.value)
    assert "\n" not in message and message.endswith(".") and "attnscope" in message
