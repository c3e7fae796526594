"""Text in, a RemoteTrace out: the Run of an ``ndif:`` model, one nnsight trace.

The adapter frames the text as for a Run here (the same tokens); what will travel back is
estimated and a job NDIF would stop, or this machine could not hold, is refused with the
numbers before anything is sent; then one job brings back k, each row's log-sum-exp, the
overview's pixels at ``overview`` pixels a side and q for the last ``rows`` queries.
"""
from __future__ import annotations

import weakref

from attnscope.engine.decoding.greedy import request
from attnscope.engine.errors import RemoteJobError
from attnscope.engine.inputs import InputError, check_callback
from attnscope.engine.interventions.spec import malformed, problem
from attnscope.engine.kinds import DECODER_SELF
from attnscope.engine.loading.loaded import LoadedModel
from attnscope.engine.remote.estimate import check_travel, model_dims, travel_estimate
from attnscope.engine.remote.jobs import Session, remote_of
from attnscope.engine.remote.trace import RemoteTrace
from attnscope.engine.seam import Site
from attnscope.engine.traces.base import RunCancelled

DEFAULT_ROWS = 256          # the queries whose q comes back with the Run: the last ones
DEFAULT_OVERVIEW = 256      # the overview's pixels a side, pooled there by max

_sessions: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()   # model -> its nnsight Session


def session_for(loaded: LoadedModel) -> Session:
    """The nnsight session of an ``ndif:`` model, made once (nnsight imported then)."""
    if remote_of(loaded) is None:
        raise RemoteJobError(f"{loaded.name} runs here, not on NDIF: open it as ndif:{loaded.name} to run it there.")
    if loaded.model not in _sessions:
        _sessions[loaded.model] = Session(loaded)
    return _sessions[loaded.model]


def _reads_decoders(loaded) -> None:
    """RemoteJobError unless ``loaded`` (or an adapter's model) is a decoder: before any framing."""
    loaded = getattr(loaded, "loaded", loaded)
    if loaded.role != "decoder":
        raise RemoteJobError(f"{loaded.name} is an {loaded.role}; remote Runs read decoders (the language models "
                             "NDIF serves).")


def trace_remote(loaded: LoadedModel, text: str, rows: int | None = DEFAULT_ROWS, overview: int = DEFAULT_OVERVIEW,
                 report=None, stop=None, say=None, interventions=None) -> RemoteTrace:
    """Run the ``ndif:`` model ``loaded`` on ``text`` where it is served; ``rows``: how many of
    the last queries bring their q back (the others are fetched when a view asks; None: every
    row, a whole recording); ``say(text)``
    hears what a job brings back before it is sent; ``report(("run", 0, 1))`` as it starts and
    ``("run", 1, 1)`` when it is back; ``stop()`` true before sending ends it (RunCancelled).
    ``interventions`` (engine.interventions: heads ablated, links knocked out) change the
    forward there, at the same op, through the seam's own hooks; every later job of the trace
    runs with them too, and knocked-out cells read 0."""
    report, stop, say = check_callback(report, "report"), check_callback(stop, "stop"), check_callback(say, "say")
    framed = request(loaded, text, remote=True, fits=_reads_decoders).framed     # checked once, framed once
    _reads_decoders(loaded)
    session = session_for(loaded)
    ids = framed.target_ids
    t = len(ids)
    check_remote_interventions(interventions, loaded, t)
    asked = (0 if rows is None else max(0, t - max(0, int(rows))), t)
    masked = any(getattr(c, "sliding_window", None) or getattr(c, "attention_chunk_size", None)
                 for c in (loaded.model.config.get_text_config(),))
    first = next(iter(loaded.model.parameters()))
    travel = travel_estimate(loaded.model.config, t, asked[1] - asked[0], overview, first.element_size(), masked,
                             parameters=loaded.n_parameters)
    check_travel(travel, loaded.name)
    if say is not None:
        say(f"Running {loaded.name} on {t:,} tokens: {travel.describe()}.")
    if stop is not None and stop():
        raise RunCancelled("The Run was stopped.")
    if report is not None:
        report(("run", 0, 1))
    job = session.run(ids, asked, [(overview, "max")], interventions=interventions)
    if report is not None:
        report(("run", 1, 1))
    notes = list(framed.notes) + job.notes + [f"Run {'here through nnsight (ATTNSCOPE_NDIF=local)' if session.local else 'on NDIF'}"
                                  f": {job.received:,} bytes came back in {job.seconds:.1f} s; q of query rows "
                                  f"{asked[0]:,}-{asked[1] - 1:,} is here, others are fetched when a view asks."]
    trace = RemoteTrace(session, ids, job.layers, asked, model_name=loaded.name, family=loaded.family,
                        tokens=framed.target_tokens, notes=notes, say=say, interventions=interventions)
    trace.received = job.received
    return trace


def check_remote_interventions(spec, loaded: LoadedModel, tokens: int) -> None:
    """InputError in one sentence for interventions that are malformed or name a layer, head or
    position this model and text lack: engine.interventions' own checks, the heads read from
    the config (a model served by NDIF cannot run the probe forward here)."""
    if spec is None:
        return
    why = malformed(spec)
    if why is None and not spec.empty:
        layers, heads, _, _ = model_dims(loaded)
        why = problem(spec, {Site(DECODER_SELF, layer): heads for layer in range(layers)},
                      {DECODER_SELF: (tokens, tokens)})
    if why is not None:
        raise InputError(f"These interventions do not fit {loaded.name}: {why}.")
