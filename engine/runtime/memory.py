"""Keep the memory a Run frees for the next Run, instead of handing it back to the system.

A Run that returns attention weights holds every layer's weights at once: MiniLM at 512
tokens, 6 layers x 12 heads x 512 x 512 float32 = 75 MB that live for one forward, and then
as many again in the trace's one (L, H, T, T) array. glibc's malloc hands such blocks back to
the kernel when they are freed (a block over its mmap threshold, at most 32 MB, is mapped
for itself and unmapped; the free top of a heap is trimmed; a worker thread's whole heap is
deleted once it is empty), so the next Run faults the same memory in again, page by page,
and the kernel zeroes each page (on the virtual machines here a fresh page cost ~5 us: 75
MB, ~100 ms). Measured on the model thread, MiniLM at 512 tokens with weights: 3,000-23,000
page faults per forward and 105-141 ms, against 2 faults and 94 ms for the same forward
without weights; with ``keep_freed_memory`` the forward with weights took 2 faults and
94-97 ms. Replaying a Run's blocks (tests/engine/test_memory.py): 18,433 fresh pages per Run
without, none with.

The price: the process keeps what it freed (that replay: 195 MB resident against 109 MB,
steady over 30 Runs), and gives back only what exceeds ``TRIM_THRESHOLD`` at the heap's
top; a desktop tool that will run the next text can afford it. In bench/long_inputs (every
view open, MiniLM at 512 tokens) the process held 1.39 GB against 1.27 GB without, and a
Run took 103 ms (2 page faults) against 134 ms (18,000-35,000). Only glibc (Linux)
has these switches; elsewhere this does nothing.
"""
from __future__ import annotations

import ctypes
import sys

# mallopt's parameter numbers, from glibc's <malloc.h>
M_TRIM_THRESHOLD = -1
M_MMAP_MAX = -4
M_ARENA_MAX = -8

TRIM_THRESHOLD = 512 * 1024 * 1024   # free memory at the heap's top kept up to this much

_applied: bool | None = None


def keep_freed_memory() -> bool:
    """Tell glibc's malloc to keep freed memory for reuse; True if it took the settings.

    Every block comes from the heap (``M_MMAP_MAX = 0``: none is mapped for itself, so a
    freed one stays for the next), and the heap keeps up to ``TRIM_THRESHOLD`` free at its
    top. Call it first thing in the process, before any thread starts: ``M_ARENA_MAX = 1``
    puts every thread that allocates later on that one main heap, where a thread created
    earlier keeps the arena it already has. Calling it again does nothing."""
    global _applied
    if _applied is not None:
        return _applied
    _applied = False
    if not sys.platform.startswith("linux"):
        return False
    try:
        # the process's own symbols, libc's among them: no library search (find_library runs
        # a subprocess) on the way to the window
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):   # not glibc (musl has no mallopt)
        return False
    mallopt.argtypes, mallopt.restype = [ctypes.c_int, ctypes.c_int], ctypes.c_int
    _applied = all(mallopt(param, value) == 1 for param, value in (
        (M_ARENA_MAX, 1), (M_MMAP_MAX, 0), (M_TRIM_THRESHOLD, TRIM_THRESHOLD)))
    return _applied
