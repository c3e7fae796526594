"""A user's own text files (a GPT corpus, a pairs file), read with clear messages.

The GPT's default prose is Shakespeare's plays (shakespeare.py).
"""
from __future__ import annotations

from pathlib import Path

from attnscope.engine.inputs import read_utf8


MAX_CORPUS_BYTES = 512 << 20  # training reads the whole corpus into memory, several times over


def read_text_file(path: str | Path) -> str:
    """A user's UTF-8 text file; ValueError with a message if it is missing, not text, or empty."""
    text = read_utf8(path, limit=MAX_CORPUS_BYTES)
    if not text.strip():
        raise ValueError(f"{Path(path).name} is empty.")
    return text

