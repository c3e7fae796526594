"""Any Hugging Face transformer, by role: encoder, decoder, encoder-decoder.

The model's attention reaches the seam through the function registered with transformers
(engine.seam.hf_attention), and each attention module knows its site. How a text is framed
is read off the tokenizer once (``special_frame``: which special ids it puts before and
after a text), never listed per model: encoders read the whole frame; a causal LM's prompt
keeps the leading specials (BOS) and never ends with an end token the tokenizer appended,
so greedy decoding continues what the user wrote, exactly as ``model.generate`` does.
"""
from __future__ import annotations

import inspect

import torch

from attnscope.engine.adapters.base import Adapter, Framed, Stepper, calls_of, newest_rows, own_output, without_byte_pieces
from attnscope.engine.adapters.hf_text import HFTokens, cache_field, hf_eos_id, readable_tokens, unknown_pieces_note
from attnscope.engine.adapters.chat import chat_ids, end_ids
from attnscope.engine.adapters.output_gates import find_gates
from attnscope.engine.inputs import Chat, InputError, keep_end, within_reach
from attnscope.engine.kinds import CROSS, DECODER_SELF, ENCODER_SELF
from attnscope.engine.seam import SeamHook, hooks


def special_frame(tokenizer) -> tuple[list[int], list[int]]:
    """(ids the tokenizer puts before a text, ids it puts after), read from how it frames "a"."""
    full = list(tokenizer("a")["input_ids"])
    plain = list(tokenizer("a", add_special_tokens=False)["input_ids"])
    for i in range(len(full) - len(plain) + 1):
        if plain and full[i:i + len(plain)] == plain:
            return full[:i], full[i + len(plain):]
    return [], []


def encode_text(tokenizer, text: str, pair: str | None, max_len: int, notes: list[str]) -> dict:
    """A text (and optional segment B) as the tokenizer frames it, as lists; a text longer than
    the model takes is tokenised again, truncated, and ``notes`` says so."""
    pair = pair if pair and pair.strip() else None
    text = within_reach(text, max_len, notes, end=False)
    pair = within_reach(pair, max_len, notes, end=False) if pair else None
    enc = tokenizer(text, pair, verbose=False)   # too long is said in notes, not logged
    n = len(enc["input_ids"])
    if n > max_len:
        notes.append(f"The input has {n} tokens; the model takes {max_len}, so it was truncated.")
        enc = tokenizer(text, pair, truncation=True, max_length=max_len)
    return {k: list(v) for k, v in enc.items() if k in ("input_ids", "attention_mask", "token_type_ids")}


