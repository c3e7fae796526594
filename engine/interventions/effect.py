"""Before and after: the next-token distribution of a text with and without interventions.

Both forwards read the same ids (the text framed without interventions; an encoder-
decoder's decoder prefix is its unchanged greedy output unless a target is given), so the
numbers compare one prediction, not two different inputs.
"""
from __future__ import annotations

from dataclasses import dataclass

import torch

from engine.adapters import adapter_for
from engine.inputs import InputError, check_text
from engine.interventions.spec import Interventions, applied


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

    def as_json(self) -> dict:
        out = {"token_ids": self.token_ids,
               "next": {"before": [[i, p] for i, p in self.before], "after": [[i, p] for i, p in self.after]},
               "logits_max_abs_change": self.logits_max_abs_change, "kl": self.kl,
               "predicted": self.predicted, "relative_change": self.relative_change}
        if self.source_ids:
            out["source_ids"] = self.source_ids
        return out


def logits_pair(loaded, framed, spec: Interventions) -> tuple[torch.Tensor, torch.Tensor]:
    """(before, after) logits (T, V) float32 of one framed text."""
    adapter = adapter_for(loaded)
    before = adapter.forward(framed)
    with applied(spec):
        after = adapter.forward(framed)
    return before[0].float(), after[0].float()


def kl_divergence(p_before: torch.Tensor, p_after: torch.Tensor) -> float:
    """KL(before || after) in nats of two distributions (V,); tokens with p_before = 0 add nothing."""
    terms = p_before * (torch.log(p_before) - torch.log(p_after))
    return float(torch.where(p_before > 0, terms, torch.zeros_like(terms)).sum())


@torch.no_grad()
def effect(loaded, text: str, spec: Interventions, target: str | None = None, k: int = 10) -> Effect:
    text = check_text(text)
    if not loaded.generates:
        raise InputError(f"{loaded.name} is an encoder: it predicts no next token to compare. "
                         "Ablate its heads in the window to see its attention change.")
    loaded.model.eval()
    framed = adapter_for(loaded).frame(text, target=target)
    before, after = logits_pair(loaded, framed, spec)                      # (T, V) each
    pb, pa = torch.softmax(before[-1], -1), torch.softmax(after[-1], -1)    # (V,)
    top = lambda p: [(int(i), float(p[i])) for i in p.topk(min(k, p.numel())).indices]  # noqa: E731
    predicted = int(pb.argmax())
    return Effect(list(framed.target_ids), list(framed.source_ids) if framed.target_ids and framed.source_ids else [],
                  top(pb), top(pa), float((after - before).abs().max()), kl_divergence(pb, pa),
                  predicted, float((pa[predicted] - pb[predicted]) / pb[predicted]))
