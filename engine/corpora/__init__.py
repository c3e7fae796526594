"""Text the from-scratch models learn from: a synthetic English->German corpus made by a
small grammar (german.py), a user's own tab-separated pairs (pairs_file.py), Shakespeare's
plays for the GPT (shakespeare.py), and a user's own text (english_text.py). Public: the
splits a training run reads and the label of a corpus (sources.py)."""
from __future__ import annotations

from typing import TYPE_CHECKING

from attnscope.engine.runtime.public import lazy

if TYPE_CHECKING:     # what tools see; at run time __getattr__ imports each name's module on first use
    from attnscope.engine.corpora.sources import corpus_label, text_splits, translation_splits

_PUBLIC = {
    "corpus_label": "sources",
    "text_splits": "sources",
    "translation_splits": "sources",
}
__getattr__ = lazy(__name__, _PUBLIC)
__all__ = ["corpus_label", "text_splits", "translation_splits"]
