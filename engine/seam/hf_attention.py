"""Hugging Face models at the seam: one attention function registered with transformers.

transformers 5 routes every supported architecture's attention through
``ALL_ATTENTION_FUNCTIONS[config._attn_implementation]`` with (module, query, key, value,
mask, scaling, dropout, and per model: sliding_window, softcap, position_bias, s_aux). We
register ``attnscope`` there, with the boolean mask builder transformers gives its sdpa path
(True = may attend; left out, as for sdpa, where the call is plainly causal or sees every
key: the call then says ``causal``, which the fused kernel runs fastest and the recording
keeps), and switch a model to it. Each attention module learns its ``Site`` once, by one
small forward that notes the order and shapes of the calls (``assign_sites``): that needs no
table of module names per architecture.

Two doors keep a model's numbers its own. Every keyword a call carries is one the seam reads
or knows to change nothing (``KEYWORDS``); any other is refused with its name, never dropped
(a new one, as gpt-oss's sinks once were, would otherwise leave the numbers silently
wrong). And when a model is opened (``attach``) the seam's output on a short probe is held
against the model's own eager forward on the same probe, the same model switched to eager
and back (no second copy in memory), and a model whose numbers differ is refused.
"""
from __future__ import annotations

import torch

from attnscope.engine.kinds import CROSS, DECODER_SELF, ENCODER_SELF
from attnscope.engine.runtime.device import input_device
from attnscope.engine.seam.attend import SeamHook, attend, hooks
from attnscope.engine.seam.call import AttentionCall, Site

NAME = "attnscope"
_registered = False

# The keywords a model may hand its attention function beside (module, query, key, value,
# mask, scaling, dropout), each with what the seam does with it: the first group it reads,
# the second changes nothing of the call's maths (transformers passes a forward's own
# keywords on to every attention call). Any other keyword is refused (``UnknownKeyword``).
KEYWORDS = {
    "softcap": "read: the scores are capped, cap * tanh(score / cap)",
    "position_bias": "read: added to the scores (T5's relative positions)",
    "sliding_window": "read: said for the user; the window is in the mask",
    "is_causal": "read: a call with no mask is causal unless it says False",
    "s_aux": "read: one sink logit per query head, one more term in each row's softmax denominator (gpt-oss)",
    "sinks": "read: as s_aux (Inkling 2's name, shaped (B, Hq, Tq, 1)): one logit per query head, or per query",
    "position_ids": "inert: the positions are in the queries and keys already (rotary is applied before the call)",
    "use_cache": "inert: the cache is updated before the call; its keys and values are the ones handed over",
    "output_attentions": "inert: the weights are never returned by the model; a recording keeps what they come from",
    "output_hidden_states": "inert: which outputs the forward returns, not how attention computes",
    "output_router_logits": "inert: whether a mixture of experts returns its router's logits",
    "token_type_ids": "inert: segment embeddings, added to the hidden states before the call",
    "encoder_hidden_states": "inert: cross-attention's keys and values are computed from them before the call",
    "labels": "inert: the loss's targets, passed on by a multimodal forward (Gemma 4); no part of attention",
    "decoder_input_ids": "inert: a speech model's forward passes its decoder's ids on; the queries are computed already",
    "cache": "inert: transformers 5's name of the cache, updated before the call (as use_cache)",
    "logits_to_keep": "inert: which positions' logits the head computes, after attention (GOT-OCR2 passes it on)",
    "deterministic": "inert: asks a flash kernel for a fixed summation order; the seam's order is its own",
    "indices": "read: the keys a sparse attention's indexer chose for each query (DeepSeek's DSA, GLM-5), folded into "
               "the mask, so every key it did not choose has weight exactly 0",
}
# Keywords that change nothing when None and select keys otherwise (sparse attention): accepted
# as None, refused naming them when they hold a selection.
NONE_ONLY = {
    "block_indices": "a sparse attention's chosen key blocks (MiniMax M3): None attends every key the mask allows",
}


def attnscope_attention(module, query, key, value, attention_mask, scaling=None, dropout=0.0, **kwargs):
    """transformers' attention-function signature -> ``attend``; returns ((B, Tq, H, Dh), None):
    weights are never returned by the model, a Recorder keeps what they are computed from."""
    call = interface_call(module, query, key, value, attention_mask, scaling, dropout, **kwargs)
    return attend(call).transpose(1, 2).contiguous(), None


