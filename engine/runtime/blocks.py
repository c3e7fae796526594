"""How large one block of attention scores may be, decided in one place by the device it runs on.

Every long computation over a recording (the overview's pooling, Head detail's viewport, the
strongest keys) computes scores a block of query rows at a time. What a good block is
depends on the device, by orders of magnitude:

- a CPU wants the block to stay in its cache through matmul, mask and pooling: 4 MB of
  float32 scores (64 MB measured 3.7x slower on 2 cores); the strongest keys, whose ops each
  wait on every thread, prefer fewer, larger blocks (32 MB);
- a GPU wants few large launches: at 32 heads x 32k keys a 4 MB block is a single query row,
  and the 8,192-token overview took 17.3 s in such blocks on an H200 against 0.59 s in 1 GB
  ones. Its block is a share of the memory free on that GPU now (each block's scores live
  beside one or two temporaries of the same size), at most ``GPU_MAX_BYTES``.

``forced(bytes)`` sets the block for the work done inside it, on every device: tests run the
same code with a tiny and a huge budget and check the numbers do not change.
"""
from __future__ import annotations

import contextlib
from contextvars import ContextVar

import torch

from attnscope.engine.runtime.free_memory import free_bytes

CPU_SCORE_BYTES = 4 * 2**20        # the overview's pooling on a CPU: cache-sized
CPU_VIEW_BYTES = 64 * 2**20        # Head detail's viewport on a CPU: one head's rows, pooled at once
CPU_SELECT_BYTES = 32 * 2**20      # strongest keys on a CPU: fewer, larger blocks
GPU_MAX_BYTES = 2**30              # one GPU block at most (larger gains nothing: launches are few already)
GPU_MIN_BYTES = 32 * 2**20         # below this a GPU is launch-bound; a card that cannot spare it fails later anyway
GPU_FREE_SHARE = 1 / 8             # of the free memory: the scores, their temporaries, and room for the rest
OTHER_BYTES = 64 * 2**20           # mps and any other accelerator: no free-memory query, a middle size

_FORCED: ContextVar[int | None] = ContextVar("attnscope_forced_block", default=None)


@contextlib.contextmanager
def forced(nbytes: int):
    """Every block computed inside is ``nbytes`` of float32 scores, whatever the device."""
    token = _FORCED.set(max(4, int(nbytes)))
    try:
        yield
    finally:
        _FORCED.reset(token)


def score_block_bytes(device: torch.device, purpose: str = "pool") -> int:
    """Bytes of float32 scores one block may hold on ``device``. ``purpose``: "pool" (the
    overview's tiles), "view" (Head detail's viewport) or "select" (the strongest keys)."""
    forced_now = _FORCED.get()
    if forced_now is not None:
        return forced_now
    device = torch.device(device)
    if device.type == "cpu":
        return {"select": CPU_SELECT_BYTES, "view": CPU_VIEW_BYTES}.get(purpose, CPU_SCORE_BYTES)
    if device.type != "cuda":
        return OTHER_BYTES
    return int(min(GPU_MAX_BYTES, max(GPU_MIN_BYTES, free_bytes(device) * GPU_FREE_SHARE)))


def rows_per_block(device: torch.device, cells_per_row: int, purpose: str = "pool") -> int:
    """How many query rows of ``cells_per_row`` float32 scores (heads x keys) make one block."""
    return max(1, score_block_bytes(device, purpose) // (4 * max(1, cells_per_row)))


def causal_rows(cells: int, seen: int) -> int:
    """How many query rows of a causal block fit ``cells`` scores a head, when its first row sees
    ``seen`` keys and the block is scored up to its last row: the most n with n (seen + n) <= cells
    (at least one row). A block whose width grew with its rows was once sized by its first row
    only: on a GPU the first block of an overview at 32k tokens would have been every row x
    every key."""
    n = int((-seen + (seen * seen + 4 * cells) ** 0.5) / 2)
    while n > 1 and n * (seen + n) > cells:        # the float root can land one row over
        n -= 1
    return max(1, n)
