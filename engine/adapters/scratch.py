"""Adapters for attnscope's own families: the translator, the GPT and the BERT encoder.

Each says how its model reads a text (the translator's source ends with [EOS] and its
target starts with [BOS]; the GPT reads the prompt as it is; BERT wraps [CLS] ... [SEP]),
runs it, and steps its decoder with the model's own KV cache.
"""
from __future__ import annotations

import torch

from attnscope.engine.adapters.base import Adapter, Framed, Stepper, calls_of, newest_rows, own_output, without_byte_pieces
from attnscope.engine.inputs import InputError, keep_end, keep_start, unknown_note, within_reach
from attnscope.engine.kinds import CROSS, DECODER_SELF, ENCODER_SELF
from attnscope.engine.models.layers import MultiHeadAttention
from attnscope.engine.models.tokenizer import normalisation_note, raw_pieces


class ScratchAdapter(Adapter):
    def site_modules(self):
        return {m.site: m for m in self.model.modules() if isinstance(m, MultiHeadAttention) and m.site is not None}

    def output_projection(self, site):
        proj = self.site_modules()[site].c_proj              # nn.Linear (D, D): weight (out, in)
        return proj.weight, proj.bias

    def _at(self, ids: list[int], positions: list[int], copies: int) -> torch.Tensor:
        return torch.tensor([[ids[p] for p in positions]], device=self.device).expand(copies, -1)

    def plain_token_ids(self) -> list[int]:
        tok = self.loaded.tokenizer
        return without_byte_pieces(raw_pieces(tok, range(tok.vocab_size)), set(tok.special_ids))


# ---- the translator ------------------------------------------------------------------------
class TranslatorAdapter(ScratchAdapter):
    role = "encoder-decoder"

    def frame(self, text, pair=None, target=None, written=None):
        src_tok, tgt_tok, n = self.loaded.tokenizer, self.loaded.tgt_tokenizer, self.model.config.max_len
        notes = []
        text = within_reach(text, n, notes, end=False)   # a huge text: what the model can reach, before any pass
        normalised = normalisation_note(src_tok, text)   # "The dog doesn't" read as "the dog does not"
        if normalised:
            notes.append(normalised)
        unknown_note(src_tok, text, notes)
        src_ids = keep_start(src_tok.encode(text), n - 1, notes) + [src_tok.eos_id]
        if target is not None and target.strip():
            tgt_ids = [tgt_tok.bos_id] + keep_start(tgt_tok.encode(target), n - 1, notes, "target prefix")
        else:
            tgt_ids = [tgt_tok.bos_id] + own_output(written, self.loaded.name)
        return Framed(src_ids, tgt_ids, src_tok.tokens(src_ids), tgt_tok.tokens(tgt_ids), notes)

    def frame_ids(self, ids):
        src_tok, tgt_tok = self.loaded.tokenizer, self.loaded.tgt_tokenizer
        src, tgt = ids + [src_tok.eos_id], [tgt_tok.bos_id] + ids
        return Framed(src, tgt, src_tok.tokens(src), tgt_tok.tokens(tgt)), {ENCODER_SELF: 0, DECODER_SELF: 1}

    def forward(self, framed, last_only=False):
        dev = self.device
        return self.model(torch.tensor([framed.source_ids], device=dev),
                          torch.tensor([framed.target_ids], device=dev)).logits

    def stepper(self, text, settings):
        return _TranslatorStepper(self.loaded, text, settings)

    def forward_copies(self, framed, copies):
        dev = self.device
        return self.model(torch.tensor([framed.source_ids], device=dev).expand(copies, -1),
                          torch.tensor([framed.target_ids], device=dev).expand(copies, -1)).logits

    def unembedding(self):
        return self.model.generator

    def token_embeddings(self):
        return [self.model.src_embed, self.model.tgt_embed]

    def position_adders(self):
        return [self.model.positions]

    def forward_at(self, framed, at, copies):
        self.model(self._at(framed.source_ids, at["source"], copies), self._at(framed.target_ids, at["target"], copies))

    def piece_ids(self, text):
        return self.loaded.tgt_tokenizer.encode(text)


class _TranslatorStepper(Stepper):
    def __init__(self, loaded, text, settings):
        model, src_tok, tgt_tok = loaded.model, loaded.tokenizer, loaded.tgt_tokenizer
        n = model.config.max_len
        self.notes = []
        ids = src_tok.encode(text)
        if len(ids) > n - 1:
            self.notes.append(f"The text has {len(ids)} tokens and the model reads at most {n - 1}: only the first "
                              f"{n - 1} are translated.")
        src_ids = ids[: n - 1] + [src_tok.eos_id]
        self.model = model
        self.source_tokens = src_tok.tokens(src_ids)
        self.prompt_ids = [tgt_tok.bos_id]
        self.tokenizer, self.eos_id = tgt_tok, tgt_tok.eos_id
        self.limit = min(settings.max_new_tokens, n - 1)
        self.memory, self.src_mask = model.encode(torch.tensor([src_ids], device=loaded.device))

    def logits(self, new_ids):
        out = self.model.decode(new_ids, self.memory, self.src_mask, past=self.past, use_cache=True)
        self.past = out.present
        return out.logits[:, -1]

    def rows(self, calls):
        return newest_rows(calls_of(calls, DECODER_SELF)), newest_rows(calls_of(calls, CROSS))

    def reorder(self, index):
        super().reorder(index)
        self.memory = self.memory.index_select(0, index)
        self.src_mask = self.src_mask.index_select(0, index)


