"""A user's own parallel corpus: ``English<TAB>German[<TAB>anything else]`` per line.

That is the layout of the Tatoeba/Anki ``deu.txt`` exports (the third column is the
attribution), so a user who has one can train the translator on real sentences. The same
reader takes any tab-separated file of a few named columns (a file of prompt pairs).
"""
from __future__ import annotations

from pathlib import Path
from attnscope.engine.inputs import read_utf8


def read_tsv_rows(path: str | Path, columns: tuple[str, ...], items: str, limit: int | None = None,
                  what: str = "pairs file", strip: bool = True, numbered: bool = False) -> list[tuple]:
    """The first ``len(columns)`` fields of each non-blank line (further fields are ignored);
    ValueError with a message for the user: the file is missing, is not UTF-8 text, or a line
    lacks a field (its number, the layout expected and the line itself are named). ``strip``
    false keeps each field's spaces (a prompt pair's answer ' Mary' is not 'Mary'); ``numbered``
    puts each row's line number first."""
    from attnscope.engine.corpora.english_text import MAX_CORPUS_BYTES

    path = Path(path)
    text = read_utf8(path, what, MAX_CORPUS_BYTES)
    rows = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        cols = line.split("\t")
        if len(cols) < len(columns) or not all(c.strip() for c in cols[:len(columns)]):
            raise ValueError(f"{path.name}, line {number}: expected '{'<TAB>'.join(columns)}', got {line[:60]!r}.")
        fields = tuple(c.strip() if strip else c for c in cols[:len(columns)])
        rows.append((number, *fields) if numbered else fields)
        if limit is not None and len(rows) >= limit:
            break
    if not rows:
        raise ValueError(f"{path.name} holds no {items}.")
    return rows


def read_pairs_tsv(path: str | Path, limit: int | None = None) -> list[tuple[str, str]]:
    """(english, german) pairs of the file; blank lines are skipped."""
    return read_tsv_rows(path, ("English", "German"), "sentence pairs", limit)
