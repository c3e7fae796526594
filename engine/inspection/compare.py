"""Two models on one text, head by head."""
from __future__ import annotations

import torch

from attnscope.engine.loading.loaded import LoadedModel
from attnscope.engine.models.outputs import ENCODER_SELF
from attnscope.engine.traces.tracing import trace_text


@torch.no_grad()
def compare_models(a: LoadedModel, b: LoadedModel, text: str, pair: str | None = None) -> dict:
    """Max absolute difference of every encoder attention map of two models on the same text."""
    from attnscope.engine.inspection.analysis import compare_traces

    ta, tb = trace_text(a, text, pair=pair), trace_text(b, text, pair=pair)
    result = compare_traces(ta, tb, ENCODER_SELF)
    return {"tokens": result["tokens"], "per_layer": result["per_layer"],
            "per_head": result["per_head"].tolist(), "max": result["max"],
            "notes": list(dict.fromkeys(ta.notes + tb.notes))}   # e.g. the text cut to the model's length
