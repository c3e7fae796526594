"""The logit lens of an ``ndif:`` model, read where the model is served, in one nnsight job.

As engine.interventions.lens reads it here: the residual stream after each decoder block,
through the model's own final norm and unembedding (Gemma 2's final softcap after them), its
top tokens and the probability of the token the last layer predicts. A model served by NDIF
has no weights here, so the whole lens runs there: one forward keeps each block's output on
the server and only the reductions travel back, (L, T, k) token ids and probabilities and (L, T)
probabilities of the final prediction. The modules are named from the model's structure (the
decoder's blocks, the last norm outside them, the unembedding), and the server checks that the
last layer read so gives exactly the model's logits; if not, the lens is refused in one
sentence. Interventions hold in the forward there, at the attention op, as a remote Run's.
"""
from __future__ import annotations

import numpy as np
import torch

from attnscope.engine.adapters import adapter_for
from attnscope.engine.decoding.greedy import request
from attnscope.engine.errors import RemoteJobError
from attnscope.engine.inputs import InputError, check_count
from attnscope.engine.interventions.lens import Lens, adapter_tokens
from attnscope.engine.remote.run import check_remote_interventions as check_interventions
from attnscope.engine.remote.run import session_for
from attnscope.engine.remote.server import changed, layer_call
from attnscope.engine.seam.hf_attention import first_of

TAIL_ATOL = 1e-4            # the last layer read through the tail vs the model's logits, float32


def _reads_a_decoder(loaded) -> None:
    """InputError unless ``loaded`` (or an adapter's model) is a decoder: before any framing."""
    loaded = getattr(loaded, "loaded", loaded)
    if loaded.role != "decoder":
        raise InputError(f"The logit lens of a model served by NDIF reads a decoder; {loaded.name} is an "
                         f"{loaded.role}.")


def remote_lens(loaded, text: str, spec=None, k: int = 5) -> Lens:
    """The lens of ``text`` on the ``ndif:`` decoder ``loaded``, under ``spec`` if given, read
    where it is served (one job)."""
    framed = request(loaded, text, what="read the logit lens", remote=True,    # checked once, framed once
                     fits=_reads_a_decoder).framed
    k = check_count(k, "k (the tokens each layer lists)")
    _reads_a_decoder(loaded)
    session = session_for(loaded)
    check_interventions(spec, loaded, len(framed.target_ids))
    spec = None if spec is None or spec.empty else spec
    blocks, norm, head = tail_paths(loaded, session.ops)
    softcap = getattr(loaded.model.config.get_text_config(), "final_logit_softcapping", None)
    back = lens_job(session, framed.target_ids, blocks, norm, head, softcap, k, spec)
    if float(back["tail_error"]) > TAIL_ATOL:
        raise RemoteJobError(f"{loaded.name}'s last layer read through its final norm and unembedding does not give "
                             f"its logits (off by {float(back['tail_error']):.2g}): something else follows its blocks, "
                             "so attnscope cannot read its logit lens there.")
    ids = back["ids"].numpy()                                                  # (L, T, k)
    tok = adapter_tokens(loaded)
    return Lens(list(framed.target_ids), list(framed.target_tokens), ids, back["p"].numpy().astype(np.float32),
                [[tok.tokens(row.tolist()) for row in layer] for layer in ids],
                back["final"].numpy().astype(np.float32))


def tail_paths(loaded, ops: list[tuple[str, str]]) -> tuple[list[str], str | None, str]:
    """(each decoder block's module path, the final norm's, the unembedding's) in ``loaded.model``
    (the same names in the model nnsight sends the job to). The blocks: the one ModuleList whose
    i-th child holds the i-th attention op (``ops``, engine.remote.jobs.attention_ops, read from
    the source): a model served by NDIF is built here on the meta device, never attached to the
    seam, so the adapter's blocks (found from the seam's sites) are not there to find. The norm:
    the last module outside the blocks with weights of one dimension, after the blocks (the
    local lens finds it by a forward, which a model with no weights here cannot run)."""
    adapter = adapter_for(loaded)
    names = {id(m): n for n, m in loaded.model.named_modules()}
    blocks = _blocks_of(loaded, [path for path, _ in ops])
    modules = dict(loaded.model.named_modules())
    head = adapter.unembedding()
    inside = {id(m) for b in blocks for m in modules[b].modules()} | {id(m) for m in head.modules()}
    order = list(loaded.model.named_modules())
    last_block = max(i for i, (_, m) in enumerate(order) if id(m) in inside and id(m) != id(head))
    after = [n for n, m in order[last_block + 1:] if id(m) not in inside and not list(m.children())
             and any(p.dim() == 1 for p in m.parameters(recurse=False))]
    return blocks, (after[-1] if after else None), names[id(head)]


