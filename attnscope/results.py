"""The experiments from Python, each returning a typed answer with ``.to_json()``.

Why a module of its own: ``attnscope why``, ``lens``, ``intervene``, ``patch``, ``record`` and
``atlas`` print exactly the object these answers' ``to_json()`` give, because the commands call
these functions (one way to do each thing). A function takes a model from ``attnscope.load`` and
answers bad input with the project's own error in one sentence, as the engine's doors do.

    >>> import attnscope
    >>> gpt = attnscope.load("gpt", device="cpu")
    >>> attnscope.lens(gpt, "to be or not to be").layers[-1]["top"][0]   # [[token id, p], ...] of position 0
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable


def _model(model: Any, who: str):
    """``model`` if it is a loaded model (attnscope.load), else InputError naming ``who``."""
    from attnscope.engine.inputs import InputError
    from attnscope.engine.loading.loaded import LoadedModel

    if not isinstance(model, LoadedModel):
        raise InputError(f"attnscope.{who} takes a model from attnscope.load, not a {type(model).__name__}.")
    return model


def _prompt(text: Any, who: str, what: str, chat: bool = False, system: str | None = None,
            target: str | None = None, pair: str | None = None):
    """The request as the engine's doors take it, built and checked once (engine.inputs.Prompt:
    ``what`` names the action in a refusal): a str, or with ``chat`` a user's turn in the
    model's own chat template (an engine Chat or Prompt is passed on as it is)."""
    from attnscope.engine.inputs import Chat, InputError, Prompt

    if not isinstance(text, (str, Chat, Prompt)):
        raise InputError(f"attnscope.{who} takes the text as a str, not a {type(text).__name__}.")
    if system is not None and not chat:
        raise InputError("A system turn belongs to a chat: pass chat=True too.")
    return Prompt.of(Chat.of(text, system=system) if chat and isinstance(text, str) else text, target, pair, what)


def model_notes(loaded) -> dict:
    """{"model_notes": ...} when the loader said something about the model (code in its folder that
    was not run, a byte tokenizer standing in, the dense fallback): every JSON answer ends with it,
    the commands' (attnscope.cli) too."""
    notes = loaded.meta.get("notes")
    return {"model_notes": notes} if notes else {}


def check_target(loaded, target) -> None:
    """A decoder prefix given to a model with none to take (what why and lens would otherwise drop)."""
    from attnscope.engine.inputs import InputError

    if target is not None and loaded.role != "encoder-decoder":
        raise InputError(f"--target is an encoder-decoder's decoder prefix, and {loaded.name} is "
                         f"{'an' if loaded.role[0] in 'ae' else 'a'} {loaded.role}, which reads --text alone: put the "
                         "whole text in --text.")


def check_predicting(loaded, needs: str) -> None:
    """InputError in one sentence when ``loaded`` is an encoder and ``needs`` (what the caller does)
    reads next-token predictions: the commands (attnscope.cli.common.open_predicting) say it too.
    A model served by NDIF (``generates`` False: it cannot be stepped here) is not an encoder."""
    from attnscope.engine.inputs import InputError

    if loaded.role == "encoder":
        raise InputError(f"{loaded.name} is an encoder: it predicts no next token, and {needs} needs a decoder or an "
                         "encoder-decoder.")


# ---- why ---------------------------------------------------------------------------------------
@dataclass(frozen=True)
class WhyAnswer:
    """One attention score split into (query source x key source) terms (engine.experiments.why)."""
    split: Any                       # engine.experiments.ScoreSplit: the terms, marginals, versus, loadings
    model_notes: dict = field(default_factory=dict)

    def to_json(self) -> dict:
        return {**self.split.as_json(), **self.model_notes}


def why(model, text, layer: int, head: int, query: int, key: int, *, kind: str | None = None,
        versus: int | None = None, loadings: bool = False, target: str | None = None, chat: bool = False,
        system: str | None = None) -> WhyAnswer:
    """Why head ``layer.head`` of ``kind`` (default: the decoder's self-attention, an encoder's)
    gives query ``query`` its weight on key ``key``: positions index the tokens the model reads,
    specials included. ``versus``: another key of the row to compare with."""
    from attnscope.engine.experiments import why as split_of

    loaded = _model(model, "why")
    check_target(loaded, target)
    prompt = _prompt(text, "why", "split", chat, system, target)
    kind = kind or ("encoder self" if loaded.role == "encoder" else "decoder self")
    split = split_of(loaded, prompt, kind, layer, head, query, key, versus=versus, loadings=loadings)
    return WhyAnswer(split, model_notes(loaded))


