"""One adapter per family: how a model reads text, runs, steps and names its attention sites.

``adapter_for(loaded)`` is the one place a family is mapped to code: our three families by
name, every Hugging Face model by its role. Adding an architecture is one adapter here (or
nothing at all, for a Hugging Face model whose role transformers already knows). Public:
``adapter_for``, ``Adapter`` and ``Framed`` (base.py: what the rest of the engine asks of a
family), and the chat form's questions (chat.py: ``reads_chat``, ``check_prompt``).
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from attnscope.engine.runtime.public import lazy
from attnscope.engine.inputs import check_kind
from attnscope.engine.loading.loaded import LoadedModel


def adapter_for(loaded):
    """The adapter of ``loaded``, made once per loaded model."""
    check_kind(loaded, LoadedModel, "loaded", "a LoadedModel (engine.loading.open_model)")
    adapter = loaded.__dict__.get("_adapter")
    if adapter is None or adapter.model is not loaded.model:
        adapter = loaded.__dict__["_adapter"] = _make(loaded)
    return adapter


def _make(loaded):
    if loaded.is_hf and loaded.meta.get("dense"):       # its attention never reaches the seam (hf_dense.py)
        from attnscope.engine.adapters.hf_dense import HFDenseDecoderAdapter, HFDenseEncoderAdapter

        return {"encoder": HFDenseEncoderAdapter, "decoder": HFDenseDecoderAdapter}[loaded.role](loaded)
    if loaded.is_hf:
        from attnscope.engine.adapters.hf import HFDecoderAdapter, HFEncoderAdapter, HFSeq2SeqAdapter

        return {"encoder": HFEncoderAdapter, "decoder": HFDecoderAdapter,
                "encoder-decoder": HFSeq2SeqAdapter}[loaded.role](loaded)
    from attnscope.engine.adapters.scratch import BertAdapter, GPTAdapter, TranslatorAdapter

    return {"translator": TranslatorAdapter, "gpt": GPTAdapter, "bert": BertAdapter}[loaded.family](loaded)


if TYPE_CHECKING:     # what tools see; at run time __getattr__ imports each name's module on first use
    from attnscope.engine.adapters.base import Adapter, Framed, Prepared
    from attnscope.engine.adapters.chat import check_prompt, reads_chat

_PUBLIC = {
    "Adapter": "base",
    "Framed": "base",
    "Prepared": "base",
    "check_prompt": "chat",
    "reads_chat": "chat",
}
__getattr__ = lazy(__name__, _PUBLIC)
__all__ = ["Adapter", "Framed", "Prepared", "adapter_for", "check_prompt", "reads_chat"]
