"""A norm with its scale taken from a run: linear in its input, so what passes it can be split.

Every norm here has the form N(z) = g * P(z) / s(z) + b (LayerNorm: P centres; RMSNorm: P is
the identity; s(z) = sqrt(mean(P(z)^2) + eps); whatever g is, Gemma's 1 + w included), and the
norm is asked, never named: its epsilon is read off it, whether P centres is seen by shifting
its input (a centring norm does not move), and b = N(0). With s frozen at the run's s(x),
a part c of the input comes out as g * P(c) / s(x), computed from the norm's own output as
(N(c) - N(0)) * s(c) / s(x). Direct logit attribution reads the final norm this way
(engine.experiments.dla); the score split reads every norm this way (engine.experiments.stream).
"""
from __future__ import annotations

import torch


def norm_eps(norm: torch.nn.Module) -> float | None:
    """The norm's epsilon (``eps``, ``variance_epsilon`` or ``epsilon``); None for a module without one."""
    eps = next((getattr(norm, a) for a in ("eps", "variance_epsilon", "epsilon") if hasattr(norm, a)), None)
    return float(eps) if isinstance(eps, (int, float)) and not isinstance(eps, bool) else None


def subtracts_mean(norm: torch.nn.Module, z: torch.Tensor) -> bool:
    """Whether ``norm`` centres its input (LayerNorm) or not (RMSNorm), seen on one vector of
    ``z`` (..., D) shifted: ``forward`` is called directly, so no hook of the norm's runs."""
    x = z.reshape(-1, z.shape[-1])[:1]
    weight = next(norm.parameters(), None)
    x = x if weight is None else x.to(weight.dtype)                 # a float32 read of a bf16 model's stream
    shifted = x + x.float().std().to(x.dtype) + 1
    return bool(torch.allclose(norm.forward(shifted), norm.forward(x), rtol=1e-3, atol=1e-3))


def norm_scale(z: torch.Tensor, centres: bool, eps: float) -> torch.Tensor:
    """s(z) = sqrt(mean(P(z)^2) + eps) over the last axis, float32, kept as (..., 1)."""
    z = z.float()
    if centres:
        z = z - z.mean(-1, keepdim=True)
    return torch.sqrt((z * z).mean(-1, keepdim=True) + eps)


def frozen(out: torch.Tensor, shift: torch.Tensor, scale: torch.Tensor, run_scale: torch.Tensor) -> torch.Tensor:
    """The norm's output ``out`` = N(z) as it is with s frozen at ``run_scale``: (N(z) - b) *
    s(z) / s(x) + b, float32, with ``shift`` = b = N(0) and ``scale`` = s(z) (broadcast)."""
    shift = shift.float()
    return (out.float() - shift) * (scale / run_scale) + shift
