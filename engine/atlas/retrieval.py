"""Retrieval heads (Wu et al., 2024, "Retrieval Head Mechanistically Explains Long-Context
Factuality"): which heads copy a needle out of a long haystack while the model writes it.

A probe is built from the corpus: a haystack of the asked length (its first document), a needle
(a sentence from further on in the corpus) inserted at one depth, and the needle written again
at the end. The copy is given to the model (teacher forcing), so every head is judged on the
same steps whether or not this model would have produced the needle by itself: one recorded
forward per probe, no decoding loop.

At the step that writes needle token n_i (the query row of the copy's previous token), a head
*retrieves* when its strongest key (argmax of the row; the first of equals) lies in the inserted
needle and holds the same token n_i. A head's score is the share of the needle's written tokens
it retrieved, averaged over the probes (depths x lengths): 1.0 for a head that copies every
token from the needle, 0 for one that never does.

Exact: each row's strongest key is the argmax of its scores from the recorded call
(``AttentionCall.scores`` over the copy's rows only: (H, r, T), r the needle's length; the softmax
is monotone and a learned sink is no key, so it is the weights' argmax, with no exp or log-sum-exp),
never a (T, T) array. Cost: the probes' own teacher-forced forwards (no log-sum-exp asked of the
kernel), plus r rows of scores per layer (bench/atlas.py's ``retrieval_ratio``, goal <= 1.3).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from attnscope.engine.adapters import adapter_for
from attnscope.engine.atlas.forward import record, side_ids   # the atlas's one recorded forward
from attnscope.engine.atlas.corpus import documents
from attnscope.engine.inputs import InputError
from attnscope.engine.kinds import QUERY_SIDE
from attnscope.engine.traces import RunCancelled

DEPTHS = (0.1, 0.3, 0.5, 0.7, 0.9)     # where the needle sits in the haystack, as a share of its length
NEEDLE_TOKENS = (8, 24)                # a needle is a corpus line of this many tokens (fewer: the next line)
SHORTEST_NEEDLE = 4                    # a short model's needle: a quarter of its shortest probe, at least this


@dataclass
class RetrievalProbe:
    """One probe: the ids read, where the needle was put and where it is written again."""
    ids: list[int]           # (T,) haystack with the needle inside, then the needle again
    needle: tuple[int, int]  # [start, stop) of the inserted needle
    copy: tuple[int, int]    # [start, stop) of the needle written again (the last tokens)
    length: int
    depth: float


def needle_ids(adapter, corpus, skip: int, size: int = NEEDLE_TOKENS[1]) -> list[int]:
    """A needle from the corpus: ``size`` tokens (NEEDLE_TOKENS[1], fewer where a probe is short)
    past its first ``skip`` (so it is not in the haystack, the corpus's first document), the first
    such run with at least NEEDLE_TOKENS[0] different tokens, or half of ``size`` (a run of one token
    repeated says nothing about copying)."""
    distinct = min(NEEDLE_TOKENS[0], size // 2)
    seen = 0
    for doc in documents(adapter, corpus, 256):
        seen += len(doc)
        if seen <= skip:
            continue
        for start in range(0, len(doc) - size + 1, size):
            piece = doc[start:start + size]
            if len(set(piece)) >= distinct:
                return piece
    raise InputError(f"The corpus {corpus or 'bundled'} has no text past its first {skip:,} tokens to take a needle "
                     "from; give a longer corpus or shorter --retrieval lengths.")


def build_probes(adapter, corpus, lengths, depths=DEPTHS) -> list[RetrievalProbe]:
    """The probes for each asked length (in the probe's own tokens, the model's framing left out)
    and depth (the haystack: the corpus's first document)."""
    probes = []
    longest = max(lengths)
    haystack = next(iter(documents(adapter, corpus, longest)))
    size = min(NEEDLE_TOKENS[1], min(lengths) // 4)         # the needle twice in at most half the probe
    if size < SHORTEST_NEEDLE:
        raise InputError(f"A retrieval probe of {min(lengths):,} tokens cannot hold a needle twice and a haystack; "
                         f"give --retrieval lengths of at least {4 * SHORTEST_NEEDLE + 1}.")
    needle = needle_ids(adapter, corpus, len(haystack), size)
    for length in lengths:
        body = length - 2 * len(needle)
        hay = haystack[:body]
        for depth in depths:
            at = int(round(depth * len(hay)))
            ids = hay[:at] + needle + hay[at:] + needle
            probes.append(RetrievalProbe(ids, (at, at + len(needle)), (len(ids) - len(needle), len(ids)),
                                         length, depth))
    return probes


@torch.no_grad()
def probe_hits(calls, probe: RetrievalProbe, offset: int) -> np.ndarray:
    """(L, H) how many needle tokens each head retrieved in one probe. ``calls``: the recorded
    call of each layer; ``offset``: where the probe's ids start among the framed ids (a BOS)."""
    ids = np.asarray(probe.ids)
    n0, n1 = probe.needle
    c0, c1 = probe.copy
    rows = slice(offset + c0 - 1, offset + c1 - 1)         # the rows that write copy tokens c0 .. c1 - 1
    written = ids[c0:c1]                                     # (r,) the token each row writes
    hits = np.zeros((len(calls), calls[0].q.shape[1]), np.int64)
    for layer, call in enumerate(calls):
        s = call.scores(0, None, rows)                 # (H, r, Tk): the softmax is monotone, a sink is no key
        strongest = s.argmax(-1).cpu().numpy() - offset                          # (H, r) positions in the probe
        inside = (strongest >= n0) & (strongest < n1)
        same = ids[np.clip(strongest, 0, len(ids) - 1)] == written[None, :]
        hits[layer] = (inside & same).sum(-1)
    return hits


def retrieval_scores(adapter, kind: str, corpus, lengths, depths=DEPTHS, report=None, stop=None) -> dict:
    """Each head's retrieval score over the probes: {"score": (L, H) float64, "probes": count,
    "needle_tokens": n, "lengths": [...], "depths": [...]}."""
    if QUERY_SIDE[kind] == "source":     # an encoder's rows write nothing: no step copies the needle
        raise InputError(f"{adapter.loaded.name}'s atlas reads {kind} attention, which writes no token; retrieval "
                         "probes need a model that writes the needle again (a decoder).")
    cap = int(adapter.loaded.max_len)
    lengths = sorted({int(n) for n in lengths})
    if not lengths or lengths[0] < 2 or lengths[-1] > cap:
        raise InputError(f"Retrieval probe lengths must be from 2 to the model's {cap:,} tokens, not {lengths}.")
    framed, _ = adapter.frame_ids(adapter.plain_token_ids()[:1])
    framing = len(side_ids(framed, kind)) - 1                  # a BOS, an [EOS]: tokens the probe does not hold
    probes = build_probes(adapter, corpus, [n - framing for n in lengths], depths)
    total = None
    for i, probe in enumerate(probes):
        if stop is not None and stop():
            raise RunCancelled("The retrieval probes were stopped.")
        framed, starts = adapter.frame_ids(probe.ids)
        offset = starts[kind]
        assert side_ids(framed, kind)[offset:offset + len(probe.ids)] == probe.ids
        calls = record(adapter, framed, kind, lse=False)      # argmaxes need no log-sum-exp
        hits = probe_hits(calls, probe, offset) / (probe.copy[1] - probe.copy[0])
        total = hits if total is None else total + hits
        if report is not None:
            report(("retrieval", i + 1, len(probes)))
    assert total is not None
    return {"score": total / len(probes), "probes": len(probes), "needle_tokens": probes[0].copy[1] - probes[0].copy[0],
            "lengths": lengths, "depths": list(depths), "query_side": QUERY_SIDE[kind]}


RETRIEVAL_DEFINITION = ("the share of a needle's tokens a head copies while the model writes the needle again: at the "
                        "step writing needle token n, the head's strongest key lies in the inserted needle and holds n "
                        "(Wu et al., 2024, Retrieval Head Mechanistically Explains Long-Context Factuality); probes "
                        "built from the corpus, the needle at depths 0.1-0.9 of each asked length")


def add_retrieval(state, loaded, lengths, out, report=None, stop=None):
    """The atlas ``state`` (of ``loaded``) with each head's retrieval score over probes of
    ``lengths`` tokens, written to ``out``; an atlas that has them for these lengths is kept as it is
    (the same command resumes). The scores are (L, H) "retrieval.score"; the probes' facts in the
    metadata's "retrieval"."""
    lengths = sorted({int(n) for n in lengths})
    kept = state.meta.get("retrieval") or {}
    if kept.get("lengths") == lengths and "retrieval.score" in state.arrays:
        return state
    found = retrieval_scores(adapter_for(loaded), state.meta["kind"], state.meta["corpus"], lengths,
                             report=report, stop=stop)
    state.arrays["retrieval.score"] = found.pop("score")
    state.meta["retrieval"] = dict(found, definition=RETRIEVAL_DEFINITION)
    state.save(out)
    return state
