"""Device choice, in one place: cuda, then mps, then cpu, unless the user says otherwise.

torch is imported by the functions, not by the module: the command line checks a --device
against CHOICES, and the window imports this module, both before any model is loaded.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import torch

SPREAD = "spread"    # a Hugging Face model over every GPU, then the CPU, then the disk (engine.loading.placement)
CHOICES = ("auto", "cpu", "cuda", "mps", SPREAD)


def available_devices() -> list[str]:
    """The device names this machine can run on, best first (for a device chooser)."""
    import torch

    names = []
    if torch.cuda.is_available():          # each GPU by its index when there are several
        count = torch.cuda.device_count()
        names += [f"cuda:{i}" for i in range(count)] if count > 1 else ["cuda"]
    mps = getattr(torch.backends, "mps", None)
    if mps is not None and mps.is_available():
        names.append("mps")
    names.append("cpu")
    return names


def pick_device(preference: str | None = "auto") -> torch.device:
    """Resolve a preference ('auto', 'cpu', 'cuda', 'cuda:1', 'mps') to a usable device.

    'auto' takes the best available; so does 'spread' (a placement only a Hugging Face model's
    load can make, engine.loading.placement: anything else runs on one device). Asking for a device this machine lacks raises a
    ValueError with a message a user can act on, rather than failing later inside torch.
    """
    import torch

    pref = (preference or "auto").strip().lower()
    if pref in ("auto", SPREAD):
        return torch.device(available_devices()[0])
    kind = pref.split(":")[0]
    if kind not in CHOICES:
        raise ValueError(f"unknown device {preference!r}: use one of {', '.join(CHOICES)}")
    if kind != "cpu" and kind not in {name.split(":")[0] for name in available_devices()}:
        raise ValueError(f"device {preference!r} is not available here; available: {', '.join(available_devices())}")
    return torch.device(pref)


def input_device(model) -> torch.device:
    """Where ``model`` takes its input ids: where accelerate placed its first module when it
    spread the model over devices (engine.loading.placement; a module left in RAM or on the
    disk, whose weights sit on the "meta" device, takes them on the CPU, and accelerate moves
    them on to where the module runs), else where its weights are."""
    import torch

    device_map = getattr(model, "hf_device_map", None)
    if not device_map:
        return next(model.parameters()).device
    where = next(iter(device_map.values()))
    if isinstance(where, int):
        return torch.device("cuda", where)
    return torch.device(where if where not in ("disk", "meta") else "cpu")


def compute_device() -> str:
    """Where most of a spread model computes (its dtype is chosen for it): a GPU when there is one.
    Beside the other answers about this machine's devices, so the loader's check stage asks the
    runtime, not the placement room it enters once, later, for its plan."""
    import torch   # torch: this module answers names of devices without it

    return "cuda" if torch.cuda.is_available() else "cpu"
