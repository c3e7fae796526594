"""The model's own greedy output: the one loop every caller that wants it runs.

An encoder-decoder Run without a target prefix shows the attention behind the model's own
translation, and the window's output line shows that translation: both are ``greedy_ids`` of
the same text with the same number of tokens (``OWN_OUTPUT_TOKENS``), under the same hooks,
so the heatmaps and the output line never show two different translations. ``frame`` is the
Run's framing: the adapter's, with that output as the decoder's tokens where it needs one.
"""
from __future__ import annotations

import torch

from attnscope.engine.adapters.base import Framed
from attnscope.engine.decoding.cost import check_decoding
from attnscope.engine.decoding.records import DecodeSettings
from attnscope.engine.inputs import check_kind
from attnscope.engine.adapters.base import Adapter

OWN_OUTPUT_TOKENS = 64      # the most tokens an encoder-decoder writes as its own output (a Run, the output line)


def greedy_ids(adapter, text, max_new_tokens: int = OWN_OUTPUT_TOKENS) -> list[int]:
    """The model's greedy output ids for ``text``, without the end token (no recording), under
    whatever hooks are set."""
    return _written(adapter.stepper(text, DecodeSettings(max_new_tokens=max_new_tokens)), adapter.device)


def greedy_text(adapter, text, max_new_tokens: int = OWN_OUTPUT_TOKENS) -> str:
    """``greedy_ids``'s output as text, refused first (RunTooLarge) when its cache would not fit."""
    st = adapter.stepper(text, DecodeSettings(max_new_tokens=max_new_tokens))
    check_decoding(adapter, len(st.prompt_ids) + len(st.source_tokens), st.limit, 1, adapter.loaded.name)
    return st.tokenizer.decode(_written(st, adapter.device))


@torch.no_grad()
def _written(st, device) -> list[int]:
    """The one greedy loop: the stepper fed its argmax one token at a time, with its cache."""
    feed, out = torch.tensor([st.prompt_ids], device=device), []
    for _ in range(st.limit):
        nxt = int(st.logits(feed)[0].argmax())
        if nxt in st.end_ids:
            break
        out.append(nxt)
        feed = torch.tensor([[nxt]], device=device)
    return out


def frame(adapter, text, pair: str | None = None, target: str | None = None,
          max_new_tokens: int = OWN_OUTPUT_TOKENS) -> Framed:
    """``text`` framed for a Run (engine.adapters.Adapter.frame); an encoder-decoder given no
    ``target`` prefix reads its own greedy output (``greedy_ids``) as its decoder's tokens."""
    check_kind(adapter, Adapter, "adapter", "an Adapter (engine.adapters.adapter_for)")
    if adapter.role == "encoder-decoder" and not (target and target.strip()):
        return adapter.frame(text, pair=pair, written=greedy_ids(adapter, text, max_new_tokens))
    return adapter.frame(text, pair=pair, target=target)
