"""The adapter protocol: what the rest of the engine asks of a model family.

An adapter knows how its family reads text (which special tokens lead and end it, how a
text too long is cut), runs its forward, steps its decoder with the model's own cache, and
names the attention sites it has. Tracing, decoding, head scores, the neuron view, export
and compare ask the adapter; none of them keeps a table of families.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import torch

from attnscope.engine.adapters.chat import check_prompt
from attnscope.engine.inputs import InputError, Prompt
from attnscope.engine.kinds import DECODER_SELF, ENCODER_SELF
from attnscope.engine.runtime import free_memory   # free_where read at each call: a test fakes a GPU's memory
from attnscope.engine.seam import AttentionCall, Site, hooks, recording

OWN_OUTPUT_TOKENS = 64      # the most tokens an encoder-decoder writes as its own output (a Run, the output line)


@dataclass
class RecordedSizes:
    """What one tiny recorded forward says about a model's attention (``Adapter.recorded_sizes``)."""
    q: dict[str, int]          # kind -> bytes of queries per query token, summed over layers
    k: dict[str, int]          # kind -> bytes of keys per key token, summed over layers
    width: int                 # the widest query projection (heads x head size), for activations
    heads: dict[str, int]      # kind -> layers x heads (for the dense size)
    sites: dict                # Site -> its query heads (interventions are checked against them)
    masks: dict[str, int] = field(default_factory=dict)   # kind -> bytes per (query, key) cell of the masks the
                               # layers hold each their own (a sparse attention's picks, engine.seam.hf_attention)


@dataclass(frozen=True)
class RunFacts:
    """What a Run's memory estimate (engine.traces.estimate) needs of a model, asked of its adapter
    once (``Adapter.run_facts``): the estimate reads this record, not the adapter, the loaded model
    and the device one fact at a time."""
    sizes: RecordedSizes | None       # bytes per token recorded (None: the dense fallback records nothing)
    free: int                         # bytes free where the Run's memory will live
    where: str                        # that place, as a refusal says it ("on cuda:0")
    eager: tuple[int, int, int] | None = None   # the dense fallback: (layers, heads, width) of its eager weights
    side: str = "target"              # the dense fallback: the side its tokens are on
    sites: int = 0                    # the attention calls one forward makes (a Run's progress counts them)


@dataclass
class Framed:
    """A text as the model reads it: ids and display tokens per side, and notes for the user."""
    source_ids: list[int] = field(default_factory=list)    # encoder side (encoders, a translator's source)
    target_ids: list[int] = field(default_factory=list)    # decoder side (decoders, a translator's target)
    source_tokens: list[str] = field(default_factory=list)
    target_tokens: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    extra: dict = field(default_factory=dict)              # e.g. BERT's segment ids, Hugging Face's attention_mask


@dataclass(frozen=True)
class Prepared:
    """One Run's request, built once by ``Adapter.prepare``: the checked Prompt, the adapter
    that framed it and the framed ids. An entry point given one reads these and never checks
    the text or looks the adapter up again."""
    prompt: Prompt
    adapter: "Adapter"
    framed: Framed

    @property
    def loaded(self):
        return self.adapter.loaded


@torch.no_grad()
def written_ids(st, device) -> list[int]:
    """The one greedy loop: the stepper fed its argmax one token at a time, with its cache
    (engine.decoding.greedy; ``Adapter.prepare``'s own output of an encoder-decoder)."""
    feed, out = torch.tensor([st.prompt_ids], device=device), []
    for _ in range(st.limit):
        nxt = int(st.logits(feed)[0].argmax())
        if nxt in st.end_ids:
            break
        out.append(nxt)
        feed = torch.tensor([[nxt]], device=device)
    return out


