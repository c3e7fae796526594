"""A model larger than one device, spread over every GPU, then the CPU, then the disk.

Why accelerate: it is what transformers itself uses for ``device_map="auto"``; it places
whole decoder layers (never half a layer) on each device in order, and moves the hidden
state from one device to the next inside the forward. attnscope adds nothing to the
forward: the seam runs where each layer runs, so the recorder keeps each layer's queries
and keys on that layer's device, and a trace copies only what a view draws to the host. A
layer whose weights stay in RAM or on the disk runs on the first GPU (accelerate brings its
weights there for each forward), or on the CPU when there is no GPU.

The budget per device is what attnscope allows itself everywhere (engine.runtime.free_memory
MEMORY_SHARE of the free memory), so "spread" never takes a GPU or the RAM to its last
byte; what fits nowhere else goes to a temporary folder on the disk (safetensors weights are
read from their own files there, not copied). A model that does not fit even so is refused
with the numbers before anything is read.
"""
from __future__ import annotations

import shutil
import tempfile
from dataclasses import dataclass, field

import torch

from attnscope.engine.errors import ModelLoadError
from attnscope.engine.runtime.free_memory import MEMORY_SHARE, available_memory, gib


def accelerate_missing() -> str | None:
    """Why spreading cannot be done here (accelerate not installed), or None. Found, not
    imported: the window asks at start, and importing accelerate takes a while."""
    from importlib.util import find_spec

    if find_spec("accelerate") is None:
        return "Spreading a model over devices needs accelerate: pip install accelerate"
    return None


def device_budgets() -> dict:
    """max_memory for accelerate: bytes allowed per GPU index and for "cpu"."""
    budgets: dict = {}
    if torch.cuda.is_available():
        for i in range(torch.cuda.device_count()):
            free, _total = torch.cuda.mem_get_info(i)
            budgets[i] = int(MEMORY_SHARE * free)
    budgets["cpu"] = int(MEMORY_SHARE * available_memory())
    return budgets


@dataclass
class SpreadPlan:
    """The from_pretrained arguments of one spread load, and the folder that holds what goes to disk."""
    budgets: dict
    offload: tempfile.TemporaryDirectory = field(repr=False)

    def kwargs(self) -> dict:
        return dict(device_map="auto", max_memory=dict(self.budgets), offload_folder=self.offload.name)


def plan_spread(source: str, needed: int) -> SpreadPlan:
    """The budgets for a model of ``needed`` bytes; ModelLoadError with the numbers when the
    GPUs, the RAM and the free disk together cannot hold it."""
    missing = accelerate_missing()
    if missing:
        raise ModelLoadError(f"{source}: {missing}.")
    budgets = device_budgets()
    offload = tempfile.TemporaryDirectory(prefix="attnscope-offload-")
    disk = int(MEMORY_SHARE * shutil.disk_usage(offload.name).free)
    if needed > sum(budgets.values()) + disk:
        room = [f"GPU {i}: {gib(b)}" for i, b in budgets.items() if i != "cpu"]
        room += [f"RAM: {gib(budgets['cpu'])}", f"disk: {gib(disk)}"]
        offload.cleanup()
        raise ModelLoadError(f"{source}: this model needs about {gib(needed)}; spread over {', '.join(room)} "
                             "it still does not fit. Free memory or disk, or use a smaller model.")
    return SpreadPlan(budgets, offload)
