"""The family sweep (tools/family_sweep.py, issue 57) over a fixed list that covers every path a
Hugging Face model takes through attnscope: the seam (encoder, decoder, encoder-decoder, grouped
keys, soft caps), attention sinks (per head; Granite's eager weights taken before its sink), sliding
windows, hybrids (a softmax layer beside a linear or state-space one), per-layer head sizes
(Gemma 4), and refusals in one sentence (own attention classes, a module shared by layers or called twice in one, heads that differ
per layer, keys that are not tokens); sparse attention's indexer keys folded into the mask (DeepSeek's DSA). No family may open and differ from its
own eager attention (the sweep's "wrong"), nor fail with a foreign message ("unclean")."""
import pytest

from tools.family_sweep import families, sweep_one

from tests.helpers.family_list import EFFECTIVE, EXPECTED, HYBRIDS


@pytest.fixture(scope="module")
def root(tmp_path_factory):
    return tmp_path_factory.mktemp("sweep")


@pytest.mark.parametrize("family", sorted(EXPECTED))
def test_each_family_is_exact_or_refused_in_one_sentence(root, family):
    role = families()[family]
    row = sweep_one(root, family, role)
    want, words = EXPECTED[family]
    assert row["class"] == want, row
    if want in ("exact", "dense"):       # dense: drawn from its own eager weights (engine.adapters.hf_dense)
        assert row["diff"] <= 1e-4
    else:
        note = row["note"]
        assert words in note and "\n" not in note and note.rstrip().endswith(".")
    if family in HYBRIDS:     # the tiny model held a softmax layer and a linear or state-space one
        assert "not softmax attention" in row["note"], row
    assert ("drawn as effective attention" in row["note"]) == (family in EFFECTIVE), row