class Adapter:
    """One per family; ``engine.adapters.adapter_for(loaded)`` picks it."""

    role: str          # "encoder", "decoder" or "encoder-decoder"
    # True for a family drawn from its own attention weights (engine.adapters.hf_dense): nothing
    # reaches the seam, so a Run, the estimate and the mechanism scores read eager weights instead.
    dense: bool = False

    def __init__(self, loaded):
        self.loaded = loaded
        self.model = loaded.model

    @property
    def device(self) -> torch.device:
        return self.loaded.device

    def frame(self, text: str, pair: str | None = None, target: str | None = None,
              written: list[int] | None = None) -> Framed:
        """``text`` framed for a Run. encoders: ``pair`` is segment B; encoder-decoders:
        ``target`` is a decoder prefix, else ``written``, the model's own output ids (an
        encoder-decoder needs one of them: engine.decoding.greedy.frame gives the second)."""
        raise NotImplementedError

    def prepare(self, prompt, interventions=None, what: str = "run", remote: bool = False,
                written=None) -> Prepared:
        """``prompt`` (a Prompt, or a text made one) checked for this model once and framed once,
        under ``interventions`` (their seam hooks: a translation is the changed model's). An
        encoder-decoder given no ``target`` prefix reads ``written(text)``, its own output ids
        (engine.decoding.greedy.request passes the greedy one). ``what`` names the action in a
        refusal; ``remote``: the model runs on NDIF (engine.remote)."""
        prompt = Prompt.of(prompt, what=what)
        text = check_prompt(self.loaded, prompt, what, remote=remote)    # the text's door passed in Prompt.of
        if interventions is not None and not callable(getattr(interventions, "hooks", None)):
            raise InputError(f"The interventions must be an Interventions (engine.interventions), not "
                             f"{' '.join(repr(interventions).split()):.40}.")
        made = interventions.hooks() if interventions else []     # engine.interventions.Interventions
        self.model.eval()          # the own output and every forward after it read the model without dropout
        with hooks(*made):
            if self.role == "encoder-decoder" and not prompt.target and written is not None:
                framed = self.frame(text, pair=prompt.pair, written=written(text))
            else:
                framed = self.frame(text, pair=prompt.pair, target=prompt.target)
        return Prepared(prompt, self, framed)

    def frame_ids(self, ids: list[int]) -> tuple[Framed, dict[str, int]]:
        """Plain token ids framed the way a text is (head scores), and where they start per kind."""
        raise NotImplementedError

    def forward(self, framed: Framed, last_only: bool = False) -> torch.Tensor | None:
        """Run the model on ``framed`` (inside a recording when the caller wants attention);
        the next-token logits (1, T, V) of a model that predicts tokens, else None.
        ``last_only``: a Run that keeps only the attention asks for no cache and the last
        position's logits (1, 1, V) where the model can skip the rest (a 128k vocabulary's
        logits for 32k positions are 8 GB, three times the 1B model's whole recording)."""
        raise NotImplementedError

    def stepper(self, text: str, settings) -> "Stepper":
        raise InputError(f"Step-by-step decoding needs a model that generates text (a decoder or an "
                         f"encoder-decoder); {self.loaded.name} is an encoder.")

    def plain_token_ids(self) -> list[int]:
        """Ids of ordinary tokens (no specials, no byte-fallback pieces): head-score sequences."""
        raise NotImplementedError

    @torch.no_grad()
    def recorded_sizes(self) -> RecordedSizes:
        """Bytes per token of the recording, heads and widths, read off one recorded forward of
        four plain tokens (kept per model): every estimate of a Run or a decoding cache uses
        them, so it knows grouped-query attention, head sizes and dtypes without a table."""
        cached = self.__dict__.get("_recorded_sizes")
        if cached is None:
            framed, _ = self.frame_ids(self.plain_token_ids()[:4])
            with recording() as rec:
                self.forward(framed)
            q, k, heads, width, masks = {}, {}, {}, 0, {}
            sites = {site: call.q.shape[1] for site, call in rec.calls.items()}
            for site, call in rec.calls.items():
                q[site.kind] = q.get(site.kind, 0) + call.q.nbytes // call.q.shape[2]
                k[site.kind] = k.get(site.kind, 0) + call.k.nbytes // call.k.shape[2]
                heads[site.kind] = heads.get(site.kind, 0) + call.q.shape[1]
                width = max(width, call.q.shape[1] * call.q.shape[3])
                if call.chosen is not None and call.mask is not None:     # a mask of its own per layer
                    cells = call.mask.shape[-2] * call.mask.shape[-1]
                    masks[site.kind] = masks.get(site.kind, 0) + call.mask.nbytes // cells
            cached = self.__dict__["_recorded_sizes"] = RecordedSizes(q, k, width, heads, sites, masks)
        return cached

    def cache_sizes(self) -> tuple[int, int]:
        """(bytes of keys per token over every layer, the widest query projection): what a
        decoding cache's estimate reads (engine.decoding.cost), from the tiny recorded forward."""
        per = self.recorded_sizes()
        return sum(per.k.values()), per.width

    def site_heads(self) -> dict[Site, int]:
        """Every attention site of the model and its query heads, from the same tiny recorded
        forward the estimates read (interventions are checked against them)."""
        return self.recorded_sizes().sites

    def run_facts(self) -> RunFacts:
        """What the memory estimate of a Run needs (engine.traces.estimate), asked once: the
        recorded sizes (or a dense fallback's eager sizes), then the memory free on the device
        (after the sizes' probe forward, as the estimate always read it)."""
        if self.dense:
            eager, side = self.sizes(), "source" if getattr(self, "kind", DECODER_SELF) == ENCODER_SELF else "target"
            return RunFacts(None, *free_memory.free_where(self.device), eager=eager, side=side)
        sizes = self.recorded_sizes()
        return RunFacts(sizes, *free_memory.free_where(self.device), sites=len(sizes.sites))

    def sites(self) -> list[Site]:
        """Every attention site of the model, in call order."""
        return list(self.site_modules())

    def site_modules(self) -> dict[Site, torch.nn.Module]:
        """Each site's attention module, in call order."""
        raise NotImplementedError

    def residual_blocks(self, kind: str = DECODER_SELF) -> list[torch.nn.Module]:
        """The decoder's blocks by layer, whose outputs are the residual stream the logit lens
        reads (``kind`` ENCODER_SELF: an encoder-decoder's encoder blocks). Found, not listed:
        the one ModuleList whose every child holds exactly one self-attention site of that
        kind, in layer order (GPT's ``h``, Llama's ``layers``, T5's ``block``, BART's and our
        translator's ``decoder``)."""
        own = {id(m): s.layer for s, m in self.site_modules().items() if s.kind == kind}
        for lst in self.model.modules():
            if not isinstance(lst, torch.nn.ModuleList) or not len(lst):
                continue
            layers = [[own[id(m)] for m in child.modules() if id(m) in own] for child in lst]
            if all(len(x) == 1 for x in layers) and [x[0] for x in layers] == list(range(len(own))):
                return list(lst)
            if own and all(len(x) <= 1 for x in layers) and [y for x in layers for y in x] == list(range(len(own))):
                bare = next(i for i, x in enumerate(layers) if not x)     # a hybrid: linear or state-space blocks
                raise InputError(f"{self.loaded.name}'s block {bare} holds no softmax attention (a linear or "
                                 "state-space layer), and the logit lens, patching, direct logit attribution and "
                                 "Why read one softmax layer per block, so they cannot split this hybrid yet.")
        raise InputError(f"{self.loaded.name} has no decoder blocks the logit lens can read "
                         "(it needs a model that predicts tokens: a decoder or an encoder-decoder).")

    # ---- the points an experiment reads and patches (engine.experiments) -----------------------
    def decoder_attention(self) -> list[torch.nn.Module]:
        """The decoder's self-attention modules by layer: each one's output (after its output
        projection) is what its layer's attention adds to the residual stream."""
        found = {s.layer: m for s, m in self.site_modules().items() if s.kind == DECODER_SELF}
        return [found[i] for i in range(len(found))]

    def mlp_outputs(self, kind: str = DECODER_SELF) -> list[torch.nn.Module]:
        """Per block of ``kind``'s stack (residual_blocks), the module whose output is what its
        MLP adds to the stream (before any norm of the block's). Found, not named: the block's
        leaves with a 2-D weight that are neither attention (inside a site, or a site's output
        projection) nor embeddings are the MLP's; the smallest module holding them all is the
        MLP when it holds nothing else with weights (GPT's ``mlp``, Llama's ``mlp``, T5's
        ``DenseReluDense``, our FeedForward); otherwise (BART's bare fc1 and fc2, BERT's
        intermediate and output) the last of them, whose output is the MLP's."""
        sites = self.site_modules()
        inside = {id(m) for s in sites.values() for m in s.modules()}
        projections = set()
        for site in sites:
            try:
                projections.add(self.output_projection(site)[0].data_ptr())   # GPT-2's Conv1D: .T, same storage
            except (NotImplementedError, InputError):
                pass
        out = []
        for layer, block in enumerate(self.residual_blocks(kind)):
            names = {id(m): n for n, m in block.named_modules()}
            leaves = [m for m in block.modules() if id(m) not in inside and not list(m.children())
                      and not isinstance(m, torch.nn.Embedding) and _matrices(m, projections)]
            if not leaves:
                raise InputError(f"{self.loaded.name}: layer {layer} has no MLP module, so its MLP output cannot be "
                                 "read.")
            common = _smallest_holding(block, leaves, names)
            weighted = [m for m in common.modules() if not list(m.children())
                        and any(p.dim() >= 2 for p in m.parameters(recurse=False))]
            clean = common is not block and all(m in leaves for m in weighted) \
                and not any(id(m) in inside for m in common.modules())
            out.append(common if clean else leaves[-1])
        return out

    # ---- the residual stream's sources (engine.experiments.score_split) ------------------------------
    def token_embeddings(self) -> list[torch.nn.Module]:
        """The modules that turn token ids into the stream's first vectors (one per side, or
        one shared by both): the ``embed`` source. Other embedding tables outside the blocks
        are positions or token types."""
        raise NotImplementedError

    def position_adders(self) -> list[torch.nn.Module]:
        """Modules that add fixed positions to their input (x -> x + PE, our sinusoidal
        encoding): their output minus their input is the ``pos`` source. Learned positions are
        embedding tables, found as such."""
        return []

    def forward_at(self, framed: Framed, at: dict[str, list[int]], copies: int) -> None:
        """``copies`` rows of ``framed`` that read only the positions ``at`` (per side: "source",
        "target"), each token at its own position (a rotary model turns it as in the whole
        text). What the other positions would add is not there: the caller's hooks put back
        every attention and MLP output, so what is computed at each position is exact."""
        raise InputError(f"{self.loaded.name} cannot be read at a few positions, so its scores cannot be split.")

    def unembedding(self) -> torch.nn.Module:
        """The module that turns the last hidden states into logits (its weight (V, D))."""
        raise NotImplementedError

    def final_norm(self) -> torch.nn.Module | None:
        """The norm between the last block and the unembedding. Found, not named: the module
        outside the blocks whose output, through the unembedding, is exactly the model's logits,
        in one forward on a few plain tokens; None when the model puts something else there (T5
        rescales by hand, Gemma 2 soft-caps the logits)."""
        if "_final_norm" not in self.__dict__:
            head, inside = self.unembedding(), {id(m) for b in self.residual_blocks() for m in b.modules()}
            leaves = [m for m in self.model.modules() if m is not head and id(m) not in inside
                      and not list(m.children()) and any(p.dim() == 1 for p in m.parameters(recurse=False))]
            seen: dict[int, torch.Tensor] = {}
            handles = [m.register_forward_hook(lambda m, _i, out: seen.__setitem__(id(m), out)) for m in leaves]
            try:
                with torch.no_grad():
                    logits = self.forward(self.frame_ids(self.plain_token_ids()[:4])[0])
                    width = head.weight.shape[1]
                    self._final_norm = next((m for m in leaves if isinstance(seen.get(id(m)), torch.Tensor)
                                             and seen[id(m)].shape[-1] == width
                                             and torch.equal(head(seen[id(m)]), logits)), None)
            finally:
                for h in handles:
                    h.remove()
        return self._final_norm

    def piece_ids(self, text: str) -> list[int]:
        """``text``'s token ids as the tokenizer makes them inside a text (no special tokens)."""
        raise NotImplementedError

    def forward_copies(self, framed: Framed, copies: int) -> torch.Tensor:
        """``copies`` identical rows of a decoder's ``framed`` in one batch (no KV cache kept):
        logits (copies, T, V). Hooks then make each copy differ (engine.experiments)."""
        raise InputError(f"{self.loaded.name} is not a decoder: prompt pairs are patched in decoders only.")

    def output_projection(self, site: Site) -> tuple[torch.Tensor, torch.Tensor | None]:
        """The output projection of ``site``: (W_O (D, Hq * Dv), its bias (D,) or None), so head
        h's slice W_O[:, h * Dv:(h + 1) * Dv] carries its output into the residual stream
        (value-weighted attention)."""
        raise NotImplementedError

    def gated_projection(self, site: Site):
        """(the output projection module, Hq) where ``site``'s heads reach it through an
        elementwise gate, so a head's output is read and patched at that module's input;
        None where the projection reads the seam's output as it is (every family but the
        gated ones, engine.adapters.output_gates)."""
        return None

    def gated_projections(self, kinds=None) -> dict:
        """{site: (projection module, Hq)} for every gated site (of ``kinds``, when given): what
        the per-head tools (patching's points, Why's stream, the atlas's head norms) read at the
        projection's input; empty for every family but the gated ones."""
        return {s: g for s in self.site_modules() if (kinds is None or s.kind in kinds)
                and (g := self.gated_projection(s)) is not None}


