"""Positional encodings: sinusoidal (the 2017 paper), learned, and rotary (RoPE).

The sinusoidal encoding is a set of clocks: pair i = (dimension 2i, dimension 2i+1) holds
(sin(pos * w_i), cos(pos * w_i)) with angular frequency w_i = 1 / base^(2i / d_model).
Moving k positions turns every clock by the angle k * w_i, i.e. PE(pos + k) = R_i(k) PE(pos)
for each pair, with R_i(k) a 2x2 rotation that does not depend on pos. The helpers here are
what the positional-encoding lab plots; the modules are what the models use.
"""
from __future__ import annotations

import torch
from torch import nn


def angular_frequencies(d_model: int, base: float = 10000.0) -> torch.Tensor:
    """(ceil(d_model / 2),) float64: w_i = 1 / base^(2i / d_model) for each (sin, cos) pair i."""
    i = torch.arange((d_model + 1) // 2, dtype=torch.float64)
    return 1.0 / base ** (2 * i / d_model)


def wavelengths(d_model: int, base: float = 10000.0) -> torch.Tensor:
    """Positions per full turn of each pair's clock: 2*pi / w_i (from 2*pi up to 2*pi*base)."""
    return 2 * torch.pi / angular_frequencies(d_model, base)


def sinusoidal_encoding(n_positions: int, d_model: int, base: float = 10000.0, dtype=torch.float32) -> torch.Tensor:
    """(n_positions, d_model): PE[pos, 2i] = sin(pos w_i), PE[pos, 2i+1] = cos(pos w_i). Any d_model,
    odd included (the last column is then a sine with no cosine partner)."""
    pos = torch.arange(n_positions, dtype=torch.float64)[:, None]
    angles = pos * angular_frequencies(d_model, base)[None, :]  # (P, ceil(D/2))
    pe = torch.zeros(n_positions, d_model, dtype=torch.float64)
    pe[:, 0::2] = torch.sin(angles)
    pe[:, 1::2] = torch.cos(angles[:, : d_model // 2])
    return pe.to(dtype)


def rotation_matrix(k: float, depth: int, d_model: int, base: float = 10000.0) -> torch.Tensor:
    """(2, 2) float64 R_i(k) with [sin((p+k)w), cos((p+k)w)] = R_i(k) @ [sin(pw), cos(pw)], w = w_depth.

    From sin(a+b) = sin a cos b + cos a sin b and cos(a+b) = cos a cos b - sin a sin b.
    """
    w = angular_frequencies(d_model, base)[depth]
    c, s = torch.cos(k * w), torch.sin(k * w)
    return torch.stack([torch.stack([c, s]), torch.stack([-s, c])])


def shift_encoding(pe_row: torch.Tensor, k: float, base: float = 10000.0) -> torch.Tensor:
    """Apply R_i(k) to every (sin, cos) pair of one encoding row (d_model,): gives PE(pos + k)
    without knowing pos. For odd d_model the unpaired last sine is not a rotation and is
    left out (returned as NaN), since no 2x2 matrix can move it alone."""
    d = pe_row.shape[-1]
    out = torch.full_like(pe_row, float("nan"), dtype=torch.float64)
    x = pe_row.to(torch.float64)
    for i in range(d // 2):
        out[2 * i : 2 * i + 2] = rotation_matrix(k, i, d, base) @ x[2 * i : 2 * i + 2]
    return out


class SinusoidalPositionalEncoding(nn.Module):
    """Adds the fixed sinusoidal table (a buffer, not a parameter) to token embeddings."""

    pe: torch.Tensor        # (max_len, D), a buffer: declared so tools see a tensor, not "Tensor | Module"

    def __init__(self, d_model: int, max_len: int = 512, base: float = 10000.0):
        super().__init__()
        self.base = base
        self.register_buffer("pe", sinusoidal_encoding(max_len, d_model, base), persistent=False)

    def forward(self, x: torch.Tensor, start: int = 0) -> torch.Tensor:  # (B, T, D) -> (B, T, D)
        return x + self.pe[start : start + x.size(1)].to(x.dtype)

    def table(self) -> torch.Tensor:  # (max_len, D), for the positional-encoding lab
        return self.pe


def shift_error(k: int, n_positions: int, d_model: int, base: float = 10000.0) -> float:
    """max |R(k) PE(pos) - PE(pos + k)| over positions and (sin, cos) pairs: ~1e-15 in float64,
    the numerical proof that a shift by k is a rotation independent of pos."""
    pe = sinusoidal_encoding(n_positions + k, d_model, base, dtype=torch.float64)
    worst = 0.0
    for pos in range(n_positions):
        shifted = shift_encoding(pe[pos], k, base)[: 2 * (d_model // 2)]
        worst = max(worst, float((shifted - pe[pos + k, : 2 * (d_model // 2)]).abs().max()))
    return worst


def offset_similarity(pos: int, max_k: int, d_model: int, base: float = 10000.0) -> torch.Tensor:
    """(max_k + 1,): PE(pos) . PE(pos + k) for k = 0..max_k. It depends on k only:
    sum_i cos(k w_i), largest at k = 0 and falling off with distance."""
    pe = sinusoidal_encoding(pos + max_k + 1, d_model, base, dtype=torch.float64)
    return pe[pos + torch.arange(max_k + 1)] @ pe[pos]


def rope_scores(q: torch.Tensor, k: torch.Tensor, n_positions: int, base: float = 10000.0) -> torch.Tensor:
    """(P, P): the score of query ``q`` rotated to position m with key ``k`` rotated to n.
    Each diagonal (fixed m - n) is constant: RoPE sees only relative position."""
    rot = RotaryEmbedding(q.shape[-1], base).double()
    pos = torch.arange(n_positions)
    qs = rot.rotate(q.double().expand(n_positions, -1), pos)  # (P, Dh)
    ks = rot.rotate(k.double().expand(n_positions, -1), pos)
    return qs @ ks.T


def pca_2d(table: torch.Tensor) -> torch.Tensor:
    """(P, D) -> (P, 2): the position vectors projected on their two main directions."""
    x = table.double() - table.double().mean(0, keepdim=True)
    _, _, v = torch.linalg.svd(x, full_matrices=False)
    return x @ v[:2].T


def cosine_matrix(table: torch.Tensor) -> torch.Tensor:
    """(P, D) -> (P, P) cosine similarity of every pair of position vectors."""
    x = torch.nn.functional.normalize(table.double(), dim=-1)
    return x @ x.T


class LearnedPositionalEmbedding(nn.Embedding):
    """A trained vector per position (GPT-2, BERT). ``table()`` is what the lab projects."""

    def table(self) -> torch.Tensor:
        return self.weight.detach()


class RotaryEmbedding(nn.Module):
    """RoPE: rotate each (2i, 2i+1) pair of a query/key by the angle pos * w_i.

    Then q_m . k_n = sum_i |q_i||k_i| cos(theta_q - theta_k + (m - n) w_i): the score depends on
    positions only through m - n. Pairs are adjacent dimensions, the same clocks as the
    sinusoidal encoding, so the lab can draw both with one picture.
    """

    def __init__(self, head_dim: int, base: float = 10000.0):
        super().__init__()
        if head_dim % 2:
            raise ValueError(f"rotary embedding needs an even head dimension, got {head_dim}")
        self.base = base
        self.register_buffer("inv_freq", angular_frequencies(head_dim, base).float(), persistent=False)

    def rotate(self, x: torch.Tensor, positions: torch.Tensor) -> torch.Tensor:
        """x: (..., T, Dh), positions: (T,) -> x with pair i of row t turned by positions[t] * w_i."""
        angles = positions.to(self.inv_freq.dtype)[:, None] * self.inv_freq[None, :]  # (T, Dh/2)
        cos, sin = angles.cos().to(x.dtype), angles.sin().to(x.dtype)
        x1, x2 = x[..., 0::2], x[..., 1::2]
        out = torch.stack([x1 * cos - x2 * sin, x1 * sin + x2 * cos], dim=-1)  # (..., T, Dh/2, 2)
        return out.flatten(-2)


def position_table(model: nn.Module) -> tuple[str, torch.Tensor | None]:
    """What a model uses for positions: ("sinusoidal", PE table), ("learned", the trained
    table), ("rope", None) or ("none", None). Works for our families and Hugging Face BERT."""
    for name, module in model.named_modules():
        if isinstance(module, SinusoidalPositionalEncoding):
            return "sinusoidal", module.pe.detach().cpu()
        if isinstance(module, RotaryEmbedding):
            return "rope", None
        if isinstance(module, nn.Embedding) and name.split(".")[-1] in ("wpe", "position_embeddings"):
            return "learned", module.weight.detach().float().cpu()
    return "none", None
