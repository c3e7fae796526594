"""The model's own greedy output: the one loop every caller that wants it runs.

An encoder-decoder Run without a target prefix shows the attention behind the model's own
translation, and the window's output line shows that translation: both are ``greedy_ids`` of
the same text with the same number of tokens (``OWN_OUTPUT_TOKENS``), under the same hooks,
so the heatmaps and the output line never show two different translations. ``frame`` is the
Run's framing: the adapter's, with that output as the decoder's tokens where it needs one.
"""
from __future__ import annotations

from typing import Callable

from attnscope.engine.adapters.base import OWN_OUTPUT_TOKENS, Framed, written_ids
from attnscope.engine.decoding.cost import check_decoding
from attnscope.engine.decoding.records import DecodeSettings
from attnscope.engine.adapters import adapter_for
from attnscope.engine.adapters.base import Adapter, Prepared
from attnscope.engine.adapters.chat import check_prompt
from attnscope.engine.inputs import Chat, Prompt, check_kind
from attnscope.engine.loading.loaded import LoadedModel


def greedy_ids(adapter, text, max_new_tokens: int = OWN_OUTPUT_TOKENS) -> list[int]:
    """The model's greedy output ids for ``text``, without the end token (no recording), under
    whatever hooks are set."""
    return written_ids(adapter.stepper(text, DecodeSettings(max_new_tokens=max_new_tokens)), adapter.device)


def greedy_text(adapter, text, max_new_tokens: int = OWN_OUTPUT_TOKENS) -> str:
    """``greedy_ids``'s output as text, refused first (RunTooLarge) when its cache would not fit."""
    st = adapter.stepper(text, DecodeSettings(max_new_tokens=max_new_tokens))
    check_decoding(adapter, len(st.prompt_ids) + len(st.source_tokens), st.limit, 1, adapter.loaded.name)
    return st.tokenizer.decode(written_ids(st, adapter.device))


def frame(adapter, text, pair: str | None = None, target: str | None = None,
          max_new_tokens: int = OWN_OUTPUT_TOKENS) -> Framed:
    """``text`` framed for a Run (engine.adapters.Adapter.frame); an encoder-decoder given no
    ``target`` prefix reads its own greedy output (``greedy_ids``) as its decoder's tokens."""
    check_kind(adapter, Adapter, "adapter", "an Adapter (engine.adapters.adapter_for)")
    if adapter.role == "encoder-decoder" and not (target and target.strip()):
        return adapter.frame(text, pair=pair, written=greedy_ids(adapter, text, max_new_tokens))
    return adapter.frame(text, pair=pair, target=target)


def request(loaded, text, target=None, pair=None, interventions=None, what: str = "run", remote: bool = False,
            max_new_tokens: int = OWN_OUTPUT_TOKENS, fits: Callable[[Adapter], None] | None = None) -> Prepared:
    """The Run's prepared request (engine.adapters.base.Prepared): ``text`` when it is one
    already (its door was passed once), else ``loaded``'s adapter preparing the Prompt of
    ``text``, ``target`` and ``pair`` (checked once, framed once), an encoder-decoder with no
    target reading its own greedy output (``greedy_ids``) under ``interventions``. ``fits``:
    a check of the adapter before any forward (the interventions' kinds, layers and heads)."""
    if isinstance(text, Prepared):
        Prompt.of(text.prompt, target, pair)         # a target or pair beside it is refused, not dropped
        return text
    if not isinstance(loaded, LoadedModel):
        check_prompt(loaded, text, what, remote)     # not a model (a recording, a path): its one sentence
    adapter = adapter_for(loaded)
    if fits is not None:
        fits(adapter)
    return adapter.prepare(Prompt.of(text, target, pair, what), interventions, what, remote,
                           written=lambda checked: greedy_ids(adapter, checked, max_new_tokens))


def admitted(loaded, text, what: str = "run", remote: bool = False) -> tuple[Adapter, "str | Chat"]:
    """The adapter and the checked text of a request that needs no framing (a decoding session
    steps the text itself): a Prepared's own (its door was passed once), else ``text`` (a str,
    a Chat or a Prompt) checked for ``loaded`` once and ``loaded``'s adapter."""
    if isinstance(text, Prepared):
        return text.adapter, text.prompt.text
    text = check_prompt(loaded, text, what, remote)
    return adapter_for(loaded), text
