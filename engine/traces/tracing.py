"""Text in, a trace out: the one entry point the window's worker and the CLI use to look at a model.

The adapter frames the text as the model reads it (and says what it cut or did not know);
what the Run will need is estimated and a Run that cannot fit is refused with the numbers
(engine.traces.estimate); the forward runs under the seam's recorder, with the fused
kernel, reporting each attention site it passes and stopping there when asked; the trace is
computed from the recorded queries and keys. Empty text is refused with a clear message.
"""
from __future__ import annotations

import contextlib

import torch

from attnscope.engine.decoding.greedy import OWN_OUTPUT_TOKENS, request
from attnscope.engine.inputs import InputError, check_callback
from attnscope.engine.kinds import NOT_SOFTMAX
from attnscope.engine.interventions.spec import applied, marked, notes_of
from attnscope.engine.loading.loaded import LoadedModel
from attnscope.engine.seam import SeamHook, hooks, recording
from attnscope.engine.traces.base import RunCancelled
from attnscope.engine.traces.dense import DenseTrace
from attnscope.engine.traces.estimate import check_run
from attnscope.engine.traces.recorded import RecordedTrace
from attnscope.engine.traces.words import merged_tokens, word_groups


class _Progress(SeamHook):
    """Says how many of the forward's attention sites have run, and stops it when asked."""

    def __init__(self, total: int, report=None, stop=None):
        self.total, self.done, self.report, self.stop = total, 0, report, stop

    def see(self, call) -> None:
        if self.stop is not None and self.stop():
            raise RunCancelled("The Run was stopped.")
        self.done += 1
        if self.report is not None:
            self.report(("run", self.done, self.total))


@contextlib.contextmanager
def stoppable(stop=None):
    """Any forward inside the block (a logit lens, a continuation, an effect's two forwards)
    ends at its next attention site once ``stop()`` is true (RunCancelled), as a Run does: the
    window's superseded jobs let go of the model thread within a layer, not after a whole job."""
    with hooks(_Progress(0, None, stop)):
        yield


@torch.no_grad()
def trace_text(loaded: LoadedModel, text: str, target: str | None = None, pair: str | None = None,
               max_new_tokens: int = OWN_OUTPUT_TOKENS, merge_subwords: bool = False, report=None, stop=None,
               interventions=None, value_weighted: bool = False):
    """Run ``loaded`` on ``text`` and return what every head attended to.

    encoder-decoders: ``target`` is an optional target prefix; without one the model
    translates greedily first, so the trace shows the attention behind its own output.
    encoders: ``pair`` is an optional second sentence (segment B). ``merge_subwords`` joins
    word pieces into words (engine.traces.words). ``report`` gets ("run", sites done, sites)
    as the forward passes each attention site; ``stop()`` true ends it (RunCancelled).
    ``interventions`` (engine.interventions) change the model for the framing (a translation
    is the changed model's) and the forward; knocked-out cells read 0 in the trace.
    ``value_weighted``: rows of alpha_ij ||f(x_j)|| (engine.traces.value_weighted),
    over word pieces (never merged: each piece has its own value vector). ``text`` may be a
    Prompt or a prepared request (engine.decoding.greedy.request): its door is not passed again."""
    report, stop = check_callback(report, "report"), check_callback(stop, "stop")
    prepared = request(loaded, text, target, pair, interventions, max_new_tokens=max_new_tokens)
    loaded, adapter, framed = prepared.loaded, prepared.adapter, prepared.framed
    loaded.model.eval()
    facts = adapter.run_facts()          # asked once: the estimate's numbers and the progress's count of sites
    check_run(facts, framed, loaded.name)      # the dense fallback too: its weights held whole, refused with the numbers
    if adapter.dense:      # its own attention classes: eager's weights (engine.adapters.hf_dense)
        if value_weighted or merge_subwords:
            raise InputError(f"{loaded.name}: value-weighted or merged rows need attnscope's attention seam, and "
                             "this family is drawn from its own attention weights.")
        weights, notes = adapter.dense_weights(framed)                   # {kind: (L, H, T, T)}
        return DenseTrace(loaded.name, loaded.family, weights, source_tokens=framed.source_tokens,
                          target_tokens=framed.target_tokens, notes=notes)
    merge_subwords = merge_subwords and not value_weighted
    progress = _Progress(facts.sites, report, stop)
    # The progress (and stop) hook before the recorder: a call is counted, or the Run stopped, before
    # it is computed, and the recorder is the last to see it, once computed (engine.seam.attend's Recorder).
    with applied(interventions) as changes, hooks(progress), recording(keep_values=value_weighted, lse=True) as rec:
        adapter.forward(framed, last_only=True)            # the attention is kept, not the logits
    rec.calls = marked(changes, rec.calls)     # a knockout's blocked cells read 0, as the forward used them
    calls = {kind: rec.layers(kind) for kind in rec.kinds()}
    src, tgt, groups = framed.source_tokens, framed.target_tokens, None
    notes = list(framed.notes) + notes_of(changes)    # e.g. a query the knockout left no key
    if value_weighted and any(k in NOT_SOFTMAX for k in calls):
        calls = {k: c for k, c in calls.items() if k not in NOT_SOFTMAX}
        notes.append("Value-weighted attention covers the softmax layers only: a linear layer's effective attention "
                     "has no weights to scale by its values' norms.")
    if merge_subwords:
        groups = {"source": word_groups(src), "target": word_groups(tgt)}
        src, tgt = merged_tokens(src, groups["source"]), merged_tokens(tgt, groups["target"])
        notes.append("Word pieces merged into words: attention to a word is the sum over its pieces, "
                     "attention from a word is the mean over its pieces.")
    trace = RecordedTrace(calls, model_name=loaded.name, family=loaded.family, source_tokens=src, target_tokens=tgt,
                          notes=notes, groups=groups,
                          pieces={"source": framed.source_tokens, "target": framed.target_tokens})
    if value_weighted:
        from attnscope.engine.traces.value_weighted import value_weighted as weighed

        return weighed(trace.densify(), calls, adapter)
    return trace.densify()