class Stepper:
    """Feeds new tokens to a model, keeping its cache. ``step`` returns the next-token logits
    and the attention rows of the newest query, read from the seam's recording. ``notes``
    say what the user should know about the input (a text cut to the model's length)."""

    eos_id: int | None
    limit: int
    notes: list[str]
    prompt_ids: list[int]
    source_tokens: list[str]
    tokenizer: object
    past = None

    def logits(self, new_ids: torch.Tensor) -> torch.Tensor:
        """(B, t) new ids -> (B, V) logits of the last, updating the cache."""
        raise NotImplementedError

    def rows(self, calls: dict[Site, AttentionCall]) -> tuple[torch.Tensor, torch.Tensor | None]:
        """(self rows (B, L, H, T), cross rows (B, L, H, S) or None) of the newest query."""
        raise NotImplementedError

    ends: set[int] | None = None      # every id that ends the output, where more than eos_id does

    @property
    def end_ids(self) -> set[int]:
        """Every id that ends the output (an instruct model has several: engine.adapters.chat)."""
        return self.ends if self.ends is not None else set() if self.eos_id is None else {self.eos_id}

    def step(self, new_ids: torch.Tensor):
        with recording() as rec:
            logits = self.logits(new_ids)
        return (logits, *self.rows(rec.calls))

    def reorder(self, index: torch.Tensor) -> None:
        self.past = select_batch(self.past, index)