def _blocks_of(loaded, op_paths: list[str]) -> list[str]:
    """The paths of the ModuleList's children that hold the attention ops at ``op_paths``, one
    each, in layer order; InputError in one sentence when no ModuleList does."""
    import torch

    for name, modules in loaded.model.named_modules():
        if not isinstance(modules, torch.nn.ModuleList) or len(modules) != len(op_paths) or not len(modules):
            continue
        paths = [f"{name}.{i}" if name else str(i) for i in range(len(modules))]
        if all(op.startswith(path + ".") for op, path in zip(op_paths, paths)):
            return paths
    raise InputError(f"{loaded.name}'s attention modules are not one to a block of one list of blocks, so attnscope "
                     "cannot tell which block's output to read the logit lens from.")


def lens_job(session, ids: list[int], blocks: list[str], norm: str | None, head: str, softcap, k: int,
             spec=None) -> dict:
    """The one job: {"ids" (L, T, k), "p" (L, T, k), "final" (L, T), "tail_error" (0-d)}, each
    block's output kept there and read through the tail after the forward."""
    import nnsight

    model, ops = session.model, session.ops
    with session.sending(("lens", spec is not None)) as remote:
        with model.trace(torch.tensor([ids]), remote=remote):
            made = spec.hooks() if spec is not None else []
            by_block = _ops_by_block(ops, blocks)
            hidden = []
            for b, path in enumerate(blocks):
                for layer, (op_path, op) in by_block[b]:
                    if made:
                        node = getattr(model.get(op_path).source, op)
                        args, kwargs = node.inputs
                        output, _call = changed(layer_call(args, kwargs, layer), made)
                        node.skip((output, None))
                hidden.append(first_of(model.get(path).output))
            logits = model.output.logits
            modules = (None if norm is None else model.get(norm)._module, model.get(head)._module)
            back = read_lens(hidden, logits, *modules, softcap, k)
            nnsight.save(back)
    return back


def _ops_by_block(ops: list[tuple[str, str]], blocks: list[str]) -> list[list[tuple[int, tuple[str, str]]]]:
    """Each block's attention ops (with their layer numbers), in the order the forward runs them."""
    out = [[] for _ in blocks]
    for layer, (path, op) in enumerate(ops):
        b = next(i for i, block in enumerate(blocks) if path == block or path.startswith(block + "."))
        out[b].append((layer, (path, op)))
    return out


@torch.no_grad()
def read_lens(hidden: list, final, norm, head, softcap, k: int) -> dict:
    """Runs there: each block's output (1, T, D) through ``norm`` and ``head`` (and the softcap)
    to its top ``k`` tokens and the probability of the final prediction; the last block's
    through the tail against the model's ``final`` logits (1, T, V)."""
    predicted = final[0].argmax(-1)                                              # (T,)

    def tail(h):
        logits = head(h if norm is None else norm(h))
        return logits if softcap is None else torch.tanh(logits / softcap) * softcap

    tops, ps, finals = [], [], []
    for h in hidden[:-1] + [None]:
        logits = final if h is None else tail(h)                                 # (1, T, V)
        probs = torch.softmax(logits[0].float(), -1)
        p, i = probs.topk(min(k, probs.shape[-1]), dim=-1)                       # (T, k)
        tops.append(i.cpu())
        ps.append(p.cpu())
        finals.append(probs.gather(-1, predicted[:, None])[:, 0].cpu())
    error = (tail(hidden[-1]).float() - final.float()).abs().max().cpu()
    return {"ids": torch.stack(tops), "p": torch.stack(ps), "final": torch.stack(finals), "tail_error": error}
