"""Decoding one token at a time, with a KV cache, as a generator of small records.

Why a generator: the GUI's Step button asks for one more token, a Play timer asks for the
next, the CLI runs it to the end, and all see the same ``DecodeStep`` records: the token
chosen, the candidates it was chosen from, the attention rows behind the choice, and for
beam search every hypothesis with its score and parent.

Each step feeds only the new token(s): the translator encodes the source once and reuses
the cross-attention keys/values; the GPT feeds the prompt once, then one token a step.
The attention rows of a step are those of the query that *produced* the distribution the
token was chosen from: "what the model looked at to choose it". The records themselves
(settings, steps, results) are in engine.decoding.records, which needs no torch.
"""
from __future__ import annotations

from typing import Generator

import numpy as np
import torch

from engine.decoding.records import STRATEGIES, DecodeResult, DecodeSettings, DecodeStep, Hypothesis
from engine.loading.loaded import LoadedModel
from engine.models.outputs import CROSS, DECODER_SELF
from engine.traces.tracing import InputError


def _select(cache, index: torch.Tensor):
    """Reorder every tensor of a nested cache along the batch (beam) dimension."""
    if isinstance(cache, torch.Tensor):
        return cache.index_select(0, index)
    if isinstance(cache, (list, tuple)):
        return type(cache)(_select(c, index) for c in cache)
    return cache


def _last_rows(attentions, width: int | None = None) -> torch.Tensor:
    """Each layer's attention row of the newest token, one tensor (B, L, H, width).

    Why not a plain stack: a sliding-window layer's KV cache holds only its last few keys, so
    its row is narrower than the sequence (Mistral, Gemma 2 mixes both kinds). Its row covers
    the newest keys, so it is right-aligned and the keys out of its window read 0, as they
    do in a full forward."""
    rows = [w[:, :, -1] for w in attentions]                    # each (B, H, Tk_layer)
    width = width or max(r.shape[-1] for r in rows)
    out = rows[0].new_zeros(rows[0].shape[0], len(rows), rows[0].shape[1], width)   # (B, L, H, width)
    for i, r in enumerate(rows):
        out[:, i, :, width - r.shape[-1]:] = r
    return out


def _first_of_source(ids: list[int], keep: int, notes: list[str]) -> list[int]:
    """A source text cut to what the encoder reads, said in ``notes`` when it is cut."""
    if len(ids) > keep:
        notes.append(f"The text has {len(ids)} tokens and the model reads at most {keep}: only the first "
                     f"{keep} are translated.")
    return ids[:keep]


def _end_of_prompt(ids: list[int], keep: int, notes: list[str]) -> list[int]:
    """A prompt cut to its last ``keep`` tokens (a continuation follows the end), said in
    ``notes`` when it is cut."""
    if len(ids) > keep:
        notes.append(f"The prompt has {len(ids)} tokens and the model reads at most {keep + 1}: decoding "
                     f"continues from its last {keep}.")
    return ids[-keep:]


class _Stepper:
    """Feeds new tokens to a model, keeping the cache; one subclass per family. ``notes``
    say what the user should know about the input (a text cut to the model's length)."""

    eos_id: int | None
    limit: int
    notes: list[str]

    def step(self, new_ids: torch.Tensor):  # (B, t) -> logits (B, V), self rows, cross rows
        raise NotImplementedError

    def reorder(self, index: torch.Tensor) -> None:
        self.past = _select(self.past, index)


class _TranslatorStepper(_Stepper):
    def __init__(self, loaded: LoadedModel, text: str, settings: DecodeSettings):
        model, src_tok, tgt_tok = loaded.model, loaded.tokenizer, loaded.tgt_tokenizer
        n = model.config.max_len
        self.notes = []
        src_ids = _first_of_source(src_tok.encode(text), n - 1, self.notes) + [src_tok.eos_id]
        self.model, self.past = model, None
        self.source_tokens = src_tok.tokens(src_ids)
        self.prompt_ids = [tgt_tok.bos_id]
        self.tokenizer, self.eos_id = tgt_tok, tgt_tok.eos_id
        self.limit = min(settings.max_new_tokens, n - 1)
        self.memory, self.src_mask, _ = model.encode(torch.tensor([src_ids], device=loaded.device))

    def step(self, new_ids):
        out = self.model.decode(new_ids, self.memory, self.src_mask, need_weights=True, past=self.past, use_cache=True)
        self.past = out.present
        self_rows = _last_rows(out.attentions[DECODER_SELF])   # (B, L, H, T)
        cross_rows = _last_rows(out.attentions[CROSS])         # (B, L, H, S)
        return out.logits[:, -1], self_rows, cross_rows

    def reorder(self, index):
        super().reorder(index)
        self.memory = self.memory.index_select(0, index)
        self.src_mask = self.src_mask.index_select(0, index)