# ---- the logit lens ----------------------------------------------------------------------------
@dataclass(frozen=True)
class LensAnswer:
    """Each decoder layer's five likeliest next tokens at each position (the last layer: the model's own)."""
    model: str
    token_ids: list
    tokens: list
    layers: list                     # [{"layer": i, "top": [[[id, p], ...] per position]}]
    model_notes: dict = field(default_factory=dict)

    def to_json(self) -> dict:
        return {"model": self.model, "token_ids": self.token_ids, "tokens": self.tokens, "layers": self.layers,
                **self.model_notes}


def lens(model, text, *, target: str | None = None, chat: bool = False, system: str | None = None) -> LensAnswer:
    """The logit lens of ``text``: where the model is served by NDIF (``ndif:``), one job there."""
    from attnscope.engine.interventions import logit_lens
    from attnscope.engine.remote import remote_lens, remote_of

    loaded = _model(model, "lens")
    check_predicting(loaded, "the logit lens")
    check_target(loaded, target)
    prompt = _prompt(text, "lens", "read the logit lens", chat, system, target)
    read = remote_lens(loaded, prompt) if remote_of(loaded) is not None else logit_lens(loaded, prompt)
    layers = [{"layer": layer, "top": [[[int(i), float(p)] for i, p in zip(ids, ps)]
                                       for ids, ps in zip(read.top_ids[layer], read.top_p[layer])]}
              for layer in range(read.n_layers)]
    return LensAnswer(loaded.name, list(read.token_ids), list(read.tokens), layers, model_notes(loaded))


# ---- interventions -----------------------------------------------------------------------------
@dataclass(frozen=True)
class InterventionAnswer:
    """The next-token distribution at the text's last position without and with the changes."""
    model: str
    interventions: str
    effect: Any                      # engine.interventions.Effect
    model_notes: dict = field(default_factory=dict)

    def to_json(self) -> dict:
        return {"model": self.model, "interventions": self.interventions, **self.effect.as_json(), **self.model_notes}


def intervene(model, text, interventions, *, target: str | None = None, chat: bool = False,
              system: str | None = None) -> InterventionAnswer:
    """``interventions`` (attnscope.engine.interventions.Interventions: heads ablated, edges
    knocked out) applied to one forward of ``text``, against the forward without them."""
    from attnscope.engine.inputs import InputError
    from attnscope.engine.interventions import Interventions, intervention_effect

    loaded = _model(model, "intervene")
    if not isinstance(interventions, Interventions):
        raise InputError(f"attnscope.intervene takes an Interventions (attnscope.engine.interventions), not a "
                         f"{type(interventions).__name__}.")
    check_predicting(loaded, "comparing them before and after (the window ablates an encoder's heads and shows "
                             "its attention change)")
    prompt = _prompt(text, "intervene", "compare before and after", chat, system, target)
    effect = intervention_effect(loaded, prompt, interventions)
    return InterventionAnswer(loaded.name, interventions.describe(), effect, model_notes(loaded))


# ---- patching ----------------------------------------------------------------------------------
@dataclass(frozen=True)
class PatchAnswer:
    """Activation patching (or attribution patching, or direct logit attribution) of one prompt pair."""
    model: str
    result: Any                      # engine.experiments.PatchResult
    model_notes: dict = field(default_factory=dict)

    def to_json(self) -> dict:
        return {"model": self.model, **self.result.as_json(), **self.model_notes}


@dataclass(frozen=True)
class PairsAnswer:
    """Every pair of a file patched, each point normalised per pair and averaged."""
    model: str
    averaged: Any                    # engine.experiments.Averaged
    metric: str
    method: str
    noising: bool
    model_notes: dict = field(default_factory=dict)

    def to_json(self) -> dict:
        pairs = [{k: r.as_json()[k] for k in ("token_ids", "answers", "clean", "corrupt")}
                 for r in self.averaged.results]
        return {"model": self.model, "pairs": pairs, "metric": self.metric, "method": self.method,
                "noising": self.noising, "normalised": True,
                "results": {k.replace("-", "_"): v.tolist() for k, v in self.averaged.mean.items()}, **self.model_notes}


def patch(model, clean=None, corrupt=None, answers=None, *, pairs=None, what=("heads",), method: str = "exact",
          noising: bool = False, metric: str = "logit_diff", target: str | None = None,
          max_batch: int | None = None, max_seconds: float | None = None,
          progress: Callable | None = None) -> PatchAnswer | PairsAnswer:
    """Patch ``clean`` into ``corrupt`` (``answers``: the correct and the wrong answer, one token
    each, ' Mary' or 'id:N'), or every pair of ``pairs`` (engine.experiments.PromptPair, as
    read_pairs reads a TSV). ``progress(Progress)``: each estimate and step, as the command says them."""
    from attnscope.engine.experiments import PromptPair, experiment, frame_pair, over_pairs
    from attnscope.engine.inputs import InputError
    from attnscope.engine.runtime import drive

    loaded = _model(model, "patch")
    check_predicting(loaded, "patching")
    if max_batch is not None and max_batch < 1:
        raise InputError("max_batch must be at least 1.")
    options = dict(method=method, what=tuple(what), noising=noising, metric=metric, max_batch=max_batch)
    show = progress or (lambda _p: None)
    if pairs is None:
        if isinstance(clean, PromptPair):
            first = clean
        elif clean is None or corrupt is None or answers is None or len(answers) != 2:
            raise InputError("attnscope.patch takes clean, corrupt and answers=(correct, wrong), or pairs=.")
        else:
            first = PromptPair(clean, corrupt, *answers)
        result = drive(experiment(loaded, frame_pair(loaded, first, target=target), **options), show)
        return PatchAnswer(loaded.name, result, model_notes(loaded))
    limit = {} if max_seconds is None else {"max_seconds": float(max_seconds)}
    averaged = drive(over_pairs(loaded, list(pairs), target=target, **options, **limit), show)
    return PairsAnswer(loaded.name, averaged, metric, method, noising, model_notes(loaded))


