"""RemoteTrace: a Run on a model served elsewhere, read by every view like a recording.

It holds what one nnsight trace brought back (engine.remote.server): each layer's k, each
row's log-sum-exp, the overview's pixels at the size asked, and q (with its rows of mask and
bias) for the rows fetched, by default the last ones: an engine.traces.partial.PartialTrace,
which computes any block over rows here as exp(q_i k_j * scale + b_ij - lse_i). A block over
rows not here first fetches them with a new remote job (``fetch_rows``: what will travel and
the last job's time are said before it goes), then keeps them; so does an overview of another
size. Saved, it is a recording that keeps which rows are exact (engine.traces.recording_file);
once every row is fetched, a whole recording (``recording``).
"""
from __future__ import annotations

from engine.errors import RemoteJobError
from engine.remote.estimate import check_travel, travel_estimate
from engine.traces.estimate import duration
from engine.traces.partial import PartialTrace


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
        job = self.session.run(self.ids, rows, [], keep_k=False, interventions=self.interventions)
        self.received += job.received
        self.jobs += 1
        self._keep(job.layers, rows)

    def _bring_overview(self, size: int, how: str) -> None:
        """The overview at another size or pooling: one job (a size that draws every token: the
        rows, cheaper than every weight)."""
        t = len(self.target_tokens)
        if size >= t:
            self.fetch_rows(0, t)
            return
        job = self.session.run(self.ids, None, [(size, how)], keep_k=False, interventions=self.interventions)
        self.received += job.received
        self.jobs += 1
        self._keep(job.layers, None)

    def _incomplete(self, why: str) -> Exception:
        return RemoteJobError(why)