class _GPTStepper(_Stepper):
    def __init__(self, loaded: LoadedModel, text: str, settings: DecodeSettings):
        model, tok = loaded.model, loaded.tokenizer
        self.notes = []
        ids = _end_of_prompt(tok.encode(text), model.config.block_size - 1, self.notes)
        if not ids:
            raise InputError("The prompt has no tokens this model knows: type some text to continue.")
        self.model, self.past, self.tokenizer, self.eos_id = model, None, tok, tok.eos_id
        self.source_tokens = []
        self.prompt_ids = ids
        self.limit = min(settings.max_new_tokens, model.config.block_size - len(ids))

    def step(self, new_ids):
        out = self.model(new_ids, need_weights=True, past=self.past, use_cache=True)
        self.past = out.present
        return out.logits[:, -1], _last_rows(out.attentions[DECODER_SELF]), None   # rows (B, L, H, T)


class _HFDecoderStepper(_Stepper):
    """A Hugging Face causal LM continuing the prompt through its own KV cache."""

    def __init__(self, loaded: LoadedModel, text: str, settings: DecodeSettings):
        from engine.adapters.hf_text import HFTokens, cache_field, hf_eos_id

        self.notes = []
        ids = _end_of_prompt(loaded.tokenizer(text, verbose=False)["input_ids"], loaded.max_len - 1, self.notes)
        if not ids:
            raise InputError("The prompt has no tokens: type some text to continue.")
        self.model, self.past, self.source_tokens, self.prompt_ids = loaded.model, None, [], ids
        self.cache_field = cache_field(loaded.model)
        self.eos_id = hf_eos_id(loaded)
        self.tokenizer = HFTokens(loaded.tokenizer, self.eos_id)
        self.limit = min(settings.max_new_tokens, loaded.max_len - len(ids))
        self.length = 0      # tokens fed so far: the width of a row when every layer slides

    def step(self, new_ids):
        out = self.model(input_ids=new_ids, **{self.cache_field: self.past}, use_cache=True, output_attentions=True)
        self.past = getattr(out, self.cache_field)
        self.length += new_ids.shape[1]
        return out.logits[:, -1], _last_rows(out.attentions, self.length), None   # rows (B, L, H, T)

    def reorder(self, index):
        self.past.reorder_cache(index)


class _HFSeq2SeqStepper(_Stepper):
    """A Hugging Face encoder-decoder: the source encoded once, the decoder stepped with its cache."""

    def __init__(self, loaded: LoadedModel, text: str, settings: DecodeSettings):
        from transformers.modeling_outputs import BaseModelOutput
        from engine.adapters.hf_text import HFTokens, cache_field, encode_text, hf_eos_id, readable_tokens

        model = loaded.model
        self.cache_field = cache_field(model)
        self.notes = []
        enc = encode_text(loaded.tokenizer, text, None, loaded.max_len, self.notes)
        enc = {k: v.to(loaded.device) for k, v in enc.items()}
        self.model, self.past, self.mask = model, None, enc["attention_mask"]
        self.memory = BaseModelOutput(last_hidden_state=model.get_encoder()(**enc).last_hidden_state)
        self.source_tokens = readable_tokens(loaded.tokenizer, enc["input_ids"][0].tolist())
        start = model.config.decoder_start_token_id
        self.prompt_ids = [start if start is not None else model.config.pad_token_id]
        self.eos_id = hf_eos_id(loaded)
        self.tokenizer = HFTokens(loaded.tokenizer, self.eos_id)
        self.limit = min(settings.max_new_tokens, loaded.max_len - 1)
        self.length = 0      # decoder tokens fed so far

    def step(self, new_ids):
        out = self.model(encoder_outputs=self.memory, attention_mask=self.mask, decoder_input_ids=new_ids,
                         **{self.cache_field: self.past}, use_cache=True, output_attentions=True)
        self.past = getattr(out, self.cache_field)
        self.length += new_ids.shape[1]
        return (out.logits[:, -1], _last_rows(out.decoder_attentions, self.length),   # (B, L, H, T)
                _last_rows(out.cross_attentions))                                      # (B, L, H, S)

    def reorder(self, index):
        from transformers.modeling_outputs import BaseModelOutput

        self.past.reorder_cache(index)
        self.memory = BaseModelOutput(last_hidden_state=self.memory.last_hidden_state.index_select(0, index))
        self.mask = self.mask.index_select(0, index)


