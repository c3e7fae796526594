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
from attnscope.engine.kinds import KEY_SIDE, KINDS, QUERY_SIDE
from attnscope.engine.runtime.free_memory import gib  # the one byte formatter
from attnscope.engine.traces.capabilities import Fetcher, Recording

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

    def layer(self, kind: str, layer: int) -> np.ndarray:
        """(H, Tq, Tk) float32: every head of one layer."""
        raise NotImplementedError

    def weights(self, kind: str) -> np.ndarray:
        """(L, H, Tq, Tk) float32: every head of one kind at once (views that draw all heads).
        TraceTooLarge when that would not fit: ask for thumbnails, tiles or rows instead."""
        from attnscope.engine.traces import reading   # reading imports this module

        return reading.dense_weights(self, kind)

    def thumbnails(self, kind: str, size: int, how: str = "max", report=None, stop=None) -> Thumbnails:
        """Every head of ``kind`` pooled to at most ``size`` x ``size`` (engine.traces.reading.pooled_thumbnails)."""
        from attnscope.engine.traces import reading   # reading imports this module

        return reading.pooled_thumbnails(self, kind, size, how, report, stop)

    def row_blocks(self, kind: str, layer: int, step: int | None = None):
        """(first row, (H, r, Tk) exact weights) blocks of query rows (engine.traces.reading.row_blocks)."""
        from attnscope.engine.traces import reading   # reading imports this module

        return reading.row_blocks(self, kind, layer, step)

    def tile(self, kind: str, layer: int, head: int, rows: slice, cols: slice) -> np.ndarray:
        """(r, c) exact weights of one head for queries ``rows`` and keys ``cols``."""
        return self.head(kind, layer, head)[rows, cols]

    def block(self, kind: str, layer: int, heads: list[int], rows: slice, cols: slice):
        """(h, r, c) float32 torch tensor of exact weights, on ``device``: what views pool
        (engine.traces.viewport). A recorded trace computes it on the model's device."""
        import torch

        return torch.from_numpy(np.stack([self.tile(kind, layer, h, rows, cols) for h in heads]))

    @property
    def device(self):
        """Where ``block`` computes: the host for traces held as arrays."""
        import torch

        return torch.device("cpu")

    def dense_bytes(self, kind: str) -> int:
        """What every head of ``kind`` takes as float32."""
        from attnscope.engine.traces import reading   # reading imports this module

        return reading.dense_bytes(self, kind)

    def check_dense(self, kind: str) -> None:
        """TraceTooLarge, with the numbers, when every head of ``kind`` at once would not fit."""
        from attnscope.engine.traces import reading   # reading imports this module

        reading.check_dense(self, kind)

    # ---- what a trace can do: asked once, never probed (engine.traces.capabilities) ------
    @property
    def recording(self) -> Recording | None:
        """A ``Recording`` (calls, strongest keys, a time estimate's sample; it can be saved) for a
        trace computed from a Run's recorded queries and keys; None for weights held as arrays."""
        return None

    @property
    def fetcher(self) -> Fetcher | None:
        """A ``Fetcher`` (complete, follow, stop) for a trace that may lack query rows; None else."""
        return None

    @property
    def groups(self) -> dict[str, list[int]]:
        """side -> the word index of each piece, for the sides whose pieces are merged into words;
        empty when the tokens are the pieces fed."""
        return {}

    @property
    def pieces(self) -> dict[str, list[str]]:
        """side -> the tokens fed to the model (word pieces, before any merging)."""
        return {"source": self.source_tokens, "target": self.target_tokens}

    def held_bytes(self) -> int:
        """What this trace holds of computed or stored weights, in bytes."""
        return 0

    # ---- shared ---------------------------------------------------------------------------
    def head(self, kind: str, layer: int, head: int) -> np.ndarray:
        """(Tq, Tk) for one head."""
        return self.layer(kind, layer)[head]

    def row(self, kind: str, layer: int, head: int, query: int) -> np.ndarray:
        """(Tk,) the weights of one query of one head."""
        return self.head(kind, layer, head)[query]

    def query_tokens(self, kind: str) -> list[str]:
        return self.source_tokens if QUERY_SIDE[kind] == "source" else self.target_tokens

    def key_tokens(self, kind: str) -> list[str]:
        return self.source_tokens if KEY_SIDE[kind] == "source" else self.target_tokens

    @staticmethod
    def in_order(kinds) -> list[str]:
        return [k for k in KINDS if k in kinds]


# A trace asked to run, decode or read a lens says what it is (engine.adapters.chat.check_prompt).
NOT_A_MODEL_SAYS[AttentionTrace] = (
    "This is a recording (the attention of one Run, without the model's weights): it can be drawn and exported, "
    "but nothing can {what} on it; open the model it was recorded from.")
