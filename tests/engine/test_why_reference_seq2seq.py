"""why against an independent float64 reference built from plain forward hooks: encoders
(BERT, RoBERTa, ours) and encoder-decoders (T5, BART, our translator post-LN as shipped and
rebuilt pre-LN, whose encoder ends with a norm), every kind.

As test_why_reference.py (the decoders): each term of the table and of the versus key equals
tests/helpers/why_reference.py's by-hand split to 1e-5 of the largest term; the score, the position
bias (T5's relative bias, apart from the table), and the softmax of the reference's row equal
the trace's drawn weights, and why's weight is that weight. Post-LN: each LayerNorm after a
residual add transforms every source with its run's scale and adds its shift to ``bias``;
cross-attention's key side is the encoder's sources, ``enc.``-prefixed.
"""
from __future__ import annotations

import pytest

from tests.helpers.why_reference import Opened, compare

ENC, DEC, CROSS = "encoder self", "decoder self", "cross"
ENCODERS = [(f, ENC, layer, head) for f in ("bert", "roberta") for layer, head in ((1, 1), (2, 3))] + [
    ("random-bert", ENC, 0, 1), ("random-bert", ENC, 1, 3)]
ENCODER_DECODERS = [(f, kind, layer, head) for f in ("t5", "bart", "bundled-translator")
                    for kind in (ENC, DEC, CROSS) for layer, head in ((1, 1), (2, 3))] + [
    ("random-translator", kind, layer, head) for kind in (ENC, DEC, CROSS) for layer, head in ((0, 1), (1, 3))] + [
    ("pre-ln-translator", kind, layer, head) for kind in (ENC, DEC, CROSS) for layer, head in ((1, 1), (2, 3))]


@pytest.fixture(scope="module")
def opened(tmp_path_factory):
    return Opened(tmp_path_factory.mktemp("why-reference"))


@pytest.mark.parametrize("family, kind, layer, head", ENCODERS + ENCODER_DECODERS)
def test_the_split_is_the_float64_reference_and_its_row_is_the_drawn_one(opened, family, kind, layer, head):
    loaded, reference, target = opened.get(family)
    compare(loaded, reference, kind, layer, head, target)
