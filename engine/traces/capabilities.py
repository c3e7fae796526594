"""What a trace can do beyond drawing, as small optional objects asked once (issue 54).

Why: the base trace carried every implementation's specialities (``recorded``, ``call``,
``strongest_keys``, ``follow_fetches`` ...) as members that most traces answered with a
default; a caller could not tell which to ask. Now a caller asks ``trace.recording`` or
``trace.fetcher`` once and gets an object, or None where the trace has no such thing:

- ``Recording``: a trace computed from a Run's recorded queries and keys (engine.traces.recorded,
  engine.traces.partial), which answers with itself typed as this protocol: its calls, each
  query's strongest keys computed for many heads at once, a sample call for a time estimate; it
  can be saved (engine.traces.recording_file).
- ``Fetcher``: a trace holding q of some query rows only (a remote Run's, or its recording):
  whether every row is here, and for a remote Run following and stopping its later jobs.
- ``FasterPaths``: a trace's own faster way to one of the algorithms of engine.traces.reading
  (the fused GPU pooling of the overview, arrays already held whole), offered by name. Only
  engine.traces.reading asks for it, once per algorithm, and falls back to the generic body
  over ``block`` where a path is None: no trace overrides a template.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    import numpy as np

    from attnscope.engine.seam.call import AttentionCall


class Recording(Protocol):
    """A recorded trace's own work, asked through ``trace.recording``: a trace computed from a
    Run's queries and keys (engine.traces.recorded, engine.traces.partial) answers with itself,
    typed as this protocol, so a caller is held to these members. It was a wrapper that forwarded
    each member to the trace: a second object and a second room on every ask, saying nothing the
    type does not (issue 54's walk: the drawing lane's one question went trace -> wrapper -> trace)."""

    @property
    def batch_index(self) -> int:
        """Which example of the recorded batch the trace reads."""
        ...

    @property
    def groups(self) -> dict[str, list[int]]:
        """side -> the word index of each piece, for the sides whose pieces were merged into words
        (engine.traces.words); empty when the tokens are the pieces fed."""
        ...

    @property
    def pieces(self) -> dict[str, list[str]]:
        """side -> the tokens fed to the model (word pieces, before any merging)."""
        ...

    def call(self, kind: str, layer: int) -> "AttentionCall":
        """The recorded call (engine.seam.AttentionCall: q, k, mask, bias, scale) behind one layer."""
        ...

    def held_call(self, kind: str, layer: int) -> "AttentionCall | None":
        """The call behind one layer over the query rows held, bringing none (a time estimate's
        sample); None when no row is held."""
        ...

    def computes_on_demand(self, kind: str) -> bool:
        """Whether drawing ``kind`` computes weights rather than reads arrays held whole."""
        ...

    def piece_span(self, kind: str) -> tuple[int, int]:
        """How many query and key pieces (before word merging) the recording covers."""
        ...

    def strongest_keys(self, kind: str, layer: int, heads: list[int], rows: slice, k: int,
                       keys: "np.ndarray | None" = None) -> "tuple[np.ndarray, np.ndarray, np.ndarray] | None":
        """Each query's ``k`` strongest keys for several heads at once (engine.inspection.top_keys):
        (h, r, k) key indices, (h, r, k) weights and (h, r) what each row leaves, or None
        where this trace reads them head by head."""
        ...


class Fetcher:
    """A trace that may lack query rows, asked through ``trace.fetcher``: a remote Run's trace
    brings them with later jobs (``follow``, ``stop``); a partial recording read back cannot."""

    def __init__(self, trace, follow=None, stop=None):
        self._trace, self._follow, self._stop = trace, follow, stop

    @property
    def complete(self) -> bool:
        """Whether q of every query row is here."""
        return self._trace.complete

    def follow(self, report) -> bool:
        """Hand ``report(("fetch", done, total))`` the later jobs the trace sends; False when it sends none."""
        if self._follow is None:
            return False
        self._follow(report)
        return True

    def stop(self) -> None:
        """Stop the fetch in flight, if any (from any thread): its answer is dropped."""
        if self._stop is not None:
            self._stop()


@dataclass(frozen=True)
class FasterPaths:
    """A trace's faster ways to algorithms of engine.traces.reading, each None where the
    generic body over ``block`` serves; each takes the arguments of the reading function of
    its name, less the trace. A path gives the same numbers as the generic body (the tests of
    each trace compare them), only sooner or with less memory."""
    weights: Callable | None = None      # (kind) -> (L, H, Tq, Tk) float32: arrays held, or kept for the next view
    layer: Callable | None = None        # (kind, layer) -> (H, Tq, Tk) float32: held, or computed and cached
    head: Callable | None = None         # (kind, layer, head) -> (Tq, Tk) float32
    thumbnails: Callable | None = None   # (kind, size, how, report, stop) -> Thumbnails: fused pooling, pixels held
