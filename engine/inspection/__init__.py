"""Numbers computed from traces and recordings: head statistics, rollout, head scores
(analysis.py), each query's strongest keys (top_keys.py), q and k of the recording (neurons.py),
two models compared (compare.py) and exports to .npz and CSV (export.py). Public: the names
gui/ and cli/ use, listed in ``__all__``."""
from __future__ import annotations

from typing import TYPE_CHECKING

from attnscope.engine.runtime.public import lazy

if TYPE_CHECKING:     # what tools see; at run time __getattr__ imports each name's module on first use
    from attnscope.engine.inspection.analysis import (compare_traces, kept_mechanism_scores, layer_aggregate,
                                            mechanism_report, mechanism_scores, trace_head_statistics,
                                            trace_rollout)
    from attnscope.engine.inspection.compare import compare_models
    from attnscope.engine.inspection.export import (EXPORT_LIMIT_BYTES, ExportAsk, ExportError, estimate_export,
                                          export_trace, load_npz, recording_words, refusal)
    from attnscope.engine.inspection.neurons import QueryKeys, query_keys
    from attnscope.engine.inspection.top_keys import TopKeys, layer_top_keys

_PUBLIC = {
    "compare_traces": "analysis",
    "kept_mechanism_scores": "analysis",
    "layer_aggregate": "analysis",
    "mechanism_report": "analysis",
    "mechanism_scores": "analysis",
    "trace_head_statistics": "analysis",
    "trace_rollout": "analysis",
    "compare_models": "compare",
    "EXPORT_LIMIT_BYTES": "export",
    "ExportAsk": "export",
    "ExportError": "export",
    "estimate_export": "export",
    "export_trace": "export",
    "load_npz": "export",
    "recording_words": "export",
    "refusal": "export",
    "QueryKeys": "neurons",
    "query_keys": "neurons",
    "TopKeys": "top_keys",
    "layer_top_keys": "top_keys",
}
__getattr__ = lazy(__name__, _PUBLIC)
__all__ = ["EXPORT_LIMIT_BYTES", "ExportAsk", "ExportError", "QueryKeys", "TopKeys", "compare_models",
           "compare_traces", "estimate_export", "export_trace", "kept_mechanism_scores", "layer_aggregate",
           "layer_top_keys", "load_npz", "mechanism_report", "mechanism_scores", "query_keys", "recording_words",
           "refusal", "trace_head_statistics", "trace_rollout"]