class HFAdapter(Adapter):
    def __init__(self, loaded):
        super().__init__(loaded)
        self.tok = loaded.tokenizer
        self.lead, self.end = special_frame(self.tok)
        self.tokens = HFTokens(self.tok, hf_eos_id(loaded))

    def site_modules(self):
        return {m.attnscope_site: m for m in self.model.modules() if getattr(m, "attnscope_site", None) is not None}

    def output_projection(self, site):
        """Found, not named (o_proj, c_proj, out_proj, o, dense ...): in one small forward, the
        matrix whose input is exactly the heads' merged output at ``site``."""
        found = self._found_projections()[0]
        if site not in found:
            raise InputError(f"{self.loaded.name}: no output projection reads the heads of {site}, so their "
                             "outputs cannot be carried into the residual stream (value-weighted attention, direct "
                             "logit attribution, Why).")
        return found[site]

    def gated_projection(self, site):
        """(the projection module, Hq) where ``site``'s heads reach it through an elementwise
        gate (Qwen3.5: o_proj((p·v) ⊙ σ(g)), engine.adapters.output_gates), else None."""
        return self._found_projections()[1].get(site)

    def _found_projections(self) -> tuple[dict, dict]:
        found = self.__dict__.get("_projections")
        if found is None:
            found = self._projections = find_projections(self)
        return found

    def unembedding(self):
        return self.model.get_output_embeddings()

    def token_embeddings(self):
        tables = {self.model.get_input_embeddings().weight.data_ptr()}
        return [m for m in self.model.modules() if isinstance(m, torch.nn.Embedding) and m.weight.data_ptr() in tables]

    def _at(self, ids: list[int], positions: list[int], copies: int) -> torch.Tensor:
        return torch.tensor([[ids[p] for p in positions]], device=self.device).expand(copies, -1)

    def _accepts(self, name: str) -> bool:
        return name in inspect.signature(self.model.forward).parameters

    def piece_ids(self, text):
        return list(self.tok(text, add_special_tokens=False)["input_ids"])

    def plain_token_ids(self) -> list[int]:
        pieces = [p or "" for p in self.tok.convert_ids_to_tokens(list(range(len(self.tok))))]
        return without_byte_pieces(pieces, set(getattr(self.tok, "all_special_ids", []) or []))

    def _tensor(self, ids) -> torch.Tensor:
        return torch.tensor([ids], device=self.device)

    def lean(self, last_only: bool) -> dict:
        """The forward's keywords for ``last_only`` (Adapter.forward): no cache, and the last
        position's logits only where the model's forward takes ``logits_to_keep`` (its older
        name ``num_logits_to_keep`` too) and does not then skip queries (Gemma 4's KV-shared
        layers do: engine.seam.hf_attention.trims_queries, asked once when it is opened)."""
        if not last_only:
            return {}
        accepted = inspect.signature(self.model.forward).parameters
        kept = {"use_cache": False} if "use_cache" in accepted else {}
        for name in ("logits_to_keep", "num_logits_to_keep"):
            if getattr(self.model, "attnscope_trims_queries", False):   # Gemma 4: every query is needed
                break
            if name in accepted:
                kept[name] = 1
                break
        return kept

    def prompt_ids(self, text, limit: int, notes: list[str]) -> list[int]:
        """A causal LM's prompt: the leading specials, then the text's last pieces that fit in
        ``limit`` (no end token); a Chat as the tokenizer's chat template writes it, its own
        specials leading (engine.adapters.chat)."""
        if isinstance(text, Chat):
            return keep_end(chat_ids(self.tok, text, self.loaded.name), limit, notes, reads=self.loaded.max_len)
        text = within_reach(text, limit, notes, end=True)
        plain = list(self.tok(text, add_special_tokens=False, verbose=False)["input_ids"])
        return keep_end(plain, limit, notes, self.lead, reads=self.loaded.max_len)


class _MergedOutputs(SeamHook):
    """Keeps each site's heads' output, merged as the projection reads it: (B, Tq, Hq * Dv)."""

    def __init__(self):
        self.merged = {}

    def edits(self, site):
        return site is not None

    def edits_output_only(self, site):
        return True

    def output(self, call, out):                                  # (B, Hq, Tq, Dv)
        self.merged[call.site] = out.transpose(1, 2).flatten(2).detach()
        return out


@torch.no_grad()
def find_projections(adapter) -> tuple[dict, dict]:
    """(site -> (W_O (D, Hq * Dv), bias or None), gated: site -> (projection, Hq)) for the sites
    whose projection is found, by matching every 2-D weight's input (forward hooks, one forward
    on a few plain tokens) against the heads' merged output; where none equals it, a second
    forward asks which reads it through an elementwise gate (engine.adapters.output_gates)."""
    model = adapter.model
    candidates = [m for m in model.modules() if getattr(m, "weight", None) is not None and m.weight.dim() == 2
                  and not isinstance(m, torch.nn.Embedding)]
    inputs: dict[int, list[torch.Tensor]] = {}

    def keep(module, args, _out):
        if args and isinstance(args[0], torch.Tensor):
            inputs.setdefault(id(module), []).append(args[0].detach())
    handles = [m.register_forward_hook(keep) for m in candidates]
    merged = _MergedOutputs()
    try:
        framed, _ = adapter.frame_ids(adapter.plain_token_ids()[:6])
        with hooks(merged):
            adapter.forward(framed)
    finally:
        for h in handles:
            h.remove()
    out, pending = {}, {}
    for site, value in merged.merged.items():
        for m in candidates:
            if any(x.shape == value.shape and torch.equal(x, value) for x in inputs.get(id(m), [])):
                conv1d = m.weight.shape[0] == value.shape[-1] and type(m).__name__ == "Conv1D"   # GPT-2: (in, out)
                out[site] = (m.weight.T if conv1d else m.weight, getattr(m, "bias", None))
                break
        else:
            pending[site] = [m for m in candidates if len(inputs.get(id(m), [])) == 1
                             and inputs[id(m)][0].shape == value.shape and m.weight.shape[-1] == value.shape[-1]]
    gated = find_gates(lambda: adapter.forward(framed), pending, inputs) if pending else {}
    for site, (m, _) in gated.items():
        out[site] = (m.weight, getattr(m, "bias", None))
    return out, gated                        # a site in neither: refused when its projection is asked


