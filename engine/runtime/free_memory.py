"""How much memory is free, and a refusal when a job would not fit: one answer for every estimate.

``free_bytes(device)`` is the one question every estimate asks (a Run, a decoding cache,
patching's batch, the overview's blocks): a GPU's own free memory, else this machine's. A job
may take ``MEMORY_SHARE`` of it. No torch at import: the loader's torch-free stages ask it too.
"""
from __future__ import annotations

import numbers

import os
from pathlib import Path

from attnscope.engine.errors import ModelLoadError
from attnscope.engine.inputs import InputError

MEMORY_SHARE = 0.8             # refuse a model or a job that needs more than this share of the free memory


class RunTooLarge(InputError):
    """A Run that would not fit in memory, said with the numbers before anything runs."""


def available_memory() -> int:
    """Bytes this process can still allocate: free RAM, within a cgroup or address-space limit."""
    free = None
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemAvailable:"):
                free = int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    if free is None:
        try:
            free = os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
        except (ValueError, OSError, AttributeError):
            free = 8 << 30  # cannot tell: assume a modest machine
    try:  # a container's limit (cgroup v2)
        limit = Path("/sys/fs/cgroup/memory.max").read_text().strip()
        if limit != "max":
            used = int(Path("/sys/fs/cgroup/memory.current").read_text())
            free = min(free, int(limit) - used)
    except (OSError, ValueError):
        pass
    try:  # an address-space limit (ulimit -v)
        import resource
        soft, _ = resource.getrlimit(resource.RLIMIT_AS)
        if soft != resource.RLIM_INFINITY:
            size = int(Path("/proc/self/statm").read_text().split()[0]) * os.sysconf("SC_PAGE_SIZE")
            free = min(free, soft - size)
    except (ImportError, OSError, ValueError, IndexError):
        pass
    return max(0, free)


def on_gpu(device) -> bool:
    """Whether ``device`` (a torch.device or its name) is a CUDA GPU this process can see."""
    if not str(device).startswith("cuda"):
        return False
    import torch  # here, not at the top: the loader's torch-free stages import this module

    return torch.cuda.is_available()


def free_bytes(device) -> int:
    """Bytes free where work on ``device`` lives: a CUDA GPU's own free memory (a recording
    lives where the model runs: 128k tokens of a 1B model record 10 GB on the GPU, whatever
    the host has), else this machine's (``available_memory``)."""
    if on_gpu(device):
        import torch  # here, not at the top: the loader's torch-free stages import this module

        return int(torch.cuda.mem_get_info(torch.device(device))[0])
    return available_memory()


def free_where(device) -> tuple[int, str]:
    """(bytes free, where) for work on ``device``, as a refusal says it: "on cuda:0" or "in memory"."""
    return free_bytes(device), (f"on {device}" if on_gpu(device) else "in memory")


def gib(n: float, digits: int = 1) -> str:
    """Bytes as every message says them (the one byte formatter): MiB below a gibibyte, GiB
    below a tebibyte, then TiB, with ``digits`` after the point. Small sizes stay in MiB, with
    the digits that tell two apart (engine.traces.base.sizes_apart), never in KiB."""
    if isinstance(n, bool) or not isinstance(n, numbers.Real):    # its own door: every message calls it
        raise InputError(f"The argument n must be a number of bytes, not {n!r:.40}.")
    for unit, scale in (("TiB", 1 << 40), ("GiB", 1 << 30)):
        if n >= scale:
            return f"{n / scale:,.{digits}f} {unit}"
    return f"{n / (1 << 20):,.{digits}f} MiB"


def check_memory(source: str, needed: int, what: str) -> None:
    """Refuse when ``needed`` bytes do not fit in the share of free memory attnscope allows itself."""
    free = available_memory()
    if needed > MEMORY_SHARE * free:
        raise ModelLoadError(f"{source}: {what} would need about {gib(needed)} of memory, and about {gib(free)} is "
                             "free here. Open it on a machine with more memory, or use a smaller model.")
