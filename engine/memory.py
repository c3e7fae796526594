"""Keep the memory a Run frees for the next Run, instead of handing it back to the system.

A Run that returns attention weights holds every layer's weights at once: MiniLM at 512
tokens, 6 layers x 12 heads x 512 x 512 float32 = 75 MB that live for one forward. glibc's
malloc hands such blocks back to the kernel when they are freed (a block over its mmap
threshold is unmapped; the free top of a heap is trimmed; a worker thread's whole heap is
deleted once it is empty), so the next Run faults the same memory in again, page by page,
and the kernel zeroes each page. Measured here on the model thread, MiniLM at 512 tokens
with weights: 3,000-23,000 page faults per forward and 105-141 ms, against 2 faults and
94 ms for the same forward without weights; with ``keep_freed_memory`` the forward with
weights took 2 faults and 94 ms, the same as without.

The price is that the process keeps up to ``TRIM_THRESHOLD`` of freed memory mapped after a
long text, which a desktop tool that will run the next text can afford. Only glibc (Linux)
has these switches; elsewhere this does nothing.
"""
from __future__ import annotations

import ctypes
import ctypes.util
import sys

# mallopt's parameter numbers, from glibc's <malloc.h>
M_TRIM_THRESHOLD = -1
M_MMAP_THRESHOLD = -3
M_ARENA_MAX = -8

MMAP_THRESHOLD = 32 * 1024 * 1024    # glibc's largest: blocks up to 32 MB come from the heap
TRIM_THRESHOLD = 512 * 1024 * 1024   # free memory at the heap's top kept up to this much

_applied: bool | None = None


def keep_freed_memory() -> bool:
    """Tell glibc's malloc to keep freed memory for reuse; True if it took the settings.

    Call it first thing in the process, before any thread starts: ``M_ARENA_MAX = 1`` puts
    every thread that allocates later on the main heap (the one ``M_TRIM_THRESHOLD``
    governs), where a thread created earlier keeps the arena it already has. Calling it
    again does nothing."""
    global _applied
    if _applied is not None:
        return _applied
    _applied = False
    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        mallopt = libc.mallopt
    except (OSError, AttributeError):   # not glibc (musl has no mallopt)
        return False
    mallopt.argtypes, mallopt.restype = [ctypes.c_int, ctypes.c_int], ctypes.c_int
    _applied = all(mallopt(param, value) == 1 for param, value in (
        (M_ARENA_MAX, 1), (M_MMAP_THRESHOLD, MMAP_THRESHOLD), (M_TRIM_THRESHOLD, TRIM_THRESHOLD)))
    return _applied