class HFEncoderAdapter(HFAdapter):
    role = "encoder"

    def frame(self, text, pair=None, target=None, written=None):
        notes = []
        enc = encode_text(self.tok, text, pair, self.loaded.max_len, notes)
        unknown_pieces_note(self.tok, enc["input_ids"], notes)
        ids = enc["input_ids"]
        return Framed(ids, [], readable_tokens(self.tok, ids), [], notes, enc)

    def frame_ids(self, ids):
        ids = self.lead + ids + self.end
        return Framed(ids, [], readable_tokens(self.tok, ids), [], [], {"input_ids": ids}), {ENCODER_SELF: len(self.lead)}

    def forward(self, framed, last_only=False):
        self.model(**{k: self._tensor(v) for k, v in framed.extra.items()})
        return None

    def forward_at(self, framed, at, copies):
        at = at["source"]
        kept = {k: self._at(v, at, copies) for k, v in framed.extra.items() if k in ("input_ids", "token_type_ids")}
        if self._accepts("position_ids"):
            kept["position_ids"] = torch.tensor([at], device=self.device).expand(copies, -1)
        self.model(**kept)


class HFDecoderAdapter(HFAdapter):
    role = "decoder"

    def frame(self, text, pair=None, target=None, written=None):
        notes = []
        ids = self.prompt_ids(text, self.loaded.max_len - 1, notes)   # as decoding reads it (room for a token)
        unknown_pieces_note(self.tok, ids, notes)
        return Framed(target_ids=ids, target_tokens=readable_tokens(self.tok, ids), notes=notes)

    def frame_ids(self, ids):
        ids = self.lead + ids
        return Framed(target_ids=ids, target_tokens=readable_tokens(self.tok, ids)), {DECODER_SELF: len(self.lead)}

    def forward(self, framed, last_only=False):
        return self.model(input_ids=self._tensor(framed.target_ids), **self.lean(last_only)).logits

    def stepper(self, text, settings):
        return _DecoderStepper(self, text, settings)

    def forward_copies(self, framed, copies):
        ids = self._tensor(framed.target_ids).expand(copies, -1)
        return self.model(input_ids=ids, use_cache=False).logits

    def forward_at(self, framed, at, copies):
        at = at["target"]
        self.model(input_ids=self._at(framed.target_ids, at, copies),
                   position_ids=torch.tensor([at], device=self.device).expand(copies, -1), **self.lean(True))


class HFSeq2SeqAdapter(HFAdapter):
    role = "encoder-decoder"

    @property
    def start_id(self) -> int:
        """The decoder's first token: the config's, else the generation config's (transformers 5
        keeps it there for some families, T5's among them), else the padding id."""
        c, g = self.model.config, getattr(self.model, "generation_config", None)
        for found in (getattr(c, "decoder_start_token_id", None), getattr(g, "decoder_start_token_id", None),
                      getattr(c, "pad_token_id", None), getattr(g, "pad_token_id", None)):
            if isinstance(found, int):
                return found
        return 0

    def frame(self, text, pair=None, target=None, written=None):
        notes = []
        enc = encode_text(self.tok, text, None, self.loaded.max_len, notes)
        unknown_pieces_note(self.tok, enc["input_ids"], notes)
        if target and target.strip():
            dec = [self.start_id] + list(self.tok(target, add_special_tokens=False)["input_ids"])[: self.loaded.max_len - 1]
        else:
            dec = [self.start_id] + own_output(written, self.loaded.name)
        src = enc["input_ids"]
        return Framed(src, dec, readable_tokens(self.tok, src), readable_tokens(self.tok, dec), notes, enc)

    def frame_ids(self, ids):
        src, dec = self.lead + ids + self.end, [self.start_id] + ids
        framed = Framed(src, dec, readable_tokens(self.tok, src), readable_tokens(self.tok, dec), [], {"input_ids": src})
        return framed, {ENCODER_SELF: len(self.lead), DECODER_SELF: 1}

    def forward(self, framed, last_only=False):
        enc = {k: self._tensor(v) for k, v in framed.extra.items() if k != "token_type_ids"}
        return self.model(**enc, decoder_input_ids=self._tensor(framed.target_ids), **self.lean(last_only)).logits

    def stepper(self, text, settings):
        return _Seq2SeqStepper(self, text, settings)

    def forward_copies(self, framed, copies):
        enc = {k: self._tensor(v).expand(copies, -1) for k, v in framed.extra.items() if k != "token_type_ids"}
        dec = self._tensor(framed.target_ids).expand(copies, -1)
        return self.model(**enc, decoder_input_ids=dec, use_cache=False).logits

    def forward_at(self, framed, at, copies):
        self.model(input_ids=self._at(framed.source_ids, at["source"], copies),
                   decoder_input_ids=self._at(framed.target_ids, at["target"], copies), **self.lean(True))