def own_output(written: list[int] | None, name: str) -> list[int]:
    """An encoder-decoder's decoder tokens when no target prefix is given: the model's own output
    ``written`` (engine.decoding.greedy.frame writes it: the adapters run no decoding loop)."""
    if written is None:
        raise ValueError(f"{name} is an encoder-decoder: frame it with a target prefix, or with its own output "
                         "(engine.decoding.greedy.frame).")
    return list(written)


def newest_rows(calls: list[AttentionCall], width: int | None = None) -> torch.Tensor:
    """Each layer's attention row of the newest query, one tensor (B, L, H, width).

    Why not a plain stack: a sliding-window layer's KV cache holds only its last few keys, so
    its row is narrower than the sequence (Mistral, Gemma 2 mixes both kinds). Its row covers
    the newest keys, so it is right-aligned and the keys out of its window read 0, as they
    do in a full forward."""
    rows = [c.weights(None, rows=slice(-1, None))[:, :, 0] for c in calls]   # each (B, H, Tk_layer)
    width = width or max(r.shape[-1] for r in rows)
    out = rows[0].new_zeros(rows[0].shape[0], len(rows), rows[0].shape[1], width)   # (B, L, H, width)
    for i, r in enumerate(rows):
        out[:, i, :, width - r.shape[-1]:] = r
    return out


