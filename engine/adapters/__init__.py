"""One adapter per family: how a model reads text, runs, steps and names its attention sites.

``adapter_for(loaded)`` is the one place a family is mapped to code: our three families by
name, every Hugging Face model by its role. Adding an architecture is one adapter here (or
nothing at all, for a Hugging Face model whose role transformers already knows).
"""
from __future__ import annotations


def adapter_for(loaded):
    """The adapter of ``loaded``, made once per loaded model."""
    adapter = loaded.__dict__.get("_adapter")
    if adapter is None or adapter.model is not loaded.model:
        adapter = loaded.__dict__["_adapter"] = _make(loaded)
    return adapter


def _make(loaded):
    if loaded.is_hf:
        from engine.adapters.hf import HFDecoderAdapter, HFEncoderAdapter, HFSeq2SeqAdapter

        return {"encoder": HFEncoderAdapter, "decoder": HFDecoderAdapter,
                "encoder-decoder": HFSeq2SeqAdapter}[loaded.role](loaded)
    from engine.adapters.scratch import BertAdapter, GPTAdapter, TranslatorAdapter

    return {"translator": TranslatorAdapter, "gpt": GPTAdapter, "bert": BertAdapter}[loaded.family](loaded)
