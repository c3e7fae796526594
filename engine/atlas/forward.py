"""The atlas's one recorded forward, shared by the pass (build.py) and the retrieval probes
(retrieval.py): the seam's recorder with each row's log-sum-exp from the fused kernel, and
one hook that reads each head's activation as its output passes (``HeadNorms``)."""
from __future__ import annotations

import contextlib

import torch

from attnscope.engine.inputs import InputError
from attnscope.engine.kinds import DECODER_SELF, EFFECTIVE, ENCODER_SELF, QUERY_SIDE
from attnscope.engine.loading.dense import needs_seam
from attnscope.engine.seam import SeamHook, Site, hooks, recording
from attnscope.engine.seam.gated import as_heads, at_projection_input


class HeadNorms(SeamHook):
    """||z_h W_O,h|| at each query position of every head of ``kind``, read at the seam as the
    heads' outputs pass (changes nothing): with G_h = W_O,h^T W_O,h (Dv x Dv), the squared
    norm is z G_h z^T, so the (T, D) products are never formed. A gated model's heads
    (Qwen3.5: o_proj((p·v) ⊙ σ(g))) are read where the projection reads them, gate included
    (engine.seam.gated), through ``at_projections`` around the forward."""

    def __init__(self, adapter, kind: str, layers: int):
        self.kind = kind
        self.gram = {}
        for layer in range(layers):
            w_out, _ = adapter.output_projection(Site(kind, layer))              # (D, H * Dv)
            self.gram[layer] = w_out.detach().float()
        self.gates = {s.layer: g for s, g in adapter.gated_projections({kind}).items()}   # layer -> (projection, H)
        self.norms: dict[int, torch.Tensor] = {}

    @contextlib.contextmanager
    def at_projections(self):
        """The gated layers' norms read at their projections' input while the forward runs."""
        def read(layer, heads):
            def norm(args):
                self._norm(layer, as_heads(args[0], heads)[0].float())          # (H, T, Dv) gated
            return norm
        handles = [at_projection_input(m, read(layer, heads)) for layer, (m, heads) in self.gates.items()]
        try:
            yield
        finally:
            for h in handles:
                h.remove()

    def _norm(self, layer: int, z: torch.Tensor) -> None:
        h, _, dv = z.shape
        g = self.gram[layer]
        if g.dim() == 2:                                                         # first use: the Gram matrices
            w = g.reshape(g.shape[0], h, dv)                                     # (D, H, Dv)
            g = self.gram[layer] = torch.einsum("dhv,dhu->hvu", w, w)            # (H, Dv, Dv)
        self.norms[layer] = torch.einsum("htv,hvu,htu->ht", z, g, z).clamp_min_(0).sqrt_()

    def edits(self, site):
        return site is not None and site.kind == self.kind

    def edits_output_only(self, site):
        return True

    def output(self, call, out):
        if call.site.layer not in self.gates:                                    # a gated layer: at_projections
            self._norm(call.site.layer, out[0].float())                          # (H, T, Dv)
        return out


def atlas_kind(loaded) -> str:
    """The self-attention kind an atlas reads: a decoder's, an encoder's, or an encoder-decoder's
    encoder (where the document is read, every key seen; its decoder runs teacher-forced on the same
    text, and its self and cross attention are not in the atlas). A hybrid's linear or state-space
    layers (effective attention) are left out: every statistic assumes a softmax distribution, and
    ``probe_meta`` says how many were skipped."""
    if loaded.meta.get("dense"):        # nothing reaches the seam's recorder (engine.loading.dense)
        raise needs_seam(loaded.name, "the atlas")
    if loaded.role == "encoder-decoder" and ENCODER_SELF in loaded.kinds:
        return ENCODER_SELF
    softmax = [k for k in loaded.kinds if k in (ENCODER_SELF, DECODER_SELF)]
    if not softmax:
        raise InputError(f"{loaded.name} has no softmax self-attention layer; the atlas's statistics are of "
                         "softmax distributions, so it cannot build one.")
    return softmax[0]


def probe_meta(adapter, framed, kind: str) -> tuple[list, dict]:
    """The calls of ``kind`` on a short probe, and what the atlas's file says of their shape: the
    widest head (Gemma 4's layers differ; narrower ones are padded with zeros in the Q/K sample,
    which a centred PCA ignores) and the effective-attention layers left out."""
    with recording(lse=True) as rec:
        adapter.forward(framed, last_only=True)
    calls = rec.layers(kind)
    effective = len(rec.layers(EFFECTIVE))
    skipped = max(effective, _model_layers(adapter.loaded) - len(calls)) if kind == DECODER_SELF else 0
    facts = {"head_dim": max(int(c.q.shape[3]) for c in calls), "skipped_layers": skipped}
    if skipped:
        facts["skipped"] = (f"{skipped} linear or state-space layer{'s' * (skipped > 1)} left out ({effective} drawn "
                            "elsewhere as effective attention): every statistic here assumes a softmax distribution.")
    return calls, facts


def _model_layers(loaded) -> int:
    """The decoder's layer count as its config says (0 where it says none): softmax or not."""
    config = getattr(getattr(loaded.model, "config", None), "get_text_config", lambda: None)()
    count = getattr(config, "num_hidden_layers", 0)
    return count if isinstance(count, int) else 0


def side_ids(framed, kind: str) -> list[int]:
    """The token ids of the side whose queries ``kind`` reads (an encoder's source, else the target)."""
    return framed.source_ids if QUERY_SIDE[kind] == "source" else framed.target_ids


@torch.no_grad()
def record(adapter, framed, kind: str, norms: SeamHook | None = None, lse: bool = True):
    """One recorded forward (the seam's recorder, each row's log-sum-exp from the kernel unless
    ``lse`` is false: the retrieval probes read argmaxes only): the calls of ``kind``."""
    gated = norms.at_projections() if isinstance(norms, HeadNorms) else contextlib.nullcontext()
    with recording(lse=lse) as rec, hooks(norms or SeamHook()), gated:
        adapter.forward(framed, last_only=True)
    return rec.layers(kind)
