"""A user's own parallel corpus: ``English<TAB>German[<TAB>anything else]`` per line.

That is the layout of the Tatoeba/Anki ``deu.txt`` exports (the third column is the
attribution), so a user who has one can train the translator on real sentences.
"""
from __future__ import annotations

from pathlib import Path


def read_pairs_tsv(path: str | Path, limit: int | None = None) -> list[tuple[str, str]]:
    """(english, german) pairs of the file; blank lines are skipped.

    Raises ValueError with a message for the user: the file is missing, is not UTF-8 text,
    or a non-blank line has no tab (the number of the first such line is named)."""
    from engine.corpora.english_text import MAX_CORPUS_BYTES
    from engine.inputs import read_utf8

    path = Path(path)
    text = read_utf8(path, "pairs file", MAX_CORPUS_BYTES)
    pairs = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        cols = line.split("\t")
        if len(cols) < 2 or not cols[0].strip() or not cols[1].strip():
            raise ValueError(f"{path.name}, line {number}: expected 'English<TAB>German', got {line[:60]!r}.")
        pairs.append((cols[0].strip(), cols[1].strip()))
        if limit is not None and len(pairs) >= limit:
            break
    if not pairs:
        raise ValueError(f"{path.name} holds no sentence pairs.")
    return pairs