def interface_call(module, query, key, value, attention_mask, scaling=None, dropout=0.0, **kwargs) -> AttentionCall:
    """What transformers hands an attention function, as the seam's AttentionCall: here, and
    where a model runs under nnsight (engine.remote reads the same arguments from the
    attention-interface op's inputs). A keyword not in KEYWORDS is refused (UnknownKeyword)."""
    unknown = [k for k in kwargs if k not in KEYWORDS and not (k in NONE_ONLY and kwargs[k] is None)]
    if unknown:
        raise UnknownKeyword(module, unknown, kwargs)
    scale = float(scaling) if scaling is not None else query.shape[-1] ** -0.5
    softcap = kwargs.get("softcap")
    is_causal = kwargs.get("is_causal")
    is_causal = getattr(module, "is_causal", True) if is_causal is None else is_causal   # as transformers' sdpa path
    causal = bool(is_causal) and attention_mask is None and query.shape[2] > 1
    indices = kwargs.get("indices")
    if indices is not None:
        attention_mask = chosen_keys(module, attention_mask, causal, indices, query.shape[2], key.shape[2])
        causal = False
    return AttentionCall(getattr(module, "attnscope_site", None), query, key, value, mask=attention_mask,
                         bias=kwargs.get("position_bias"), scale=scale, softcap=float(softcap) if softcap else None,
                         window=kwargs.get("sliding_window"), dropout=dropout, module=module, causal=causal,
                         sink=_sink(module, kwargs.get("s_aux", kwargs.get("sinks")), query.shape[1], query.shape[2]),
                         chosen=None if indices is None else int(indices.shape[-1]))


def chosen_keys(module, mask, causal: bool, indices, tq: int, tk: int) -> torch.Tensor:
    """A sparse attention's choice (``indices`` (B, Tq, k): the keys its indexer picked for each
    query) folded into the call's mask, (B, 1, Tq, Tk) bool or the mask's own float form: a key
    not picked is masked, exactly as the model's eager path masks it (the same softmax over the
    picked keys, so every weight is exact and every other key exactly 0). The mask is (Tq, Tk), as
    the model's own is for these families; the estimate counts it per layer."""
    if not isinstance(indices, torch.Tensor) or indices.dim() != 3 or indices.shape[1] != tq \
            or indices.is_floating_point():
        raise SiteError(f"{type(module).__name__} hands its attention the keys its indexer chose as "
                        f"{_short(indices)}, not one row of key positions per query ({tq}), which attnscope "
                        "does not know how to apply.")
    idx = indices.long()
    if idx.numel() and (int(idx.min()) < 0 or int(idx.max()) >= tk):
        raise SiteError(f"{type(module).__name__}'s indexer chose keys outside the {tk} it was given "
                        f"(from {int(idx.min())} to {int(idx.max())}), which attnscope cannot draw.")
    picked = torch.zeros(idx.shape[0], tq, tk, dtype=torch.bool, device=idx.device)
    picked = picked.scatter_(-1, idx, True)[:, None]                              # (B, 1, Tq, Tk)
    if mask is None:
        if not causal:
            return picked
        future = torch.ones(tq, tk, dtype=torch.bool, device=idx.device).triu_(tk - tq + 1)   # (Tq, Tk)
        return picked & ~future
    if mask.dtype == torch.bool:
        return mask & picked
    return mask.masked_fill(~picked, torch.finfo(mask.dtype).min)


def _sink(module, s_aux, n_heads: int, n_queries: int) -> torch.Tensor | None:
    """gpt-oss's ``s_aux`` (or Inkling 2's ``sinks``) as the call's sink: (Hq,), one logit per query
    head, or (B, Hq, Tq), one per query (Inkling 2 projects it from each token's hidden state:
    a (B, Hq, Tq, 1) tensor the same in every row is one per head). SiteError for any other shape."""
    if s_aux is None:
        return None
    if isinstance(s_aux, torch.Tensor) and s_aux.dim() == 4 and s_aux.shape[1] == n_heads and s_aux.shape[-1] == 1 \
            and s_aux.shape[2] in (1, n_queries) and s_aux.is_floating_point():
        per_head = s_aux[:1, :, :1]                                      # (1, Hq, 1, 1)
        if bool((s_aux == per_head).all()):
            return per_head.reshape(n_heads)
        return s_aux[..., 0].expand(-1, n_heads, n_queries)            # (B, Hq, Tq) one logit per query
    if not isinstance(s_aux, torch.Tensor) or s_aux.numel() != n_heads or not s_aux.is_floating_point():
        shape = tuple(s_aux.shape) if isinstance(s_aux, torch.Tensor) else type(s_aux).__name__
        raise SiteError(f"{type(module).__name__} passes attention sinks (s_aux) of shape {shape}, not one number per "
                        f"query head ({n_heads}) or per query, which attnscope does not know how to apply.")
    return s_aux.reshape(n_heads)


