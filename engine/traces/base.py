"""AttentionTrace: the narrow protocol every view draws from (DESIGN.md, "A trace is a narrow
protocol").

A trace answers for one forward on one example: which attention kinds it has, their shapes,
the tokens that label each axis, and any block of exact weights through one primitive,
``block``. Everything read from it (weights, a layer, a head, a row, a tile, blocks of rows,
the pooled overview, the dense check) is a free function of engine.traces.reading over those
members; what a trace can do beyond drawing is an optional object asked once (``recording``,
``fetcher``, ``faster``: engine.traces.capabilities). Implementations: ``DenseTrace`` (arrays
held in full: small Runs kept from older files, time-lapse probes, exports read back),
``RecordedTrace`` (computed from the queries and keys the seam recorded), ``PartialTrace`` and
engine.remote's ``RemoteTrace`` (q of some rows only), ``ValueWeightedTrace``. A view never asks
which one it has. It was a base class of 32 members whose algorithms called subclass hooks that
called ``super()`` back (issue 54); it is 12 members now, and no member has a body.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Protocol, runtime_checkable

import numpy as np

from attnscope.engine.adapters.chat import NOT_A_MODEL_SAYS
from attnscope.engine.runtime.free_memory import gib  # the one byte formatter

if TYPE_CHECKING:
    import torch

    from attnscope.engine.traces.capabilities import FasterPaths, Fetcher, Recording

# A view that needs every head of a kind at once stops here. Past it, Head statistics and
# Rollout sum over blocks of rows (exact), Head lines draws each query's strongest keys, and the
# overview and Head detail pool. It was 2 GB: a 4k-token text of 4 x 8 heads (2.1 GB) was read
# whole, with its temporaries twice that, and under a heap that keeps what it frees
# (engine.runtime.memory) the window stayed 5-6 GB larger after each Run.
DENSE_VIEW_BYTES = 512 * 2**20


def layer_started(layer: int, layers: int, report=None, stop=None) -> None:
    """Between two layers of a long computation: say how far it is, end it when asked."""
    if stop is not None and stop():
        raise RunCancelled("Stopped.")
    if report is not None and layer:
        report(("overview", layer, layers))


def sizes_apart(need: float, limit: float) -> tuple[str, str]:
    """``need`` and ``limit`` as engine.runtime.free_memory.gib writes them, with the
    digits that tell them apart (not "2.0 GiB, more than the 2.0 GiB")."""
    digits = next(d for d in (1, 2, 3, 6) if gib(need, d) != gib(limit, d) or d == 6)
    return gib(need, digits), gib(limit, digits)


class RunCancelled(Exception):
    """Work on a trace stopped because the user asked or newer work superseded it (a Run's
    forward, the overview's pooling of every head); nothing of it is kept."""


class TraceTooLarge(ValueError):
    """A whole-kind view asked of a trace too long to hold every head at once, said with numbers."""


def array_block(layer: np.ndarray, heads: list[int], rows: slice, cols: slice):
    """(h, r, c) float32 torch tensor on the host from one layer held as arrays (H, Tq, Tk): the
    ``block`` of traces that hold or compute whole layers (engine.traces.dense, value_weighted,
    a recorded trace's layers computed at once). Only the block is copied."""
    import torch

    return torch.from_numpy(np.stack([np.asarray(layer[h][rows, cols], np.float32) for h in heads]))


@runtime_checkable   # engine.inputs.check_kind asks isinstance(x, AttentionTrace) at each door
class AttentionTrace(Protocol):
    """What a trace is, in 12 members, each said once and none with a body. Why each is here:

    - ``kinds``: the attention kinds held, in canonical order: what a view may ask for.
    - ``shape(kind)``: (L, H, Tq, Tk): the bounds of every ask, and every size check.
    - ``source_tokens``, ``target_tokens``: the labels of the axes (which labels which axis of
      a kind: engine.kinds.QUERY_SIDE, read by reading.query_tokens / key_tokens).
    - ``block(kind, layer, heads, rows, cols)``: (h, r, c) float32 torch tensor of exact
      weights on ``device``, the one primitive every algorithm of engine.traces.reading reads.
    - ``device``: where ``block`` computes, so a view pools there and only pixels cross.
    - ``notes``: what the user must be told of this trace (input cut, a kernel refused ...).
    - ``model_name``, ``family``: what a trace says of itself: the model it came from, for the
      status line, exports, recording files and the sentence of a trace asked to run.
    - ``recording``, ``fetcher``, ``faster``: optional capabilities, each None where absent
      (engine.traces.capabilities): a Run's recorded calls and what they compute (word groups
      and pieces included); fetching rows not here; faster paths to reading's algorithms.

    Implementations take the capabilities' None and the host as device from ``TraceDefaults``
    where they have none."""

    model_name: str
    family: str
    source_tokens: list[str]
    target_tokens: list[str]
    notes: list[str]

    @property
    def kinds(self) -> list[str]: ...

    def shape(self, kind: str) -> tuple[int, int, int, int]: ...

    def block(self, kind: str, layer: int, heads: list[int], rows: slice, cols: slice) -> "torch.Tensor": ...

    @property
    def device(self) -> "torch.device": ...

    @property
    def recording(self) -> "Recording | None": ...

    @property
    def fetcher(self) -> "Fetcher | None": ...

    @property
    def faster(self) -> "FasterPaths | None": ...


class TraceDefaults:
    """A mixin, not the protocol: what an implementation without a capability answers (None
    each) and the host as ``device``, for traces whose blocks are cut from arrays; the class a
    trace asked to run is known by (NOT_A_MODEL_SAYS below)."""

    @property
    def device(self) -> "torch.device":
        import torch   # only when asked: a DenseTrace is held without torch

        return torch.device("cpu")

    @property
    def recording(self) -> "Recording | None":
        return None

    @property
    def fetcher(self) -> "Fetcher | None":
        return None

    @property
    def faster(self) -> "FasterPaths | None":
        return None


# A trace asked to run, decode or read a lens says what it is (engine.adapters.chat.check_prompt).
NOT_A_MODEL_SAYS[TraceDefaults] = (
    "This is a recording (the attention of one Run, without the model's weights): it can be drawn and exported, "
    "but nothing can {what} on it; open the model it was recorded from.")