STEPPERS = {"translator": _TranslatorStepper, "gpt": _GPTStepper, "hf-decoder": _HFDecoderStepper,
            "hf-seq2seq": _HFSeq2SeqStepper}


class DecodeSession:
    """Decoding ``text`` with ``loaded``: ``steps()`` yields one DecodeStep per token."""

    def __init__(self, loaded: LoadedModel, text: str, settings: DecodeSettings | None = None):
        text = (text or "").strip()
        if not text:
            raise InputError("There is no text to decode: type a sentence first.")
        self.settings = settings or DecodeSettings()
        if self.settings.strategy not in STRATEGIES:
            raise ValueError(f"unknown strategy {self.settings.strategy!r}; choose one of {', '.join(STRATEGIES)}")
        loaded.model.eval()
        if loaded.family not in STEPPERS:
            raise InputError(f"Step-by-step decoding needs a model that generates text (a decoder or an "
                             f"encoder-decoder); {loaded.name} is an encoder.")
        self.loaded = loaded
        self.device = loaded.device
        with torch.no_grad():
            self.stepper = STEPPERS[loaded.family](loaded, text, self.settings)
        self.source_tokens = self.stepper.source_tokens
        self.prompt_tokens = self.stepper.tokenizer.tokens(self.stepper.prompt_ids)
        self.notes = list(self.stepper.notes)   # e.g. the text was cut to the model's length

    @torch.no_grad()
    def steps(self) -> Generator[DecodeStep, None, None]:
        """One DecodeStep per ``next()``. Gradients are off while the body runs and the
        caller's mode is back at each yield: torch's decorator (unlike a ``with`` block
        around the yields) sets the mode per resumption, so a worker thread that advanced
        a step can train next without inheriting ``no_grad``."""
        if self.settings.strategy == "beam":
            yield from self._beam()
        else:
            yield from self._single()

    # ---- greedy and sampling ------------------------------------------------------------
    def _single(self):
        s, st, tok = self.settings, self.stepper, self.stepper.tokenizer
        gen = torch.Generator(device="cpu").manual_seed(s.seed)
        # Sampling never draws a special token other than the end: a [CLS] or [BOS] in the
        # middle of a sentence is never what a user asks for. Greedy stays the model's argmax.
        banned = sorted(set(getattr(tok, "special_ids", ())) - {st.eos_id})
        feed = torch.tensor([st.prompt_ids], device=self.device)
        out_ids: list[int] = []
        for i in range(st.limit):
            logits, self_rows, cross_rows = st.step(feed)
            probs = _distribution(logits[0], s if s.strategy == "sample" else None, banned)  # (V,)
            if s.strategy == "sample":
                nxt = int(torch.multinomial(probs.cpu(), 1, generator=gen))
            else:
                nxt = int(probs.argmax())
            out_ids.append(nxt)
            done = nxt == st.eos_id or i == st.limit - 1
            yield DecodeStep(i, nxt, tok.tokens([nxt])[0], float(probs[nxt]), _top(probs, tok, s.n_candidates),
                             _rows(self_rows, 0), _rows(cross_rows, 0), tok.tokens(out_ids), list(out_ids),
                             finished=done)
            if done:
                return
            feed = torch.tensor([[nxt]], device=self.device)

    # ---- beam search ----------------------------------------------------------------------
    def _beam(self):
        s, st, tok = self.settings, self.stepper, self.stepper.tokenizer
        width = max(1, s.beam_width)
        live = [Hypothesis([], [], 0.0, -1)]
        sums = torch.zeros(1, device=self.device)   # (B,) summed log-probs of the live hypotheses
        finished: list[Hypothesis] = []
        feed = torch.tensor([st.prompt_ids], device=self.device)
        norm = lambda total, length: total / max(1, length) ** s.length_penalty  # noqa: E731
        for i in range(st.limit):
            logits, self_rows, cross_rows = st.step(feed)
            logp = torch.log_softmax(logits.float(), -1)                    # (B, V)
            total = (sums[:, None] + logp).flatten()                        # (B * V,)
            vocab = logp.size(1)
            order = total.topk(min(len(total), 2 * width + 1)).indices.tolist()
            last = i == st.limit - 1
            new_live, parents, new_sums, shown = [], [], [], []
            for flat in order:
                parent, token = divmod(flat, vocab)
                h = live[parent]
                ids = h.ids + [token]
                hyp = Hypothesis(ids, tok.tokens(ids), norm(float(total[flat]), len(ids)), parent)
                if token == st.eos_id:
                    hyp.finished = True
                    finished.append(hyp)
                elif len(new_live) < width:
                    new_live.append(hyp)
                    parents.append(parent)
                    new_sums.append(float(total[flat]))
                else:
                    hyp.pruned = True
                shown.append(hyp)
            if last:  # hypotheses cut by the length limit count as finished
                finished.extend(new_live)
            done = last or not new_live or len(finished) >= width
            # The step shows the top extension of this step; the output is the best hypothesis
            # so far, and at the end the best finished one by length-normalised score.
            top = shown[0]
            best = max(finished + new_live, key=lambda h: h.score) if done else top
            probs = torch.softmax(logits[top.parent].float(), -1)
            token = top.ids[-1]
            yield DecodeStep(i, token, tok.tokens([token])[0], float(probs[token]), _top(probs, tok, s.n_candidates),
                             _rows(self_rows, top.parent), _rows(cross_rows, top.parent),
                             best.tokens, list(best.ids), beams=shown, finished=done)
            if done:
                return
            index = torch.tensor(parents, device=self.device)
            st.reorder(index)
            live, sums = new_live, torch.tensor(new_sums, device=self.device)
            feed = torch.tensor([[h.ids[-1]] for h in live], device=self.device)


