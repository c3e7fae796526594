"""why against an independent float64 reference built from plain forward hooks: decoders.

tests/helpers/why_reference.py rebuilds each asked score by hand (the residual stream as a sum of
sources through frozen norms, the projections, q / k norms, rotary, the scale) and checks
each of its steps against the float64 model's own activations. Here, per family: every term
of why's table (and of its versus key) equals the reference's to 1e-5 of the largest term;
the score, the position bias, and the softmax of the reference's row (with the mask and any
cap) equal the weights the trace draws, and why's weight is that weight. A middle layer and
the last, a head other than 0 (in GQA families one whose key/value head is not 0).
Encoders and encoder-decoders: test_why_reference_seq2seq.py.
"""
from __future__ import annotations

import pytest

from tests.helpers.why_reference import Opened, compare

HF_DECODERS = ("gpt2", "llama", "qwen2", "qwen3", "mistral", "gemma2", "phi3")
CASES = [(f, 1, 1) for f in HF_DECODERS] + [(f, 2, 3) for f in HF_DECODERS] + [
    ("random-gpt", 0, 1), ("random-gpt", 1, 3), ("bundled-gpt", 1, 1), ("bundled-gpt", 3, 3)]


@pytest.fixture(scope="module")
def opened(tmp_path_factory):
    return Opened(tmp_path_factory.mktemp("why-reference"))


@pytest.mark.parametrize("family, layer, head", CASES)
def test_the_split_is_the_float64_reference_and_its_row_is_the_drawn_one(opened, family, layer, head):
    loaded, reference, target = opened.get(family)
    compare(loaded, reference, "decoder self", layer, head, target)
