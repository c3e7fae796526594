"""Decoding one token at a time, with a KV cache, as a generator of small records.

Why a generator: the GUI's Step button asks for one more token, a Play timer asks for the
next, the CLI runs it to the end, and all see the same ``DecodeStep`` records: the token
chosen, the candidates it was chosen from, the attention rows behind the choice, and for
beam search every hypothesis with its score and parent.

Each step feeds only the new token(s) through the adapter's stepper (engine.adapters): an
encoder-decoder encodes the source once and reuses the cross-attention keys/values; a
decoder feeds the prompt once, then one token a step. The attention rows of a step are
those of the query that *produced* the distribution the token was chosen from ("what the
model looked at to choose it"), read from the seam's recording of that step. The records
themselves (settings, steps, results) are in engine.decoding.records, which needs no torch.
"""
from __future__ import annotations

from typing import Generator

import torch

from attnscope.engine.adapters.base import as_numpy as _rows
from attnscope.engine.decoding.cost import check_decoding
from attnscope.engine.decoding.greedy import OWN_OUTPUT_TOKENS, admitted, frame, greedy_text
from attnscope.engine.decoding.records import STRATEGIES, DecodeResult, DecodeSettings, DecodeStep, Hypothesis, StepDiff
from attnscope.engine.inputs import InputError, check_kind
from attnscope.engine.loading.dense import check_seam
from attnscope.engine.loading.loaded import LoadedModel
from attnscope.engine.seam import hooks


class DecodeSession:
    """Decoding ``text`` (a str, a Chat, a Prompt or a Prepared request) with ``loaded``:
    ``steps()`` yields one DecodeStep per token."""

    def __init__(self, loaded: LoadedModel, text, settings: DecodeSettings | None = None, interventions=None,
                 compare: bool = True):
        adapter, text = admitted(loaded, text, "decode")     # a Prepared's own: its door was passed once
        check_seam(loaded, "stepping the decoding (each step's attention is recorded)")
        self.settings = settings or DecodeSettings()
        if self.settings.strategy not in STRATEGIES:
            raise ValueError(f"unknown strategy {self.settings.strategy!r}; choose one of {', '.join(STRATEGIES)}")
        loaded.model.eval()
        self.loaded, self.adapter = loaded, adapter
        self.device = loaded.device
        # With interventions the session steps the changed model, and beside it the plain one
        # fed the same tokens (``base``), so each step says what the change did to its choice.
        # The hooks live for the whole session: a mean taken from the prompt, positions counted.
        # ``compare=False`` (the output line: only the changed text is wanted) steps no base.
        self.changes = interventions.hooks() if interventions is not None else []
        with torch.no_grad():
            self._prime_means(text)
        with torch.no_grad(), hooks(*self.changes):
            self.stepper = adapter.stepper(text, self.settings)   # InputError for an encoder
        with torch.no_grad():
            self.base = adapter.stepper(text, self.settings) if self.changes and compare else None
        beams = self.settings.beam_width if self.settings.strategy == "beam" else 1
        check_decoding(adapter, len(self.stepper.prompt_ids) + len(self.stepper.source_tokens),
                       self.stepper.limit, beams * (2 if self.base is not None else 1), loaded.name)
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

    def _prime_means(self, text: str) -> None:
        """A mean-ablated head gets its mean over the text's positions from one forward of the
        text as the plain model frames it (a translator: the source and its own translation),
        not from the session's first step, which for a translator is a lone [BOS]."""
        means = [h for h in self.changes if getattr(h, "takes_means", False)]
        if means and self.loaded.generates:
            framed = frame(self.adapter, text)
            with hooks(*means):
                self.adapter.forward(framed)

    def _step(self, feed: torch.Tensor):
        """(logits (B, V), self rows, cross rows, logits without the interventions or None)."""
        with hooks(*self.changes):
            out = self.stepper.step(feed)
        return (*out, None if self.base is None else self.base.logits(feed))

    # ---- greedy and sampling ------------------------------------------------------------
    def _single(self):
        s, st, tok = self.settings, self.stepper, self.stepper.tokenizer
        gen = torch.Generator(device="cpu").manual_seed(s.seed)
        # Sampling never draws a special token other than the end: a [CLS] or [BOS] in the
        # middle of a sentence is never what a user asks for. Greedy stays the model's argmax.
        banned = sorted(set(getattr(tok, "special_ids", ())) - st.end_ids)
        feed = torch.tensor([st.prompt_ids], device=self.device)
        out_ids: list[int] = []
        for i in range(st.limit):
            logits, self_rows, cross_rows, before = self._step(feed)
            probs = _distribution(logits[0], s if s.strategy == "sample" else None, banned)  # (V,)
            if s.strategy == "sample":
                nxt = int(torch.multinomial(probs.cpu(), 1, generator=gen))
            else:
                nxt = int(probs.argmax())
            out_ids.append(nxt)
            done = nxt in st.end_ids or i == st.limit - 1
            yield DecodeStep(i, nxt, tok.tokens([nxt])[0], float(probs[nxt]), _top(probs, tok, s.n_candidates),
                             _rows(self_rows, 0), _rows(cross_rows, 0), tok.tokens(out_ids), list(out_ids),
                             finished=done, diff=_diff(before, logits, 0, tok))
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
            logits, self_rows, cross_rows, before = self._step(feed)
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
                if token in st.end_ids:
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
                             best.tokens, list(best.ids), beams=shown, finished=done,
                             diff=_diff(before, logits, top.parent, tok))
            if done:
                return
            index = torch.tensor(parents, device=self.device)
            st.reorder(index)
            if self.base is not None:
                self.base.reorder(index)
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


