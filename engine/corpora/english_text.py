"""A user's own text files (a GPT corpus, a pairs file), read with clear messages.

The GPT's default prose is Shakespeare's plays (shakespeare.py).
"""
from __future__ import annotations

from pathlib import Path


MAX_CORPUS_BYTES = 512 << 20  # training reads the whole corpus into memory, several times over


def read_utf8(path: str | Path, what: str = "text file") -> str:
    """The text of a user's file; ValueError with a message if it is missing, not a regular
    file (a pipe or a device would never end), too large, or not UTF-8."""
    path = Path(path)
    if not path.is_file():
        raise ValueError(f"No such {what}: {path}" if not path.exists() else f"{path} is not a regular {what}.")
    size = path.stat().st_size
    if size > MAX_CORPUS_BYTES:
        raise ValueError(f"{path.name} is {size / (1 << 20):,.0f} MiB; a {what} may be at most "
                         f"{MAX_CORPUS_BYTES >> 20} MiB. Use a sample of it.")
    try:
        return path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise ValueError(f"{path.name} is not UTF-8 text (byte {exc.start}); save it as UTF-8 and try again.") from None


def read_text_file(path: str | Path) -> str:
    """A user's UTF-8 text file; ValueError with a message if it is missing, not text, or empty."""
    text = read_utf8(path)
    if not text.strip():
        raise ValueError(f"{Path(path).name} is empty.")
    return text

