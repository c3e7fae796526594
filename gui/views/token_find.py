"""Head detail's Go to: the next place a token (or a run of tokens) matches what was typed.

Apart from the view so it reads alone: one pass over the tokens, no Qt (a 32k-token text: milliseconds).
"""
from __future__ import annotations

import numpy as np


def _plain(token: str) -> str:
    """A token's text as matched by Go to: no word-piece or space markers, no spaces, lower case."""
    return "".join(token.removeprefix("##").replace("Ġ", "").replace("▁", "").split()).lower()


def find_tokens(tokens: list[str], what: str, after: int = -1) -> tuple[int | None, int | None]:
    """(first, last) positions of the next match of ``what`` after position ``after``, wrapping
    round: a whole token first, else the run of tokens whose joined text holds it. One pass over
    the tokens (a 32k-token text: milliseconds)."""
    want = _plain(what)
    if not want:
        return None, None
    plain = [_plain(t) for t in tokens]
    order = list(range(after + 1, len(tokens))) + list(range(0, after + 1))
    whole = next((i for i in order if plain[i] == want), None)
    if whole is not None:
        return whole, whole
    starts = np.cumsum([0] + [len(p) for p in plain])          # each token's offset in the joined text
    joined = "".join(plain)
    begin = int(starts[after + 1]) if 0 <= after + 1 < len(starts) else 0
    at = joined.find(want, begin)
    if at < 0:
        at = joined.find(want)
    if at < 0:
        return None, None
    first = int(np.searchsorted(starts, at, side="right")) - 1
    last = int(np.searchsorted(starts, at + len(want) - 1, side="right")) - 1
    return first, last
