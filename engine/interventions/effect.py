"""Before and after: the next-token distribution of a text with and without interventions.

Both forwards read the same ids (the text framed without interventions; an encoder-
decoder's decoder prefix is its unchanged greedy output unless a target is given), so the
numbers compare one prediction, not two different inputs.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import torch

from attnscope.engine.decoding.greedy import request
from attnscope.engine.decoding.session import kl_divergence
from attnscope.engine.inputs import check_count
from attnscope.engine.loading.dense import check_seam
from attnscope.engine.interventions.lens import check_predicts
from attnscope.engine.interventions.spec import Interventions, applied, notes_of


@dataclass
class Effect:
    token_ids: list[int]                     # the decoder's ids fed (a decoder's prompt)
    source_ids: list[int]                    # an encoder-decoder's source ids (else [])
    before: list[tuple[int, float]]          # top next tokens at the last position, without
    after: list[tuple[int, float]]           # and with the interventions
    logits_max_abs_change: float             # over every position and token
    kl: float                                # KL(before || after) at the last position, nats
    predicted: int                           # the token predicted without
    relative_change: float                   # (p_after - p_before) / p_before of that token
    position: int = -1                       # the decoder position compared (its ids up to there are fed)
    notes: list[str] = field(default_factory=list)   # e.g. a query the knockout left no key

    def as_json(self) -> dict:
        out = {"token_ids": self.token_ids, "position": self.position % max(1, len(self.token_ids)),
               "next": {"before": [[i, p] for i, p in self.before], "after": [[i, p] for i, p in self.after]},
               "logits_max_abs_change": self.logits_max_abs_change, "kl": self.kl,
               "predicted": self.predicted, "relative_change": self.relative_change, "notes": self.notes}
        if self.source_ids:
            out["source_ids"] = self.source_ids
        return out


COMPARE_NEEDS = ("{name} is an encoder: it predicts no next token to compare. Ablate its heads in the window to "
                 "see its attention change.")


def logits_pair(adapter, framed, spec: Interventions) -> tuple[torch.Tensor, torch.Tensor, list[str]]:
    """(before, after) logits (T, V) float32 of one framed text by ``adapter`` (the
    request's own), and the hooks' notes."""
    before = adapter.forward(framed)
    with applied(spec) as made:
        after = adapter.forward(framed)
    return before[0].float(), after[0].float(), notes_of(made)


def first_divergence(before: torch.Tensor, after: torch.Tensor) -> int:
    """The first position (T, V) logits choose another token with the change, else the last:
    a translator's own output is fed whole, and an ablation that changed a word mid-sentence
    shows there, not at the token after the whole translation (where both may say the end)."""
    differs = (before.argmax(-1) != after.argmax(-1)).nonzero()
    return int(differs[0, 0]) if len(differs) else before.shape[0] - 1


@torch.no_grad()
def intervention_effect(loaded, text: str, spec: Interventions, target: str | None = None, k: int = 10) -> Effect:
    """The next-token distribution before and after ``spec``: at the text's last position; for
    an encoder-decoder reading its own translation (no ``target``), at the first step where
    the change makes it choose another token (``first_divergence``). Interventions that do not
    fit the model or the text are refused in one sentence (InputError) before any forward."""
    check_seam(loaded, "an intervention")
    prepared = request(loaded, text, target, what="compare before and after",    # checked once, framed once
                       fits=lambda adapter: check_predicts(spec, adapter, None, COMPARE_NEEDS))  # kinds, layers, heads
    k = check_count(k, "k (the likeliest tokens to compare)")
    loaded, adapter, framed = prepared.loaded, prepared.adapter, prepared.framed
    check_predicts(spec, adapter, framed, COMPARE_NEEDS)                   # positions, on this text
    loaded.model.eval()
    before, after, notes = logits_pair(adapter, framed, spec)              # (T, V) each
    own_output = loaded.role == "encoder-decoder" and prepared.prompt.target is None
    at = first_divergence(before, after) if own_output else before.shape[0] - 1
    pb, pa = torch.softmax(before[at], -1), torch.softmax(after[at], -1)    # (V,)
    top = lambda p: [(int(i), float(p[i])) for i in p.topk(min(k, p.numel())).indices]  # noqa: E731
    predicted = int(pb.argmax())
    return Effect(list(framed.target_ids), list(framed.source_ids) if framed.target_ids and framed.source_ids else [],
                  top(pb), top(pa), float((after - before).abs().max()), kl_divergence(pb, pa),
                  predicted, float((pa[predicted] - pb[predicted]) / pb[predicted]), at, notes)
