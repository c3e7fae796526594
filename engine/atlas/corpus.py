"""The atlas's corpus: a text file, a folder of .txt files, or JSONL with a ``text`` field, cut
into documents of up to N tokens as the model reads them.

Texts are read a line at a time and tokenized a line at a time (``adapter.piece_ids``), lines
joined by the tokens of a newline, so a 10,000-document corpus is never tokenized whole before
the first document runs: ``documents`` is a generator, and the pass takes what it needs.
The bundled Shakespeare (gzip, one speech a line) is the default corpus.
"""
from __future__ import annotations

import gzip
import hashlib
import json
from pathlib import Path
from typing import Iterator

from attnscope.engine.inputs import InputError

DEFAULT_CORPUS = Path(__file__).resolve().parents[2] / "resources" / "corpora" / "shakespeare.txt.gz"


def corpus_files(path: str | Path | None) -> list[Path]:
    """The files of a corpus in reading order; InputError for a path that holds no text file."""
    path = Path(path) if path else DEFAULT_CORPUS
    if path.is_dir():
        files = sorted(p for p in path.rglob("*.txt") if p.is_file())
        if not files:
            raise InputError(f"{path} holds no .txt file to read as a corpus.")
        return files
    if not path.is_file():
        raise InputError(f"{path} is not a file or a folder of .txt files.")
    return [path]


def fingerprint(path: str | Path | None) -> str:
    """Names, sizes and modification times of the corpus's files: a resumed atlas must read the same corpus."""
    h = hashlib.sha256()
    for f in corpus_files(path):
        st = f.stat()
        h.update(f"{f.name}:{st.st_size}:{int(st.st_mtime)}\n".encode())
    return h.hexdigest()[:16]


def _lines(path: Path) -> Iterator[str]:
    opener = gzip.open if path.suffix == ".gz" else open
    jsonl = path.name.endswith((".jsonl", ".jsonl.gz"))
    try:
        with opener(path, "rt", encoding="utf-8") as f:
            for n, line in enumerate(f, 1):
                if jsonl:
                    if not line.strip():
                        continue
                    try:
                        text = json.loads(line).get("text")
                    except (ValueError, AttributeError):
                        raise InputError(f"{path} line {n} is not a JSON object; a JSONL corpus holds one "
                                         "object with a \"text\" field a line.") from None
                    if isinstance(text, str):
                        yield from text.splitlines()
                        yield ""
                else:
                    yield line.rstrip("\n")
    except UnicodeDecodeError:
        raise InputError(f"{path} is not UTF-8 text.") from None
    except (OSError, EOFError) as exc:
        raise InputError(f"{path} cannot be read as a corpus ({exc}).") from None


def _piece_reader(adapter):
    """``text -> ids`` as the tokenizer makes them inside a text: the adapter's ``piece_ids``, or
    for a family without one (our BERT) its framing of the text with the framing's own tokens cut
    (how many lead and end, read off the framing of one token)."""
    try:
        adapter.piece_ids("a")
        return adapter.piece_ids
    except NotImplementedError:
        pass
    framed, starts = adapter.frame_ids([adapter.plain_token_ids()[0]])
    (kind, lead), = starts.items()
    side = "source_ids" if len(getattr(framed, "source_ids")) else "target_ids"
    end = len(getattr(framed, side)) - 1 - lead

    def pieces(text: str) -> list[int]:
        ids = getattr(adapter.frame(text), side) if text.strip() else []
        return ids[lead:len(ids) - end]
    return pieces


def documents(adapter, path: str | Path | None, body: int) -> Iterator[list[int]]:
    """Token ids of each document, ``body`` tokens each (the last may be shorter), read in order.
    ``body`` is the length less the model's own framing (its [EOS] or BOS). InputError when
    the corpus has no text at all."""
    pieces = _piece_reader(adapter)
    newline = pieces("\n")
    pending: list[int] = []
    any_text = False
    for f in corpus_files(path):
        for line in _lines(f):
            if not line.strip():
                continue
            any_text = True
            pending += pieces(line) + newline
            while len(pending) >= body:
                yield pending[:body]
                pending = pending[body:]
    if not any_text:
        raise InputError(f"The corpus {path or DEFAULT_CORPUS} holds no text.")
    if len(pending) > 1:
        yield pending