def register() -> None:
    """Register the function and its mask builder with transformers (once per process)."""
    global _registered
    if _registered:
        return
    from transformers import AttentionInterface
    from transformers.masking_utils import AttentionMaskInterface, sdpa_mask

    AttentionInterface.register(NAME, attnscope_attention)
    AttentionMaskInterface.register(NAME, sdpa_mask)
    _registered = True


class SiteError(RuntimeError):
    """A model whose attention does not reach the seam the way attnscope needs."""


class UnseenAttention(SiteError):
    """A model whose heads the seam cannot see or tell apart (attention computed in its own classes,
    one module called in several layers or twice in one): refused here, and the loader may still
    draw it from its own eager weights (engine.loading.dense_eager.fall_back)."""


class UnknownKeyword(SiteError):
    """An attention call carrying a keyword the seam does not understand: refused, never dropped."""

    def __init__(self, module, names: list[str], kwargs: dict):
        said = ", ".join(f"{n}={_short(kwargs[n])}" for n in names)
        plural = "s" if len(names) > 1 else ""
        super().__init__(f"{type(module).__name__} hands its attention the argument{plural} {said}, which attnscope's "
                         "seam does not understand: ignored, it could make every number shown wrong, so the model "
                         "is refused.")
        self.names = names


def _short(value) -> str:
    """A keyword's value in a few words: a tensor by its shape, anything else by its repr."""
    if isinstance(value, torch.Tensor):
        return f"<tensor {tuple(value.shape)}>"
    return repr(value)[:40]


class _Discovery(SeamHook):
    def __init__(self):
        self.seen: list[tuple[object, int, int]] = []   # (module, Tq, Tk) in call order
        self.ids: set[int] = set()
        self.calls: dict[int, AttentionCall] = {}      # id(module) -> its call, as the recorder keeps it

    def see(self, call):
        self.seen.append((call.module, call.q.shape[2], call.k.shape[2]))
        self.ids.add(id(call.module))
        self.calls.setdefault(id(call.module), call.detached(False))


# The probe: a source of 5 tokens and a target of 3, distinct ids (the same id everywhere
# would give every query the same scores, and hide a wrong softmax).
PROBE_SOURCE, PROBE_TARGET = 5, 3


def _probe(model, role: str, dev: torch.device, **kwargs) -> None:
    """The model's forward on the probe, its ids on ``dev`` (``kwargs``: more keywords to the forward)."""
    vocab = embedding_rows(model)
    ids = lambda n: (3 + torch.arange(n, device=dev) % max(1, vocab - 3))[None]   # noqa: E731  (1, n)
    if role == "encoder-decoder":      # the decoder starts as a Run's does: its start token (often the pad id)
        target = ids(PROBE_TARGET)
        start = _start_id(model)
        if start is not None and 0 <= start < vocab:
            target[0, 0] = start
        model(input_ids=ids(PROBE_SOURCE), decoder_input_ids=target, **kwargs)
    else:
        model(input_ids=ids(PROBE_SOURCE), **kwargs)


def _start_id(model) -> int | None:
    """An encoder-decoder's first decoder token: the config's, the generation config's, the pad id."""
    c, g = model.config, getattr(model, "generation_config", None)
    for found in (getattr(c, "decoder_start_token_id", None), getattr(g, "decoder_start_token_id", None),
                  getattr(c, "pad_token_id", None)):
        if isinstance(found, int):
            return found
    return None


@torch.no_grad()
def trims_queries(model, role: str, dev: torch.device) -> bool:
    """Whether ``logits_to_keep=1`` makes the model skip queries at some attention call (Gemma 4's
    KV-shared layers compute only the kept positions' queries): a Run, which asks for the last
    logits only, must then not ask it, or those layers' rows would be missing. One probe forward."""
    import inspect

    if "logits_to_keep" not in inspect.signature(model.forward).parameters:
        return False
    found = _Discovery()
    with hooks(found):
        _probe(model, role, dev, logits_to_keep=1, use_cache=False)
    full = {PROBE_SOURCE, PROBE_TARGET}
    return any(tq not in full for _, tq, _ in found.seen)


