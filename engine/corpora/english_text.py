"""English prose for the GPT that needs no download.

``pydoc_data.topics`` ships with every CPython: about a megabyte of the Python reference
written in plain English. Code samples and tables are dropped so the model learns prose.
"""
from __future__ import annotations

import re
from pathlib import Path

_PROSE_CHARS = re.compile(r"[A-Za-z ,.;:'\-]")


def python_docs_text() -> str:
    """Prose paragraphs of the Python reference, one line each, lower-cased."""
    from pydoc_data.topics import topics

    lines = []
    for name in sorted(topics):
        for raw in re.split(r"\n\s*\n", topics[name]):
            if raw.startswith("   ") or ">>>" in raw:  # indented blocks are code or grammar
                continue
            para = " ".join(raw.split())
            # Keep paragraphs that read as sentences: long enough, almost only letters.
            prose = len(_PROSE_CHARS.findall(para)) / max(1, len(para))
            if len(para) > 60 and prose > 0.92:
                lines.append(para.lower())
    return "\n".join(lines)


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


def synthetic_english(seed: int = 0, n: int = 20000) -> str:
    """The English side of the synthetic corpus, one sentence a line."""
    from engine.corpora.german import generate_pairs

    return "\n".join(en for en, _ in generate_pairs(n, seed))