# ---- a recording -------------------------------------------------------------------------------
@dataclass(frozen=True)
class RecordAnswer:
    """A Run's recording written to one file (opens with no model: attnscope.open_recording)."""
    path: Path
    bytes: int
    kinds: dict                      # kind -> [layers, heads, queries, keys]
    notes: list

    def to_json(self) -> dict:
        return {"written": str(self.path), "bytes": self.bytes, "kinds": self.kinds, "notes": self.notes}


def record(model, text, path, *, target: str | None = None, pair: str | None = None, chat: bool = False,
           system: str | None = None, say: Callable[[str], None] | None = None) -> RecordAnswer:
    """Run ``model`` on ``text`` and save its recording (queries, keys, each row's log-sum-exp)
    to ``path``; an existing file that is not a recording is refused, never replaced. A model
    served by NDIF brings every row back in one job, ``say(line)`` telling how it goes (stderr)."""
    import sys

    from attnscope.engine.remote import remote_of, trace_remote
    from attnscope.engine.traces import recording_target, save_recording, trace_text

    from attnscope.engine.loading.dense import check_seam

    loaded = _model(model, "record")
    check_seam(loaded, "a recording")      # a fallback's trace holds weights only: no queries and keys to save
    out = recording_target(path)     # before the Run: never over a user's file
    prompt = _prompt(text, "record", "run", chat, system, target, pair)
    if remote_of(loaded) is not None:
        tell = say or (lambda line: print(line, file=sys.stderr))
        raw = trace_remote(loaded, prompt, rows=None, say=tell).whole_recording()
    else:
        raw = trace_text(loaded, prompt)
    written = save_recording(raw, out)
    return RecordAnswer(written, written.stat().st_size, {k: list(raw.shape(k)) for k in raw.kinds}, list(raw.notes))


def open_recording(path):
    """The trace a recording file holds (attnscope.Trace), checked; RecordingError in one sentence."""
    from attnscope.api import Trace
    from attnscope.engine.traces import load_recording

    return Trace(load_recording(path))


# ---- the atlas ---------------------------------------------------------------------------------
@dataclass(frozen=True)
class AtlasAnswer:
    """An atlas (engine.atlas): every head of a model across a corpus, opened from its file."""
    state: Any                       # engine.atlas.AtlasState

    def to_json(self) -> dict:
        """Every head with every metric: what ``attnscope atlas A.safetensors --json`` prints."""
        from attnscope.engine.atlas import atlas_summary

        return atlas_summary(self.state)

    def head(self, layer: int, head: int) -> dict:
        """One head's top contexts, decile samples and Q/K projection (``--head L.H``)."""
        from attnscope.engine.atlas import head_detail

        return head_detail(self.state, layer, head)


def atlas(model, out, *, corpus=None, length: int | None = None, docs: int | None = None, top: int = 32,
          retrieval=None, report: Callable | None = None, chat: bool = False) -> AtlasAnswer:
    """Build the atlas of ``model`` over ``corpus`` (default: the bundled Shakespeare) into
    ``out``, or resume it there; ``report(("atlas", done, asked))`` after each document.
    ``retrieval``: probe lengths in tokens (e.g. [1024, 4096]): each head's retrieval score too
    (``report(("retrieval", done, probes))``). ``chat``: each document as the user's turn of a
    chat, through the model's own chat template."""
    from attnscope.engine.atlas import add_retrieval, build_atlas

    loaded = _model(model, "atlas")
    state = build_atlas(loaded, out, corpus=corpus, length=length, docs=docs, top=top, report=report, chat=chat)
    if retrieval:
        state = add_retrieval(state, loaded, retrieval, out, report=report)
    return AtlasAnswer(state)


def open_atlas(path) -> AtlasAnswer:
    """An atlas file, read without the model; InputError in one sentence for a damaged one."""
    from attnscope.engine.atlas import load_state

    return AtlasAnswer(load_state(path))