def kl_divergence(p_before: torch.Tensor, p_after: torch.Tensor) -> float:
    """KL(before || after) in nats of two distributions (V,); tokens with p_before = 0 add nothing."""
    terms = p_before * (torch.log(p_before) - torch.log(p_after))
    return float(torch.where(p_before > 0, terms, torch.zeros_like(terms)).sum())


def _diff(before: torch.Tensor | None, after: torch.Tensor, b: int, tok, n: int = 5) -> StepDiff | None:
    """The step's top tokens (of either distribution) with p before/after, and KL(before || after)."""
    if before is None:
        return None
    pb, pa = torch.softmax(before[b].float(), -1), torch.softmax(after[b].float(), -1)   # (V,)
    ids = list(dict.fromkeys(pa.topk(n).indices.tolist() + pb.topk(n).indices.tolist()))
    ids.sort(key=lambda i: -float(pa[i]))
    return StepDiff([(t, float(pb[i]), float(pa[i])) for t, i in zip(tok.tokens(ids), ids)], kl_divergence(pb, pa))


def _top(probs: torch.Tensor, tok, n: int) -> list[tuple[str, float]]:
    values, ids = probs.topk(min(n, probs.numel()))
    return list(zip(tok.tokens(ids.tolist()), [float(v) for v in values]))


def decode_all(loaded: LoadedModel, text: str, settings: DecodeSettings | None = None,
               interventions=None, compare: bool = True) -> DecodeResult:
    """Run a session to its end (for the CLI and tests)."""
    if settings is not None and not isinstance(settings, DecodeSettings):
        raise InputError(f"Decoding settings are an engine.decoding.DecodeSettings (strategy, beams, ...), not "
                         f"{settings!r:.40}.")
    session = DecodeSession(loaded, text, settings, interventions, compare)
    steps = list(session.steps())
    tok = session.stepper.tokenizer
    ids = steps[-1].output_ids if steps else []
    ids = [i for i in ids if i not in session.stepper.end_ids]
    return DecodeResult(session.source_tokens, session.prompt_tokens, tok.tokens(ids), tok.decode(ids), steps,
                        session.notes)


def model_output(loaded: LoadedModel, text, max_new_tokens: int | None = None, interventions=None) -> str:
    """The model's own greedy output for ``text``, as text: a translation for an
    encoder-decoder (the very one a Run without a target prefix shows: engine.decoding.greedy,
    ``OWN_OUTPUT_TOKENS`` tokens, under the same interventions), a continuation for a decoder,
    "" for an encoder (the window shows it)."""
    check_kind(loaded, LoadedModel, "loaded", "a LoadedModel (engine.loading.open_model)")
    if not loaded.generates:
        return ""
    adapter, text = admitted(loaded, text, "decode")
    n = max_new_tokens or (OWN_OUTPUT_TOKENS if loaded.role == "encoder-decoder" else 24)
    loaded.model.eval()
    with torch.no_grad(), hooks(*(interventions.hooks() if interventions is not None else [])):
        return greedy_text(adapter, text, n)