def embedding_rows(model) -> int:
    """The rows of a model's input embedding: ``num_embeddings`` of a torch Embedding, the weight's
    first dimension of any other (I-BERT's QuantEmbedding keeps no count)."""
    table = model.get_input_embeddings()
    rows = getattr(table, "num_embeddings", None)
    return int(rows) if rows is not None else int(table.weight.shape[0])


def first_of(output):
    """A module's output tensor: its first item where it hands back a tuple or list (Hugging
    Face's attention modules and blocks do; ours return tensors). The one reader of it: the
    seam's probe here, the logit lens and direct logit attribution."""
    return output[0] if isinstance(output, (tuple, list)) and output else output


@torch.no_grad()
def assign_sites(model, role: str) -> list[Site]:
    """Switch ``model`` to the seam and give each attention module its Site, from one forward
    on a short source (5 tokens) and target (3): encoder self-attention is 5 x 5, decoder
    self-attention 3 x 3 and cross-attention 3 x 5; layers count in call order."""
    return _discover(model, role, input_device(model))[0]


def _discover(model, role: str, dev: torch.device) -> tuple[list[Site], dict[Site, torch.Tensor], dict]:
    """``assign_sites`` with the probe's ids on ``dev``, what each attention module handed on in
    that forward (its output tensor, after its own output projection), by site, and each site's
    call as a recording keeps it (what the trace's weights are computed from)."""
    register()
    model.set_attn_implementation(NAME)
    if model.config._attn_implementation != NAME:
        raise UnseenAttention(f"{type(model).__name__} does not route its attention through transformers' "
                        "AttentionInterface, so attnscope cannot see it.")
    found, outputs = _Discovery(), {}

    def keep(module, _args, output):    # a module that has just called the seam: an attention module
        if id(module) in found.ids and id(module) not in outputs and isinstance(first_of(output), torch.Tensor):
            outputs[id(module)] = first_of(output).detach()
    handles = [m.register_forward_hook(keep) for m in model.modules()]   # which are attention is known only after
    try:
        with hooks(found):
            _probe(model, role, dev)
    finally:
        for h in handles:
            h.remove()
    kind_of = {"encoder": {(5, 5): ENCODER_SELF}, "decoder": {(5, 5): DECODER_SELF},
               "encoder-decoder": {(5, 5): ENCODER_SELF, (3, 3): DECODER_SELF, (3, 5): CROSS}}[role]
    counts: dict[str, int] = {}
    sites, modules = [], set()
    prev = None
    layers = getattr(model.config.get_text_config(), "num_hidden_layers", None)
    shared = isinstance(layers, int) and len(found.ids) < layers      # ALBERT: fewer modules than layers
    for module, tq, tk in found.seen:
        kind = kind_of.get((tq, tk))
        if kind is None:
            raise SiteError(f"{type(model).__name__}'s {type(module).__name__} attends from {tq} queries to {tk} keys "
                            f"on a {PROBE_SOURCE}-token probe: its keys are not the tokens (compressed or pooled), so "
                            "attnscope cannot draw its attention as token-to-token weights.")
        if id(module) in modules and prev is module and not shared:
            raise UnseenAttention(f"{type(model).__name__}'s {type(module).__name__} calls its attention function more than "
                            "once in a layer (a differential or multi-pass attention), and attnscope draws one softmax "
                            "per layer, so it cannot show this model.")
        if id(module) in modules:
            raise UnseenAttention(f"{type(model).__name__} calls one attention module ({type(module).__name__}) in more "
                            "than one layer, so attnscope cannot tell its layers apart.")
        prev = module
        modules.add(id(module))
        site = Site(kind, counts.get(kind, 0))
        counts[kind] = site.layer + 1
        module.attnscope_site = site
        sites.append(site)
    _one_head_count(type(model).__name__, [(m.attnscope_site, found.calls[id(m)].q.shape[1]) for m, _, _ in found.seen])
    if not sites:
        raise UnseenAttention(f"{type(model).__name__} made no attention call through the seam: it mixes its tokens its "
                        "own way (attention in its own classes, or a state-space or Fourier layer), not through "
                        "transformers' attention interface, so attnscope cannot see its heads.")
    by_site = {module.attnscope_site: outputs[id(module)] for module, _, _ in found.seen if id(module) in outputs}
    calls = {module.attnscope_site: found.calls[id(module)] for module, _, _ in found.seen}
    return sites, by_site, calls


