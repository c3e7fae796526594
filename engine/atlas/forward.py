"""The atlas's one recorded forward, shared by the pass (build.py) and the retrieval probes
(retrieval.py): the seam's recorder with each row's log-sum-exp from the fused kernel, and
one hook that reads each head's activation as its output passes (``HeadNorms``)."""
from __future__ import annotations

import torch

from attnscope.engine.inputs import InputError
from attnscope.engine.kinds import QUERY_SIDE
from attnscope.engine.seam import SeamHook, Site, hooks, recording


class HeadNorms(SeamHook):
    """||z_h W_O,h|| at each query position of every head of ``kind``, read at the seam as the
    heads' outputs pass (changes nothing): with G_h = W_O,h^T W_O,h (Dv x Dv), the squared
    norm is z G_h z^T, so the (T, D) products are never formed."""

    def __init__(self, adapter, kind: str, layers: int):
        self.kind = kind
        self.gram = {}
        for layer in range(layers):
            w_out, _ = adapter.output_projection(Site(kind, layer))              # (D, H * Dv)
            self.gram[layer] = w_out.detach().float()
        self.norms: dict[int, torch.Tensor] = {}

    def edits(self, site):
        return site is not None and site.kind == self.kind

    def edits_output_only(self, site):
        return True

    def output(self, call, out):
        z = out[0].float()                                                       # (H, T, Dv)
        h, _, dv = z.shape
        g = self.gram[call.site.layer]
        if g.dim() == 2:                                                         # first use: the Gram matrices
            w = g.reshape(g.shape[0], h, dv)                                     # (D, H, Dv)
            g = self.gram[call.site.layer] = torch.einsum("dhv,dhu->hvu", w, w)  # (H, Dv, Dv)
        self.norms[call.site.layer] = torch.einsum("htv,hvu,htu->ht", z, g, z).clamp_min_(0).sqrt_()
        return out


def atlas_kind(loaded) -> str:
    """The self-attention kind an atlas reads: a decoder's, or an encoder's."""
    if loaded.role == "encoder-decoder":
        raise InputError(f"{loaded.name} is an encoder-decoder; the atlas reads one self-attention stack "
                         "(a decoder or an encoder) for now.")
    if loaded.meta.get("dense"):        # nothing reaches the seam's recorder (engine.adapters.hf_dense)
        from attnscope.engine.adapters.hf_dense import needs_seam

        raise needs_seam(loaded.name, "the atlas")
    return loaded.kinds[0]


def side_ids(framed, kind: str) -> list[int]:
    """The token ids of the side whose queries ``kind`` reads (an encoder's source, else the target)."""
    return framed.source_ids if QUERY_SIDE[kind] == "source" else framed.target_ids


@torch.no_grad()
def record(adapter, framed, kind: str, norms: SeamHook | None = None):
    """One recorded forward (the seam's recorder, each row's log-sum-exp from the kernel): the calls of ``kind``."""
    with recording(lse=True) as rec, hooks(norms or SeamHook()):
        adapter.forward(framed, last_only=True)
    return rec.layers(kind)