class _DecoderStepper(Stepper):
    """A causal LM continuing the prompt through its own KV cache."""

    def __init__(self, adapter: HFDecoderAdapter, text, settings):
        loaded = adapter.loaded
        self.notes = []
        ids = adapter.prompt_ids(text, loaded.max_len - 1, self.notes)
        if len(ids) <= len(adapter.lead):
            raise InputError("The prompt has no tokens: type some text to continue.")
        self.model, self.source_tokens, self.prompt_ids = loaded.model, [], ids
        self.cache_field = cache_field(loaded.model)
        self.tokenizer = adapter.tokens
        self.eos_id = self.tokenizer.eos_id
        self.ends = end_ids(loaded, self.eos_id)        # an instruct model's end of turn too
        self.limit = min(settings.max_new_tokens, loaded.max_len - len(ids))
        self.length = 0      # tokens fed so far: the width of a row when every layer slides

    def logits(self, new_ids):
        out = self.model(input_ids=new_ids, **{self.cache_field: self.past}, use_cache=True)
        self.past = getattr(out, self.cache_field)
        self.length += new_ids.shape[1]
        return out.logits[:, -1]

    def rows(self, calls):
        return newest_rows(calls_of(calls, DECODER_SELF), self.length), None   # (B, L, H, T)

    def reorder(self, index):
        self.past.reorder_cache(index)


class _Seq2SeqStepper(Stepper):
    """An encoder-decoder: the source encoded once, the decoder stepped with its cache."""

    def __init__(self, adapter: HFSeq2SeqAdapter, text, settings):
        loaded, model = adapter.loaded, adapter.model
        self.cache_field = cache_field(model)
        self.notes = []
        enc = encode_text(adapter.tok, text, None, loaded.max_len, self.notes)
        enc = {k: adapter._tensor(v) for k, v in enc.items() if k != "token_type_ids"}
        self.model, self.mask = model, enc.get("attention_mask")
        self.memory = model.get_encoder()(**enc)   # its own output type: Switch keeps its router's logits there
        self.source_tokens = readable_tokens(adapter.tok, enc["input_ids"][0].tolist())
        self.prompt_ids = [adapter.start_id]
        self.tokenizer = adapter.tokens
        self.eos_id = self.tokenizer.eos_id
        self.limit = min(settings.max_new_tokens, loaded.max_len - 1)
        self.length = 0      # decoder tokens fed so far

    def logits(self, new_ids):
        out = self.model(encoder_outputs=self.memory, attention_mask=self.mask, decoder_input_ids=new_ids,
                         **{self.cache_field: self.past}, use_cache=True)
        self.past = getattr(out, self.cache_field)
        self.length += new_ids.shape[1]
        return out.logits[:, -1]

    def rows(self, calls):
        return newest_rows(calls_of(calls, DECODER_SELF), self.length), newest_rows(calls_of(calls, CROSS))

    def reorder(self, index):
        self.past.reorder_cache(index)
        self.memory.last_hidden_state = self.memory.last_hidden_state.index_select(0, index)
        if self.mask is not None:
            self.mask = self.mask.index_select(0, index)