def _one_head_count(name: str, heads: list[tuple[Site, int]]) -> None:
    """Every layer of one kind has as many query heads (a trace is (layers, heads, Tq, Tk) per kind);
    SiteError naming two layers that differ (Inkling's sliding layers have 64 heads, its full ones 4)."""
    first: dict[str, tuple[Site, int]] = {}
    for site, h in heads:
        seen = first.setdefault(site.kind, (site, h))
        if seen[1] != h:
            raise SiteError(f"{name}'s layers have different numbers of query heads ({seen[1]} in {seen[0]}, {h} in "
                            f"{site}), and attnscope draws every layer of a kind of attention with one number of "
                            "heads, so it cannot show this model.")


# How far an attention module's output through the seam may be from its eager output on the same
# input, as a share of the eager output's largest magnitude: float32 sums in another order (the
# fused kernel's blocks) differ by ~1e-7 of it; half precision rounds the weights (bfloat16
# keeps 8 bits, and some models' eager softmax runs in it: 0.4 % on a tiny gpt-oss).
TOLERANCE = {torch.float64: 1e-8, torch.float32: 1e-4, torch.float16: 2e-2, torch.bfloat16: 5e-2}


@torch.no_grad()
def attach(model, role: str, dev: torch.device) -> list[str]:
    """Stage 5 of loading a Hugging Face model: its softmax attention checked (``attach_softmax``),
    then its linear-attention layers found and checked on the same probe (engine.seam.linear_mixing:
    drawn as effective attention). Returns the notes to keep."""
    from attnscope.engine.seam import linear_mixing

    notes = attach_softmax(model, role, dev)
    if any(p.device.type == "meta" for p in model.parameters()):
        return notes
    return notes + linear_mixing.attach(model, lambda: _probe(model, role, dev, use_cache=False))


@torch.no_grad()
def attach_softmax(model, role: str, dev: torch.device) -> list[str]:
    """Stage 5 of loading a Hugging Face model: sites assigned (``assign_sites``, one forward on
    the probe through the seam, its ids on ``dev``: where the model takes its input,
    engine.runtime.device.input_device), then the same probe through the model's own eager attention
    (the model switched to eager and back: no copy), each attention module's eager output kept
    and the seam's handed on in its place, so every layer's attention is compared on the very
    input it had through the seam (a mixture of experts routing a token otherwise on a bfloat16
    rounding would change every layer after it, not the attention). SiteError, with the numbers,
    where a layer differs by more than TOLERANCE allows for the model's dtype. Returns the notes
    to keep: why the check was skipped, where it was (weights read from the disk at each forward
    would be read all again; a model whose eager forward fails)."""
    _, seam, calls = _discover(model, role, dev)
    name = type(model).__name__
    if any(p.device.type == "meta" for p in model.parameters()):
        return [f"The seam's numbers were not checked against {name}'s eager attention when it was opened: part "
                "of its weights stay on the disk, and a second forward would read them all again."]
    eager: dict[Site, torch.Tensor] = {}
    eager_weights: dict[Site, torch.Tensor] = {}

    def swap(module, _args, output):   # keep eager's output (and weights), hand on the seam's
        site = getattr(module, "attnscope_site", None)
        out = first_of(output)
        if site not in seam or not isinstance(out, torch.Tensor) or out.shape != seam[site].shape:
            return None
        eager[site] = out
        if isinstance(output, (tuple, list)):       # the weights among the rest (T5 hands its bias first)
            eager_weights[site] = [t.detach() for t in output[1:] if isinstance(t, torch.Tensor)]
        return (seam[site], *output[1:]) if isinstance(output, (tuple, list)) else seam[site]
    handles = [m.register_forward_hook(swap) for m in model.modules() if hasattr(m, "attnscope_site")]
    try:
        model.set_attn_implementation("eager")
        if model.config._attn_implementation != "eager":
            return [f"The seam's numbers were not checked against {name}'s eager attention: it cannot be switched "
                    "to eager attention."]
        _probe(model, role, dev)
    except Exception as exc:       # a model whose eager path fails on its own: said, not fatal
        first = (str(exc).splitlines() or [type(exc).__name__])[0][:120]
        return [f"The seam's numbers were not checked against {name}'s eager attention, which failed ({first})."]
    finally:
        for h in handles:
            h.remove()
        model.set_attn_implementation(NAME)
    if model.config._attn_implementation != NAME:
        raise SiteError(f"{name} could not be switched back to attnscope's seam after its check.")
    if not eager:
        return [f"The seam's numbers were not checked against {name}'s eager attention: its attention modules "
                "hand on no tensor to compare."]
    rel = TOLERANCE.get(model.dtype, TOLERANCE[torch.bfloat16])
    worst = None                                    # (share of the allowed, site, difference, scale)
    for site, theirs in eager.items():
        diff = float((seam[site].float() - theirs.float()).abs().max())
        scale = float(theirs.float().abs().max())
        share = diff / (rel * max(scale, 1e-6)) if diff == diff else float("inf")   # NaN: refused
        if worst is None or share > worst[0]:
            worst = (share, site, diff, scale)
    assert worst is not None                        # eager holds a site (above)
    share, site, diff, scale = worst
    if share > 1:
        raise SiteError(f"{name} through attnscope's seam does not compute what it computes itself: on a "
                        f"{PROBE_SOURCE}-token probe its {site} attention gives outputs up to {diff:.3g} away from "
                        f"its own eager attention's on the same input, more than the {rel * max(scale, 1e-6):.3g} "
                        f"allowed in {str(model.dtype).removeprefix('torch.')} ({rel:g} of their largest magnitude, "
                        f"{scale:.3g}), so attnscope will not show it.")
    _check_weights(name, calls, eager_weights, rel)
    model.attnscope_trims_queries = trims_queries(model, role, dev)
    return sparse_notes(calls.values())


