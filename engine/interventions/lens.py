"""The logit lens: what the residual stream after each decoder layer would predict.

Why replay the model's own tail instead of calling a norm and a head: what follows the last
block differs by family (a final LayerNorm or RMSNorm, T5's d_model**-0.5 rescale before a
tied head, BART's final_logits_bias, Gemma 2's final softcap), and the model already knows
it. So the residual stream after layer l is put in place of the last block's output and
the model finishes its own forward: the unembedding is exactly the model's, and at the last
layer the lens is the model's prediction. Each block is computed once: one forward keeps every
block's output, and each layer is read through the final norm and unembedding where they are
all that follows the blocks, else by a forward in which every block hands back its recorded
output (engine.runtime.modules.handing_back) and only what surrounds the blocks runs.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from attnscope.engine.adapters import adapter_for
from attnscope.engine.decoding.greedy import request
from attnscope.engine.inputs import InputError, check_count, check_kind
from attnscope.engine.interventions.spec import Interventions, applied, check_fits
from attnscope.engine.runtime.modules import handing_back
from attnscope.engine.seam.hf_attention import first_of
from attnscope.engine.loading.loaded import LoadedModel


@dataclass
class Lens:
    token_ids: list[int]            # the decoder's ids fed (positions of the table)
    tokens: list[str]
    top_ids: np.ndarray             # (L, T, k) int: each layer's top tokens per position
    top_p: np.ndarray               # (L, T, k) float32: their probabilities
    top_tokens: list[list[list[str]]]   # (L, T, k) the same as text
    final_p: np.ndarray             # (L, T) float32: probability of the token the model finally predicts

    @property
    def n_layers(self) -> int:
        return self.top_ids.shape[0]


@torch.no_grad()
def logit_lens(loaded, text: str, target: str | None = None, spec: Interventions | None = None, k: int = 5) -> Lens:
    """The lens of ``text`` (an encoder-decoder's ``target`` is its decoder prefix, else its own
    greedy output), under ``spec`` if given."""
    prepared = request(loaded, text, target, None, spec, "read the logit lens",  # checked once, framed once
                       fits=lambda adapter: check_predicts(spec, adapter))     # kinds, layers, heads: no forward yet
    k = check_count(k, "k (the tokens each layer lists)")
    loaded, adapter, framed = prepared.loaded, prepared.adapter, prepared.framed
    check_predicts(spec, adapter, framed)                       # positions, on this text
    loaded.model.eval()
    blocks = adapter.residual_blocks()
    outs: list = []                                             # each block's output, as it returned it
    handles = [b.register_forward_hook(lambda _m, _i, out: outs.append(out)) for b in blocks]
    try:
        with applied(spec):
            final = adapter.forward(framed)                                   # (1, T, V)
    finally:
        for h in handles:
            h.remove()
    stream = [first_of(out).detach() for out in outs]                            # each (1, T, D)
    # One layer's (T, V) distribution at a time: all of them at once would be L x T x V floats
    # (16 layers x 1,024 tokens x 32k words: 2 GB).
    predicted = final[0].argmax(-1)                                            # (T,)
    read = _reader(adapter, blocks, framed, outs, final)
    tops, top_ps, finals = [], [], []
    for hidden in stream[:-1] + [None]:
        logits = final if hidden is None else read(hidden)                    # (1, T, V)
        probs = torch.softmax(logits[0].float(), -1)                           # (T, V)
        p, i = probs.topk(min(k, probs.shape[-1]), dim=-1)                     # (T, k)
        tops.append(i.cpu())
        top_ps.append(p.cpu())
        finals.append(probs.gather(-1, predicted[:, None])[:, 0].cpu())        # (T,)
    ids = torch.stack(tops).numpy()                                            # (L, T, k)
    tok = adapter_tokens(loaded)
    return Lens(list(framed.target_ids), list(framed.target_tokens), ids, torch.stack(top_ps).numpy(),
                [[tok.tokens(row.tolist()) for row in layer] for layer in ids], torch.stack(finals).numpy())


LENS_NEEDS = "The logit lens reads what a model predicts; {name} is an encoder and predicts no next token."


def check_predicts(spec: Interventions | None, adapter, framed=None, encoder_says: str = LENS_NEEDS) -> None:
    """InputError in one sentence when the model predicts no next token (``encoder_says``, its
    {name} the model's) or ``spec`` does not fit it (check_fits: kinds, layers, heads; given
    ``framed``, positions too): the lens's and the effect's door after the request's."""
    if not adapter.loaded.generates:
        raise InputError(encoder_says.format(name=adapter.loaded.name))
    check_fits(spec, adapter, framed)


def _reader(adapter, blocks, framed, outs: list, final: torch.Tensor):
    """How a layer's residual stream (1, T, D) becomes logits: the model's own final norm and
    unembedding where they are all that follows the last block (``adapter.final_norm``, checked
    again here: they must turn this run's last hidden states into exactly its logits), else the
    model's own forward after the blocks (``_replay``: T5's rescaling, BART's final bias, Gemma
    2's softcap). The whole forward again for each layer cost 16 forwards for a 16-layer model:
    175 s of the Lens at 4k tokens of a 236 M Llama on a CPU."""
    norm, head = adapter.final_norm(), adapter.unembedding()
    if norm is not None and torch.equal(head(norm(first_of(outs[-1]))), final):
        return lambda hidden: head(norm(hidden))
    return lambda hidden: _replay(adapter, framed, blocks, outs, hidden)


def _replay(adapter, framed, blocks, outs: list, hidden: torch.Tensor) -> torch.Tensor:
    """The model's logits with the last block's output replaced by ``hidden`` (1, T, D), from
    the model's own forward in which every block hands back what it returned in the recorded
    one (``outs``, the last with ``hidden`` in its place) without computing it again: what
    surrounds the blocks (embeddings, an encoder, the final norm, rescaling, biases, softcap)
    runs as the model runs it, and no block's attention or MLP does."""
    last = outs[-1]
    given = outs[:-1] + [(hidden, *last[1:]) if isinstance(last, tuple) else hidden]
    with handing_back(blocks, given):
        return adapter.forward(framed)


def adapter_tokens(loaded):
    """Something with ``tokens(ids)`` for the decoder's vocabulary (ours, or Hugging Face's)."""
    check_kind(loaded, LoadedModel, "loaded", "a LoadedModel (engine.loading.open_model)")
    if loaded.is_hf:
        return adapter_for(loaded).tokens
    return getattr(loaded, "tgt_tokenizer", None) or loaded.tokenizer
