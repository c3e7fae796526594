"""AttentionTrace: the protocol every view draws from.

A trace answers for one forward on one example: which attention kinds it has, their shapes,
the tokens that label each axis, and any head, layer or row of weights as float32 numpy.
Two implementations stand behind it: ``DenseTrace`` (arrays held in full: small Runs kept
from older files, time-lapse probes, exports read back) and ``RecordedTrace`` (computed
from the queries and keys the seam recorded). A view never asks which one it has.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from attnscope.engine.adapters.chat import NOT_A_MODEL_SAYS
from attnscope.engine.runtime.free_memory import gib  # the one byte formatter
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


@dataclass
class Thumbnails:
    """Every head of one kind pooled to at most ``size`` pixels a side, and how."""
    pooled: np.ndarray        # (L, H, rows, cols) float32
    how: str                  # "max" keeps peaks, "mean" keeps mass ("exact" when nothing was pooled)
    t_query: int              # tokens the rows stand for
    t_key: int                # tokens the columns stand for
    sink: np.ndarray | None = None   # (L, H, rows) the first key's weight alone, each block of rows pooled
                                     # as ``pooled`` is: an attention sink drawn apart from the pooled keys

    @property
    def exact(self) -> bool:
        return self.pooled.shape[2:] == (self.t_query, self.t_key)


def array_block(layer: np.ndarray, heads: list[int], rows: slice, cols: slice):
    """(h, r, c) float32 torch tensor on the host from one layer held as arrays (H, Tq, Tk): the
    ``block`` of traces that hold or compute whole layers (engine.traces.dense, value_weighted,
    a recorded trace's layers computed at once). Only the block is copied."""
    import torch

    return torch.from_numpy(np.stack([np.asarray(layer[h][rows, cols], np.float32) for h in heads]))


class AttentionTrace:
    model_name: str
    family: str
    source_tokens: list[str]
    target_tokens: list[str]
    notes: list[str]

    # ---- what implementations provide ------------------------------------------------
    @property
    def kinds(self) -> list[str]:
        """The attention kinds this trace holds, in canonical order."""
        raise NotImplementedError

    def shape(self, kind: str) -> tuple[int, int, int, int]:
        """(L, H, Tq, Tk) of one kind."""
        raise NotImplementedError

    def block(self, kind: str, layer: int, heads: list[int], rows: slice, cols: slice):
        """(h, r, c) float32 torch tensor of exact weights, on ``device``."""
        raise NotImplementedError

    @property
    def device(self):
        """Where ``block`` computes: the host for traces held as arrays."""
        import torch

        return torch.device("cpu")

    @property
    def recording(self) -> Recording | None:
        return None

    @property
    def fetcher(self) -> Fetcher | None:
        return None

    @property
    def faster(self) -> FasterPaths | None:
        return None

    # ---- handed to engine.traces.reading (going: callers name reading's functions) -------
    def weights(self, kind):
        return _reading().weights(self, kind)

    def layer(self, kind, layer):
        return _reading().layer(self, kind, layer)

    def head(self, kind, layer, head):
        return _reading().head(self, kind, layer, head)

    def row(self, kind, layer, head, query):
        return _reading().row(self, kind, layer, head, query)

    def tile(self, kind, layer, head, rows, cols):
        return _reading().tile(self, kind, layer, head, rows, cols)

    def thumbnails(self, kind, size, how="max", report=None, stop=None):
        return _reading().thumbnails(self, kind, size, how, report, stop)

    def row_blocks(self, kind, layer, step=None):
        return _reading().row_blocks(self, kind, layer, step)

    def dense_bytes(self, kind):
        return _reading().dense_bytes(self, kind)

    def check_dense(self, kind):
        _reading().check_dense(self, kind)

    def query_tokens(self, kind):
        return _reading().query_tokens(self, kind)

    def key_tokens(self, kind):
        return _reading().key_tokens(self, kind)

    @property
    def groups(self):
        return _reading().groups(self)

    @property
    def pieces(self):
        return _reading().pieces(self)

    def held_bytes(self) -> int:
        return 0


def _reading():
    from attnscope.engine.traces import reading   # reading imports this module

    return reading


# A trace asked to run, decode or read a lens says what it is (engine.adapters.chat.check_prompt).
NOT_A_MODEL_SAYS[AttentionTrace] = (
    "This is a recording (the attention of one Run, without the model's weights): it can be drawn and exported, "
    "but nothing can {what} on it; open the model it was recorded from.")
