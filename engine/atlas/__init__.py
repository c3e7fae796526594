"""The head atlas: every head of a model across a corpus, in one streaming pass of recorded
forwards (build.py), kept as bounded running summaries in one .safetensors file (state.py),
read back without the model (read.py). Each head statistic is one row-block reducer in one
list, ``STATISTICS`` (engine/inspection/statistics.py, shared with Head statistics). Public:
the names gui/ and cli/ use, listed in ``__all__``."""
from __future__ import annotations

from typing import TYPE_CHECKING

from attnscope.engine.runtime.public import lazy

if TYPE_CHECKING:     # what tools see; at run time __getattr__ imports each name's module on first use
    from attnscope.engine.atlas.build import DEFAULT_LENGTH, DEFAULT_TOP, build_atlas
    from attnscope.engine.atlas.corpus import documents
    from attnscope.engine.atlas.read import atlas_summary, head_detail
    from attnscope.engine.atlas.retrieval import add_retrieval
    from attnscope.engine.atlas.state import load_state

_PUBLIC = {
    "build_atlas": "build",
    "DEFAULT_TOP": "build",
    "DEFAULT_LENGTH": "build",
    "load_state": "state",
    "documents": "corpus",
    "atlas_summary": "read",
    "head_detail": "read",
    "add_retrieval": "retrieval",
}
__getattr__ = lazy(__name__, _PUBLIC)
__all__ = ["DEFAULT_LENGTH", "DEFAULT_TOP", "add_retrieval", "atlas_summary", "build_atlas", "documents", "head_detail",
           "load_state"]