def sparse_notes(calls) -> list[str]:
    """What a user reads about a sparse attention (an indexer that picks each query's keys): which
    keys show, and that a key not picked is exactly 0, not a small weight."""
    chosen = sorted({c.chosen for c in calls if c.chosen is not None})
    if not chosen:
        return []
    return [f"Sparse attention: an indexer picks {' or '.join(map(str, chosen))} keys for each query, and the softmax "
            "runs over those alone; every key it did not pick has weight exactly 0 (drawn as 0, not a small weight)."]


def _like_weights(t: torch.Tensor) -> bool:
    """Whether a tensor a module handed on reads as attention weights: no negative cell, no row
    above 1, some row above 0 (a position bias of the same shape does not; T5 hands its bias, zeros
    in cross-attention, before its weights)."""
    rows = t.sum(-1)
    return bool(t.min() >= 0) and bool((rows <= 1 + 1e-2).all()) and bool(rows.max() > 0)


def _check_weights(name: str, calls: dict, eager: dict, rel: float) -> None:
    """The weights a trace draws (computed from the recorded call, as a Run computes them) against
    the eager weights each module returned on the same input: the outputs can agree while the
    drawing does not (a recording that lost the window, a sink, a mask). An eager softmax taken
    before its sink (Granite SWA scales its output by sigmoid(lse - sink) after: same output,
    rows summing to 1) is compared row by row once both are normalised. SiteError with the numbers."""
    worst = None
    for site, items in eager.items():
        call = calls.get(site)
        if call is None:
            continue
        ours = call.weights(None).float()                                  # (B, H, Tq, Tk)
        theirs = next((t.float() for t in reversed(items) if t.shape == ours.shape and _like_weights(t.float())),
                      None)
        if theirs is None:
            continue
        sums = theirs.sum(-1)
        if bool(((sums - 1).abs() < 1e-3).all()) and bool((ours.sum(-1) < 1 - 1e-3).any()):
            ours = ours / ours.sum(-1, keepdim=True).clamp_min(1e-30)
        diff = float((ours - theirs).abs().max())
        diff = diff if diff == diff else float("inf")
        if worst is None or diff > worst[0]:
            worst = (diff, site)
    if worst is not None and worst[0] > rel:
        raise SiteError(f"{name} through attnscope's seam does not draw the attention it computes: on a "
                        f"{PROBE_SOURCE}-token probe its {worst[1]} weights are up to {worst[0]:.3g} away from its own "
                        f"eager attention's weights on the same input, more than the {rel:g} allowed, so attnscope "
                        "will not show it.")