def calls_of(calls: dict[Site, AttentionCall], kind: str) -> list[AttentionCall]:
    """The recorded calls of one kind, by layer."""
    return [c for s, c in sorted(calls.items(), key=lambda sc: sc[0].layer) if s.kind == kind]


def select_batch(cache, index: torch.Tensor):
    """Reorder every tensor of a nested cache along the batch (beam) dimension."""
    if isinstance(cache, torch.Tensor):
        return cache.index_select(0, index)
    if isinstance(cache, (list, tuple)):
        return type(cache)(select_batch(c, index) for c in cache)
    return cache


def without_byte_pieces(pieces: list[str], specials: set[int]) -> list[int]:
    """Ids whose piece is neither special nor a byte-fallback piece like <0xC3>."""
    return [i for i, t in enumerate(pieces) if i not in specials and not (t.startswith("<0x") and t.endswith(">"))]


def as_numpy(rows: torch.Tensor | None, b: int) -> np.ndarray | None:
    return None if rows is None else rows[b].float().cpu().numpy()



def _matrices(module, projections: set) -> bool:
    """Whether a leaf holds weights of two dimensions or more (a linear layer's, or a mixture of
    experts' stacked (E, ., .) ones, gpt-oss's), none of them an attention output projection."""
    held = [p for p in module.parameters(recurse=False) if p.dim() >= 2]
    return bool(held) and not any(p.data_ptr() in projections for p in held)

def _smallest_holding(block: torch.nn.Module, leaves: list, names: dict) -> torch.nn.Module:
    """The deepest module of ``block`` that holds every one of ``leaves`` (by qualified names)."""
    paths = [names[id(m)].split(".") for m in leaves]
    prefix = []
    for parts in zip(*paths):
        if len(set(parts)) != 1:
            break
        prefix.append(parts[0])
    return block.get_submodule(".".join(prefix)) if prefix else block
