"""Sinusoidal clocks, their rotations, and RoPE's relative-position property."""
import math

import pytest
import torch

from attnscope.engine.models.positional import (RotaryEmbedding, angular_frequencies, rotation_matrix, shift_encoding,
                               sinusoidal_encoding, wavelengths)


@pytest.mark.parametrize("d_model", [4, 16, 63, 128])
def test_sinusoidal_matches_the_paper_formula(d_model):
    pe = sinusoidal_encoding(50, d_model, dtype=torch.float64)
    for pos in (0, 1, 7, 49):
        for i in range(0, d_model, 1):
            angle = pos / 10000 ** ((i - i % 2) / d_model)
            expected = math.sin(angle) if i % 2 == 0 else math.cos(angle)
            assert abs(pe[pos, i].item() - expected) < 1e-12


def test_frequencies_and_wavelengths():
    w = angular_frequencies(8)
    assert w[0] == 1.0 and torch.all(w[1:] < w[:-1])
    assert torch.allclose(wavelengths(8), 2 * math.pi / w)


@pytest.mark.parametrize("d_model", [6, 32, 128])
def test_shift_by_rotation_equals_later_position(d_model):
    pe = sinusoidal_encoding(300, d_model, dtype=torch.float64)
    for pos in (0, 3, 17, 100):
        for k in (1, 5, 40, 150):
            torch.testing.assert_close(shift_encoding(pe[pos], k), pe[pos + k], atol=1e-6, rtol=0)
    for depth in range(d_model // 2):
        r = rotation_matrix(9, depth, d_model)
        torch.testing.assert_close(r @ r.T, torch.eye(2, dtype=torch.float64), atol=1e-12, rtol=0)
        torch.testing.assert_close(r @ pe[20, 2 * depth: 2 * depth + 2], pe[29, 2 * depth: 2 * depth + 2], atol=1e-6, rtol=0)


def test_rope_scores_depend_only_on_relative_position():
    torch.manual_seed(0)
    rope = RotaryEmbedding(16)
    q, k = torch.randn(16, dtype=torch.float64), torch.randn(16, dtype=torch.float64)
    rope.inv_freq = rope.inv_freq.double()

    def score(m, n):
        qm = rope.rotate(q[None], torch.tensor([m]))[0]
        kn = rope.rotate(k[None], torch.tensor([n]))[0]
        return float(qm @ kn)

    for offset in (0, 1, 5, 30):
        values = [score(m + offset, m) for m in (0, 3, 11, 50)]
        assert max(values) - min(values) < 1e-9
    assert abs(score(5, 0) - score(0, 5)) > 1e-6  # it does depend on the offset's sign