# ---- the GPT ---------------------------------------------------------------------------------
class GPTAdapter(ScratchAdapter):
    role = "decoder"

    def frame(self, text, pair=None, target=None, written=None):
        tok, notes = self.loaded.tokenizer, []
        n = self.model.config.block_size   # as decoding reads it: room for the first new token
        text = within_reach(text, n, notes, end=True)
        unknown_note(tok, text, notes)
        ids = keep_end(tok.encode(text), n - 1, notes, reads=n)
        return Framed(target_ids=ids, target_tokens=tok.tokens(ids), notes=notes)

    def frame_ids(self, ids):
        tok = self.loaded.tokenizer
        prefix = [] if tok.eos_id is None else [tok.eos_id]   # [EOS] precedes every line in training
        ids = prefix + ids
        return Framed(target_ids=ids, target_tokens=tok.tokens(ids)), {DECODER_SELF: len(prefix)}

    def forward(self, framed, last_only=False):
        return self.model(torch.tensor([framed.target_ids], device=self.device)).logits

    def stepper(self, text, settings):
        return _GPTStepper(self.loaded, text, settings)

    def forward_copies(self, framed, copies):
        return self.model(torch.tensor([framed.target_ids], device=self.device).expand(copies, -1)).logits

    def unembedding(self):
        return self.model.lm_head

    def token_embeddings(self):
        return [self.model.transformer.wte]

    def forward_at(self, framed, at, copies):
        at = at["target"]
        self.model(self._at(framed.target_ids, at, copies), positions=torch.tensor(at, device=self.device))

    def piece_ids(self, text):
        return self.loaded.tokenizer.encode(text)


class _GPTStepper(Stepper):
    def __init__(self, loaded, text, settings):
        model, tok = loaded.model, loaded.tokenizer
        self.notes = []
        ids = keep_end(tok.encode(text), model.config.block_size - 1, self.notes, reads=model.config.block_size)
        if not ids:
            raise InputError("The prompt has no tokens this model knows: type some text to continue.")
        self.model, self.tokenizer, self.eos_id = model, tok, tok.eos_id
        self.source_tokens = []
        self.prompt_ids = ids
        self.limit = min(settings.max_new_tokens, model.config.block_size - len(ids))

    def logits(self, new_ids):
        out = self.model(new_ids, past=self.past, use_cache=True)
        self.past = out.present
        return out.logits[:, -1]

    def rows(self, calls):
        return newest_rows(calls_of(calls, DECODER_SELF)), None


# ---- BERT --------------------------------------------------------------------------------------
class BertAdapter(ScratchAdapter):
    role = "encoder"

    def frame(self, text, pair=None, target=None, written=None):
        tok, notes = self.loaded.tokenizer, []
        text = within_reach(text, self.model.config.max_position_embeddings, notes, end=False)
        unknown_note(tok, text + " " + (pair or ""), notes)
        a = tok.encode(text)
        b = tok.encode(pair) if pair and pair.strip() else []
        budget = self.model.config.max_position_embeddings - (3 if b else 2)
        if len(a) + len(b) > budget:
            notes.append(f"The input has {len(a) + len(b)} tokens; the model takes {budget} besides [CLS]/[SEP], "
                         "so it was truncated.")
            a = a[:budget]
            b = b[: max(0, budget - len(a))]
        ids = [tok.cls_id] + a + [tok.sep_id] + (b + [tok.sep_id] if b else [])
        types = [0] * (len(a) + 2) + [1] * (len(ids) - len(a) - 2)
        return Framed(ids, [], tok.tokens(ids), [], notes, {"token_type_ids": types})

    def frame_ids(self, ids):
        tok = self.loaded.tokenizer
        ids = [tok.cls_id] + ids + [tok.sep_id]
        return Framed(ids, [], tok.tokens(ids), [], [], {"token_type_ids": [0] * len(ids)}), {ENCODER_SELF: 1}

    def forward(self, framed, last_only=False):
        dev = self.device
        self.model(torch.tensor([framed.source_ids], device=dev),
                   torch.tensor([framed.extra["token_type_ids"]], device=dev))
        return None

    def token_embeddings(self):
        return [self.model.embeddings.word_embeddings]

    def forward_at(self, framed, at, copies):
        at = at["source"]
        self.model(self._at(framed.source_ids, at, copies), self._at(framed.extra["token_type_ids"], at, copies))
