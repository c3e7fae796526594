"""Where and how work runs: the device (device.py), block sizes from it (blocks.py), the memory
free and a refusal past it (free_memory.py), memory kept between Runs (memory.py), files written
atomically and read with checks (files.py), generators driven (steps.py), transformers' own logs
(quiet.py), and the packages' lazy public faces (public.py). Public: the names gui/ and cli/
use, listed in ``__all__``."""
from __future__ import annotations

from typing import TYPE_CHECKING

from attnscope.engine.runtime.public import lazy

if TYPE_CHECKING:     # what tools see; at run time __getattr__ imports each name's module on first use
    from attnscope.engine.runtime.device import CHOICES, SPREAD, available_devices, pick_device
    from attnscope.engine.runtime.files import atomic_path, open_npz
    from attnscope.engine.runtime.free_memory import free_bytes, gib
    from attnscope.engine.runtime.memory import keep_freed_memory
    from attnscope.engine.runtime.steps import drive

_PUBLIC = {
    "CHOICES": "device",
    "SPREAD": "device",
    "available_devices": "device",
    "pick_device": "device",
    "atomic_path": "files",
    "open_npz": "files",
    "free_bytes": "free_memory",
    "gib": "free_memory",
    "keep_freed_memory": "memory",
    "drive": "steps",
}
__getattr__ = lazy(__name__, _PUBLIC)
__all__ = ["CHOICES", "SPREAD", "atomic_path", "available_devices", "drive", "free_bytes", "gib",
           "keep_freed_memory", "open_npz", "pick_device"]
