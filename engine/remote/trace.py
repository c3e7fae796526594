"""RemoteTrace: a Run on a model served elsewhere, read by every view like a recording.

It holds what one nnsight trace brought back (engine.remote.server): each layer's k, each
row's log-sum-exp, the overview's pixels at the size asked, and q (with its rows of mask and
bias) for the rows fetched, by default the last ones: an engine.traces.partial.PartialTrace,
which computes any block over rows here as exp(q_i k_j * scale + b_ij - lse_i). A block over
rows not here first fetches them with a new remote job (``fetch_rows``: what will travel and
the last job's time are said before it goes), then keeps them; so does an overview of another
size. Such a job reports ``("fetch", 0, 1)`` as it goes and ``("fetch", 1, 1)`` when it is
back or stopped (``report``); ``stop_fetch()`` (any thread) stops the one in flight: nnsight
cannot call a job back, so its answer is dropped when it comes, nothing of it kept, and the
view that asked hears FetchStopped. Saved, it is a recording that keeps which rows are exact
(engine.traces.recording_file); once every row is fetched, a whole recording (``whole_recording``).
"""
from __future__ import annotations

import threading

from attnscope.engine.errors import RemoteJobError
from attnscope.engine.remote.estimate import check_travel, travel_estimate
from attnscope.engine.traces.base import RunCancelled
from attnscope.engine.traces.capabilities import Fetcher
from attnscope.engine.traces.estimate import duration
from attnscope.engine.traces.partial import PartialTrace, RowsNotHeld


class FetchStopped(RowsNotHeld, RunCancelled):
    """A job for rows or pixels stopped by the user: nothing of it kept. A RunCancelled (work
    stopped), and a RowsNotHeld, so a view that still asks says it in place of its drawing."""


class RemoteTrace(PartialTrace):
    def __init__(self, session, ids: list[int], layers: list[dict], rows: tuple[int, int], *, model_name: str,
                 family: str, tokens: list[str], notes: list[str] | None = None, say=None, interventions=None):
        """``layers``: the first job's per-layer dicts (engine.remote.server.reduce_call), with q
        for queries ``rows``; ``tokens`` label both axes (a decoder's). ``say(text)`` hears what
        a later job will bring back before it is sent."""
        self.session, self.ids, self.say = session, list(ids), say
        self.interventions = interventions            # every job of this trace runs under them
        self.jobs = 1
        self.received = 0
        self.report = None                            # report(("fetch", done, 1)) around a later job
        self._stopping = threading.Event()            # set by stop_fetch: the job in flight is dropped
        super().__init__(layers, rows, model_name=model_name, family=family, tokens=tokens, notes=notes)

    def _bring_rows(self, rows: tuple[int, int]) -> None:
        """Fetch q of ``rows`` with one remote job, saying first what will travel and how long
        the last job took."""
        config = self.session.loaded.model.config
        masked = not all(f["causal"] for f in self._facts)
        travel = travel_estimate(config, len(self.ids), rows[1] - rows[0], None, self._k[0].element_size(),
                                 masked, keep_k=False, parameters=self.session.loaded.n_parameters)
        check_travel(travel, self.model_name)
        if self.say is not None:
            last = self.session.last_seconds
            self.say(f"Fetching query rows {rows[0]:,}-{rows[1] - 1:,} of {self.model_name}: {travel.describe()}"
                     + (f"; the last job took {duration(last)}." if last is not None else "."))
        self._keep(self._job(rows, [], f"query rows {rows[0]:,}-{rows[1] - 1:,}").layers, rows)

    def _bring_overview(self, size: int, how: str) -> None:
        """The overview at another size or pooling: one job (a size that draws every token: the
        rows, cheaper than every weight)."""
        t = len(self.target_tokens)
        if size >= t:
            self.fetch_rows(0, t)
            return
        self._keep(self._job(None, [(size, how)], f"the overview at {size} pixels").layers, None)

    def stop_fetch(self) -> None:
        """Stop the job for rows or pixels in flight (from any thread): its answer is dropped."""
        self._stopping.set()

    @property
    def fetcher(self) -> Fetcher:
        """Its later jobs followed (``report``) and stopped (``stop_fetch``) through one object."""
        return Fetcher(self, lambda report: setattr(self, "report", report), self.stop_fetch)

    def _job(self, rows: tuple[int, int] | None, overviews: list[tuple[int, str]], what: str):
        """One more job of this trace (its interventions, no k), reported around; FetchStopped,
        with nothing counted or kept, when ``stop_fetch`` was called while it was out."""
        self._stopping.clear()
        if self.report is not None:
            self.report(("fetch", 0, 1))
        try:
            job = self.session.run(self.ids, rows, overviews, keep_k=False, interventions=self.interventions)
        finally:
            if self.report is not None:
                self.report(("fetch", 1, 1))
        if self._stopping.is_set():
            raise FetchStopped(f"Fetching {what} of {self.model_name} was stopped; nothing of it was kept, and a "
                               "view asks again when it is drawn again.")
        self.received += job.received
        self.jobs += 1
        return job

    def _incomplete(self, why: str) -> Exception:
        return RemoteJobError(why)