def _distribution(logits: torch.Tensor, s: DecodeSettings | None, banned: list[int] = ()) -> torch.Tensor:
    """Probabilities (V,); for sampling: ``banned`` ids removed, then temperature, top-k and
    top-p, renormalised."""
    logits = logits.float()
    if s is None:
        return torch.softmax(logits, -1)
    if banned:
        logits = logits.clone()
        logits[[i for i in banned if 0 <= i < logits.numel()]] = float("-inf")
    logits = logits / max(s.temperature, 1e-6)
    if s.top_k and s.top_k < logits.numel():
        kth = logits.topk(s.top_k).values[-1]
        logits = logits.masked_fill(logits < kth, float("-inf"))
    probs = torch.softmax(logits, -1)
    if s.top_p < 1.0:
        sorted_p, order = probs.sort(descending=True)
        keep = sorted_p.cumsum(0) - sorted_p < s.top_p   # the smallest set reaching top_p
        mask = torch.zeros_like(probs, dtype=torch.bool).scatter(0, order, keep)
        probs = torch.where(mask, probs, torch.zeros_like(probs))
        probs = probs / probs.sum()
    return probs


def _top(probs: torch.Tensor, tok, n: int) -> list[tuple[str, float]]:
    values, ids = probs.topk(min(n, probs.numel()))
    return list(zip(tok.tokens(ids.tolist()), [float(v) for v in values]))


def _rows(rows: torch.Tensor | None, b: int) -> np.ndarray | None:
    return None if rows is None else rows[b].float().cpu().numpy()


def decode_all(loaded: LoadedModel, text: str, settings: DecodeSettings | None = None) -> DecodeResult:
    """Run a session to its end (for the CLI and tests)."""
    session = DecodeSession(loaded, text, settings)
    steps = list(session.steps())
    tok = session.stepper.tokenizer
    ids = steps[-1].output_ids if steps else []
    ids = [i for i in ids if i != session.stepper.eos_id]
    return DecodeResult(session.source_tokens, session.prompt_tokens, tok.tokens(ids), tok.decode(ids), steps,
                        session.notes)


def model_output(loaded: LoadedModel, text: str, max_new_tokens: int | None = None) -> str:
    """The model's own greedy output for ``text``, as text: a translation for an
    encoder-decoder, a continuation for a decoder, "" for an encoder (the window shows it)."""
    if not loaded.generates:
        return ""
    n = max_new_tokens or (40 if loaded.role == "encoder-decoder" else 24)
    return decode_all(loaded, text, DecodeSettings(max_new_tokens=n)).text
