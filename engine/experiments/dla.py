"""Direct logit attribution: each head's and each MLP's share of the clean logit difference.

The residual stream at the last position is a sum: the embeddings, each head's output carried
through its slice of the output projection, each attention layer's projection bias, each MLP's
output. The final norm is linear in that sum once its scale is the one the run computed, so
each part's share of the logit difference is the part, through the norm with that scale,
onto the difference of the two answers' unembedding rows. The shares, the embeddings' and the
constant terms (biases, the norm's shift) sum to the logit difference exactly.

The norm is asked, not named (engine.experiments.frozen_norms): a part c's share is
(N(c) - b) * s(c) / s(x) with x the run's residual stream, g * P(c) / s(x). A model whose
logits are not such a read of the residual stream (a final soft-cap, T5's rescale, Gemma 2's
norm after each sublayer) is refused: the parts would not sum to its logit difference, and
that is checked. Interventions hold in both runs: a
zero-ablated head's share is 0, a mean-ablated head's is its mean's.
"""
from __future__ import annotations

import numpy as np
import torch

from attnscope.engine.experiments.frozen_norms import frozen, norm_eps, norm_scale, subtracts_mean
from attnscope.engine.experiments.pairs import FramedPair
from attnscope.engine.experiments.patching import DLA, check_interventions, pair_adapter, result_frame
from attnscope.engine.experiments.points import ATTN_OUT, HEADS, LOGIT_DIFF, MLP_OUT, RESID_PRE, Points, capture, metric_of
from attnscope.engine.inputs import InputError
from attnscope.engine.interventions import Interventions
from attnscope.engine.kinds import DECODER_SELF
from attnscope.engine.seam import Site
from attnscope.engine.seam.hf_attention import first_of


class FrozenNorm:
    """The final norm with the scale of one residual vector ``x`` (D,): linear in its input
    (engine.experiments.frozen_norms)."""

    def __init__(self, norm: torch.nn.Module | None, x: torch.Tensor, name: str):
        self.norm = norm
        if norm is None:
            return
        eps = norm_eps(norm)
        if eps is None:
            raise InputError(f"{name}'s final norm ({type(norm).__name__}) says no epsilon, so its scale cannot be "
                             "taken from the run for direct logit attribution.")
        self.eps = eps
        self.shift = self.apply(torch.zeros_like(x)[None])[0]                     # b = N(0), (D,)
        self.centres = subtracts_mean(norm, x[None])
        self.scale = norm_scale(x[None], self.centres, eps)[0]                     # s(x), (1,)

    def apply(self, z: torch.Tensor) -> torch.Tensor:
        return self.norm(z.to(next(self.norm.parameters()).dtype)).float()

    def shares(self, parts: torch.Tensor) -> torch.Tensor:
        """(N, D) parts of x -> (N, D) their parts of N(x) - b."""
        if self.norm is None:
            return parts.float()
        return frozen(self.apply(parts), self.shift, norm_scale(parts, self.centres, self.eps), self.scale) - self.shift


@torch.no_grad()
def direct_logit_attribution(loaded, pair: FramedPair, metric: str = LOGIT_DIFF,
                             interventions: Interventions | None = None):
    """A PatchResult (method "dla") whose results are the clean run's shares of its logit
    difference: heads (L, H), mlp (L,), embed () and bias () (projection biases, the norm's
    shift, the unembedding's bias); together they sum to ``clean``. Both runs are with
    ``interventions``."""
    if loaded.role != "decoder":
        raise InputError("Direct logit attribution splits a decoder's residual stream; for an encoder-decoder use "
                         "exact or attribution patching.")
    if metric != LOGIT_DIFF:
        raise InputError("Direct logit attribution splits the logit difference; it has no share of a log-probability.")
    check_interventions(loaded, pair, interventions)
    adapter = pair_adapter(loaded, pair)
    loaded.model.eval()
    points = Points.of(adapter, {HEADS, RESID_PRE, ATTN_OUT, MLP_OUT})
    run = capture(points, pair.clean, interventions=interventions)
    corrupt = float(metric_of(capture(points, pair.corrupt, keep_blocks=False, interventions=interventions).last_logits,
                              pair.answers, metric))
    clean = float(metric_of(run.last_logits, pair.answers, metric))
    x = first_of(run.blocks[-1])[0, -1].float()                                      # (D,) the final residual stream
    parts = [run.at[(RESID_PRE, 0)][-1].float()]
    labels: list = ["embed"]        # "embed", ("head", layer, head), ("bias", layer), ("mlp", layer)
    for layer in range(points.layers):
        w_out, _ = adapter.output_projection(Site(DECODER_SELF, layer))             # (D, H * Dv)
        heads = run.at[(HEADS, layer)][:, -1].float()                               # (H, Dv)
        h, dv = heads.shape
        by_head = torch.einsum("hv,dhv->hd", heads, w_out.float().reshape(-1, h, dv))  # (H, D)
        attn = run.at[(ATTN_OUT, layer)][-1].float()
        parts += [*by_head, attn - by_head.sum(0), run.at[(MLP_OUT, layer)][-1].float()]
        labels += [("head", layer, i) for i in range(h)] + [("bias", layer), ("mlp", layer)]
    parts = torch.stack(parts)                                                      # (N, D)
    if not torch.allclose(parts.sum(0), x, rtol=1e-4, atol=1e-4 * float(x.abs().max())):
        raise InputError(f"{loaded.name}'s residual stream is not the sum of its embeddings, attention and MLP "
                         "outputs (a norm after each sublayer?), so direct logit attribution cannot split it.")
    head = points.head
    w_u = head.weight.float()                                                       # (V, D)
    a, b = pair.answers
    direction = w_u[a] - w_u[b]                                                     # (D,)
    norm = FrozenNorm(adapter.final_norm(), x, loaded.name)
    shares = (norm.shares(parts) @ direction).double().cpu().numpy()               # (N,)
    constant = float(((norm.shift if norm.norm is not None else torch.zeros_like(x)) @ direction).double())
    if getattr(head, "bias", None) is not None:
        constant += float(head.bias[a] - head.bias[b])
    out = result_frame(pair, metric, DLA, False, clean, corrupt)
    layers, n_heads = points.layers, run.at[(HEADS, 0)].shape[0]
    heads_out, mlp = np.zeros((layers, n_heads)), np.zeros(layers)
    embed, bias = 0.0, constant
    for label, share in zip(labels, shares):
        if label == "embed":
            embed = float(share)
        elif label[0] == "head":
            heads_out[label[1], label[2]] = share
        elif label[0] == "mlp":
            mlp[label[1]] = share
        else:
            bias += float(share)
    total = heads_out.sum() + mlp.sum() + embed + bias
    if not np.isclose(total, clean, rtol=1e-3, atol=1e-3):
        raise InputError(f"{loaded.name}'s logits are not read linearly from its final norm (a soft-cap or a "
                         f"rescale): the shares sum to {total:.4f}, not its logit difference {clean:.4f}, so direct "
                         "logit attribution cannot split it.")
    out.results = {HEADS: heads_out, "mlp": mlp, "embed": np.float64(embed), "bias": np.float64(bias)}
    return out
