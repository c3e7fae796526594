"""The head atlas on every family of the family sweep's fixed list (tests/engine/test_family_sweep.py,
built by tools/family_sweep.py as a user's folder): each either builds a tiny atlas (two documents
of 32 tokens) whose every statistic is finite and whose file reads back without the model, or is
refused in one sentence in attnscope's own error types. What each path gives:

- decoders (seam, sinks, sliding windows, DSA's sparse indexer folded into the mask): every statistic,
  and retrieval probes;
- encoders (bidirectional) and encoder-decoders (the atlas reads the encoder's self-attention, where
  the document is read): every statistic, no retrieval (an encoder writes no token: refused);
- hybrids: the softmax layers only; the linear or state-space layers (effective attention) are left
  out and said in the file ("skipped"), since every statistic assumes a softmax distribution;
- the dense fallback (drawn from eager weights, no seam) and families the loader refuses: one sentence.
"""
from __future__ import annotations

import re

import numpy as np
import pytest

from attnscope.engine.atlas import add_retrieval, atlas_summary, build_atlas, load_state
from attnscope.engine.errors import ModelLoadError
from attnscope.engine.inputs import InputError
from attnscope.engine.kinds import ENCODER_SELF
from attnscope.engine.loading.catalog import open_model
from attnscope.engine.runtime.quiet import quiet_transformers
from tests.helpers.family_list import EXPECTED, HYBRIDS
from tools.family_sweep import build, families

FOREIGN = re.compile(r"\b[A-Z]\w*(Error|Exception)\b|Traceback")
TEXT = ("the big dog sees the small cat and the cat sees the dog\n"
        "time flies like an arrow and fruit flies like a banana\n"
        "attention is all you need said the paper about a cat\n") * 4
LENGTH, DOCS = 32, 2
EFFECTIVE_TOO = (*HYBRIDS, "falcon_h1")     # Falcon-H1: a Mamba-2 mixer beside attention in every layer


@pytest.fixture(scope="module")
def root(tmp_path_factory):
    return tmp_path_factory.mktemp("atlas-families")


@pytest.fixture(scope="module")
def corpus(root):
    path = root / "corpus.txt"
    path.write_text(TEXT, encoding="utf-8")
    return path


def _one_sentence(message: str) -> None:
    assert "\n" not in message and not FOREIGN.search(message) and message.rstrip().endswith((".", ")")), message


def _open(root, family):
    with quiet_transformers():
        folder = build(root, family, families()[family])
        return open_model(str(folder), "cpu")


@pytest.mark.parametrize("family", sorted(EXPECTED))
def test_each_family_builds_a_finite_atlas_or_is_refused_in_one_sentence(root, corpus, family):
    want = EXPECTED[family][0]
    out = root / f"{family}.safetensors"
    try:
        loaded = _open(root, family)
        state = build_atlas(loaded, out, corpus=corpus, length=LENGTH, docs=DOCS, top=4, samples=16)
    except (InputError, ModelLoadError) as exc:
        assert want in ("refused", "dense"), f"{family} was refused: {exc}"
        _one_sentence(str(exc))
        if want == "dense":
            assert "the atlas" in str(exc)
        return
    assert want == "exact", f"{family} ({want}) built an atlas"
    assert state.docs_done == DOCS
    for key, value in state.arrays.items():
        if np.issubdtype(value.dtype, np.floating):
            assert np.isfinite(value).all(), f"{family}: {key} is not finite"
    summary = atlas_summary(load_state(out))
    assert summary["documents"] == DOCS and len(summary["heads"]) == state.meta["layers"] * state.meta["heads"]
    for head in summary["heads"]:
        assert head["entropy"]["mean"] is not None and np.isfinite(head["entropy"]["mean"]), (family, head["name"])
    if families()[family] != "decoder":       # an encoder, or an encoder-decoder's encoder
        assert summary["kind"] == ENCODER_SELF
    if family in EFFECTIVE_TOO:
        assert "effective attention" in summary["skipped"], summary["skipped"]
    else:
        assert summary["skipped"] is None


@pytest.mark.parametrize("family", ["bert", "t5"])
def test_retrieval_on_an_encoder_is_one_sentence(root, corpus, family):
    loaded = _open(root, family)
    state = build_atlas(loaded, root / f"r-{family}.safetensors", corpus=corpus, length=16, docs=1, top=2, samples=8)
    with pytest.raises(InputError) as caught:
        add_retrieval(state, loaded, [48], root / f"r-{family}.safetensors")
    _one_sentence(str(caught.value))
    assert "writes no token" in str(caught.value)


@pytest.mark.parametrize("family", ["gpt_oss", "deepseek_v32", "qwen3_next", "gemma4_text"])
def test_retrieval_scores_on_decoders_of_every_path(root, corpus, family):
    """Sinks, DSA's sparse mask, a hybrid, per-layer head sizes: scores are shares in [0, 1]."""
    loaded = _open(root, family)
    out = root / f"r-{family}.safetensors"
    state = build_atlas(loaded, out, corpus=corpus, length=16, docs=1, top=2, samples=8)
    state = add_retrieval(state, loaded, [48], out)
    score = load_state(out).arrays["retrieval.score"]
    assert score.shape == (state.meta["layers"], state.meta["heads"]) and ((score >= 0) & (score <= 1)).all()
