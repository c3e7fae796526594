"""Training loops for the from-scratch translator and GPT, written as generators.

Why generators: the same loop drives a tqdm bar in the CLI and a live panel in the GUI.
Each yields ``TrainProgress`` records (every ``report_every`` steps, at each evaluation and
once at the end with ``done=True``); between steps it asks ``stop()`` and, if told to,
finishes cleanly. The trained ``LoadedModel`` is the generator's *return value*:
``run_training`` below collects it, and a GUI worker gets it as its "returned" result.

The recipe is the usual one: AdamW, linear warm-up then cosine decay to a tenth, gradient
clipping, label smoothing for the translator, dropout, seeds; the fused attention kernel
(nothing recorded) while training, and a probe trace (recorded at the seam) every
``probe_every`` steps so a viewer can watch heads form.
"""
from __future__ import annotations

import math
import random
import time
from typing import Callable, Generator, Iterable

import torch
import torch.nn.functional as F

from attnscope.engine.inspection.analysis import mechanism_scores
from attnscope.engine.loading.loaded import LoadedModel
from attnscope.engine.models import GPT, GPTConfig, Translator, TranslatorConfig
from attnscope.engine.models.tokenizer import Tokenizer
from attnscope.engine.runtime.steps import drive
from attnscope.engine.traces.base import AttentionTrace
from attnscope.engine.traces.tracing import trace_text
from attnscope.engine.training.records import TrainConfig, TrainProgress
from attnscope.engine.inputs import check_kind

# Model sizes by name: "tiny" for tests, "small" for the bundled checkpoints.
SIZES = {
    "translator": {
        "tiny": dict(d_model=32, n_head=2, n_encoder_layers=1, n_decoder_layers=1, d_ff=64, max_len=64),
        "small": dict(d_model=128, n_head=4, n_encoder_layers=3, n_decoder_layers=3, d_ff=512, max_len=64),
    },
    "gpt": {
        "tiny": dict(n_layer=1, n_head=2, n_embd=32, block_size=32),
        # The bundled GPT (see docs/models.md): four layers, so a previous-token head can feed an
        # induction head above it, and a 256-token context in which passages come back.
        "small": dict(n_layer=4, n_head=4, n_embd=128, block_size=256, dropout=0.0),
    },
}


def learning_rate(step: int, config: TrainConfig) -> float:
    """Linear warm-up to ``lr``, then cosine decay to lr / 10 at the last step."""
    if step < config.warmup:
        return config.lr * (step + 1) / config.warmup
    t = (step - config.warmup) / max(1, config.steps - config.warmup)
    return config.lr * (0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * min(1.0, t))))


def run_training(gen: Generator, on_progress: Callable[[TrainProgress], None] | None = None) -> LoadedModel:
    """Drive a training generator to its end; returns the trained model."""
    check_kind(gen, Generator, "gen", "a training generator (train_gpt, train_translator)")

    return drive(gen, on_progress)


def _pad(rows: list[list[int]], pad_id: int, device) -> tuple[torch.Tensor, torch.Tensor]:
    """Rows of ids -> (ids (B, T) padded with ``pad_id``, keep (B, T): true for real tokens)."""
    width = max(len(r) for r in rows)
    ids = torch.tensor([r + [pad_id] * (width - len(r)) for r in rows], device=device)
    keep = torch.arange(width, device=device)[None, :] < torch.tensor([len(r) for r in rows], device=device)[:, None]
    return ids, keep


def _optimizer(model: torch.nn.Module, config: TrainConfig) -> torch.optim.Optimizer:
    """AdamW with weight decay on matrices only (not on biases, norms or embeddings' pads)."""
    params = {id(p): p for p in model.parameters() if p.requires_grad}.values()
    decay = [p for p in params if p.dim() >= 2]
    no_decay = [p for p in params if p.dim() < 2]
    return torch.optim.AdamW([{"params": decay, "weight_decay": config.weight_decay},
                              {"params": no_decay, "weight_decay": 0.0}], lr=config.lr, betas=(0.9, 0.98))


@torch.enable_grad()
def _loop(loaded: LoadedModel, config: TrainConfig, batch_fn, loss_fn, val_fn, stop) -> Generator:
    """The shared step loop: schedule, clip, report, evaluate, probe, stop.

    Gradients are on for the body whatever the calling thread's mode (a worker thread may
    have run inference before); the decorator sets it per resumption, never across a yield.
    On stop it first yields a ``stopping`` record, so a cancelled run (the window closing)
    can end there without the final evaluation."""
    model = loaded.model
    opt = _optimizer(model, config)
    start, tokens_since, since = time.perf_counter(), 0, time.perf_counter()
    loss_value, step, stopped = float("nan"), 0, False
    history = []  # the best induction and previous-token score at each evaluation: when heads formed
    model.train()
    for step in range(1, config.steps + 1):
        if stop():
            step, stopped = step - 1, True
            yield TrainProgress(step, config.steps, loss_value, learning_rate(max(step - 1, 0), config), 0.0,
                                time.perf_counter() - start, stopped=True)
            break
        lr = learning_rate(step - 1, config)
        for group in opt.param_groups:
            group["lr"] = lr
        batch, n_tokens = batch_fn()
        loss = loss_fn(batch)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), config.clip)
        opt.step()
        tokens_since += n_tokens
        evaluate = config.eval_every and step % config.eval_every == 0
        probe = config.probe_every and config.probe_text and step % config.probe_every == 0
        if step % config.report_every == 0 or evaluate or probe or step == config.steps:
            loss_value = loss.item()
            now = time.perf_counter()
            record = TrainProgress(step, config.steps, loss_value, lr, tokens_since / max(now - since, 1e-9), now - start)
            tokens_since, since = 0, now
            if evaluate:
                record.val_loss = val_fn()
            if probe:
                record.probe = _probe(loaded, config.probe_text)
            if evaluate or probe:
                record.head_scores = _head_scores(loaded)
                history.append({"step": step, **{kind: {name: round(float(a.max()), 4) for name, a in by_name.items()}
                                                 for kind, by_name in record.head_scores.items()}})
            yield record
    val = val_fn()
    model.eval()
    loaded.meta.setdefault("training", {}).update(steps=step, final_loss=loss_value, val_loss=val, head_history=history)
    yield TrainProgress(step, config.steps, loss_value, learning_rate(max(step - 1, 0), config), 0.0,
                        time.perf_counter() - start, val_loss=val, done=True, stopped=stopped)


def _head_scores(loaded: LoadedModel) -> dict:
    """Induction and previous-token scores of every head now (the model briefly in eval mode)."""
    loaded.model.eval()
    try:
        return mechanism_scores(loaded)
    finally:
        loaded.model.train()


def _probe(loaded: LoadedModel, text: str) -> AttentionTrace:
    loaded.model.eval()
    try:
        return trace_text(loaded, text)
    finally:
        loaded.model.train()


# ---- translator ------------------------------------------------------------------------
def build_translator(pairs: list[tuple[str, str]], config: TrainConfig) -> LoadedModel:
    """A fresh translator with one word-level vocabulary for both languages (names and
    punctuation are shared, and the output layer is tied to the embeddings)."""
    texts = [t for pair in pairs for t in pair]
    min_frequency = 1 if len(pairs) < 50000 else 2
    # A corpus written in lower case (the synthetic one) gets input read the same way.
    tok = Tokenizer.train_word_level(texts, min_frequency=min_frequency, lowercase=all(t == t.lower() for t in texts))
    sizes = {**SIZES["translator"][config.size], **config.model_overrides}
    model = Translator(TranslatorConfig(tok.vocab_size, tok.vocab_size, share_embeddings=True, **sizes))
    return LoadedModel(f"translator ({config.size})", "translator", model, tok)


def encode_pairs(loaded: LoadedModel, pairs: Iterable[tuple[str, str]]) -> list[tuple[list[int], list[int]]]:
    """(source ids + EOS, BOS + target ids + EOS), cut to the model's length."""
    src_tok, tgt_tok, n = loaded.tokenizer, loaded.tgt_tokenizer, loaded.model.config.max_len
    return [(src_tok.encode(s)[: n - 1] + [src_tok.eos_id], [tgt_tok.bos_id] + tgt_tok.encode(t)[: n - 2] + [tgt_tok.eos_id])
            for s, t in pairs]


def translator_loss(model: Translator, src, tgt, smoothing: float = 0.0) -> torch.Tensor:
    """Teacher-forced cross-entropy: src, tgt = (ids, keep) pairs from ``_pad``, each (B, T);
    targets run BOS ... EOS, and padded positions are left out of the loss."""
    (src, src_keep), (tgt, tgt_keep) = src, tgt
    logits = model(src, tgt[:, :-1], src_keep=src_keep, tgt_keep=tgt_keep[:, :-1]).logits  # (B, T-1, V)
    targets = tgt[:, 1:].masked_fill(~tgt_keep[:, 1:], -100)
    return F.cross_entropy(logits.reshape(-1, logits.size(-1)), targets.reshape(-1),
                           ignore_index=-100, label_smoothing=smoothing)


def train_translator(pairs_train: list[tuple[str, str]], pairs_valid: list[tuple[str, str]], config: TrainConfig,
                     device: str | torch.device = "cpu", stop: Callable[[], bool] = lambda: False,
                     loaded: LoadedModel | None = None) -> Generator[TrainProgress, None, LoadedModel]:
    """Train (or go on training ``loaded``) on (english, german) pairs; returns the model."""
    check_kind(config, TrainConfig, "config", "a TrainConfig")
    torch.manual_seed(config.seed)
    rng = random.Random(config.seed)
    loaded = (loaded or build_translator(pairs_train, config)).to(device)
    data = encode_pairs(loaded, pairs_train)
    valid = encode_pairs(loaded, pairs_valid[:512])
    pad = loaded.model.config.pad_id

    def batch():
        rows = rng.sample(data, min(config.batch_size, len(data)))
        src, tgt = _pad([r[0] for r in rows], pad, device), _pad([r[1] for r in rows], pad, device)
        return (src, tgt), int(src[1].sum() + tgt[1].sum())

    @torch.no_grad()
    def val_loss():
        if not valid:
            return None
        loaded.model.eval()
        total = 0.0
        for i in range(0, len(valid), 128):
            rows = valid[i:i + 128]
            src, tgt = _pad([r[0] for r in rows], pad, device), _pad([r[1] for r in rows], pad, device)
            total += float(translator_loss(loaded.model, src, tgt)) * len(rows)
        loaded.model.train()
        return total / len(valid)

    yield from _loop(loaded, config, batch, lambda b: translator_loss(loaded.model, *b, config.label_smoothing),
                     val_loss, stop)
    return loaded


# ---- GPT -------------------------------------------------------------------------------
def build_gpt(lines: list[str], config: TrainConfig) -> LoadedModel:
    tok = Tokenizer.train_bpe(lines, vocab_size=config.vocab_size)
    sizes = {**SIZES["gpt"][config.size], **config.model_overrides}
    model = GPT(GPTConfig(tok.vocab_size, **sizes))
    return LoadedModel(f"gpt ({config.size})", "gpt", model, tok)


def token_stream(loaded: LoadedModel, lines: Iterable[str]) -> torch.Tensor:
    """All lines as one stream of ids, each line ended by EOS (so the model learns where
    a sentence stops)."""
    tok, ids = loaded.tokenizer, []
    for line in lines:
        ids.extend(tok.encode(line))
        ids.append(tok.eos_id)
    return torch.tensor(ids, dtype=torch.long)


def gpt_windows(stream: torch.Tensor, block: int, starts: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """(inputs, next-token targets), both (B, block), from windows of ``stream`` at ``starts``."""
    idx = starts[:, None] + torch.arange(block + 1)[None, :]
    windows = stream[idx]
    return windows[:, :-1], windows[:, 1:]


def repeat_passages(x: torch.Tensor, y: torch.Tensor, fraction: float,
                    gen: torch.Generator) -> tuple[torch.Tensor, torch.Tensor]:
    """The first ``fraction`` of the (B, T) windows rewritten to open with a passage of their
    own text said three times (8 tokens to half the window), then the window's text again.

    Why: copying what came earlier in the context is what an induction head does, and in
    256-token windows of plays it pays too rarely for one to form within a CPU budget
    (Olsson et al. saw theirs after billions of tokens). Passages that recur, as refrains and
    quoted lines do, make it pay. The passages are the corpus's own text, never random
    tokens: the induction score is measured on random tokens, which the model never trains on."""
    n = int(round(fraction * x.size(0)))
    if n == 0:
        return x, y
    full = torch.cat([x, y[:, -1:]], 1)  # (B, T + 1): the window and its last target
    block = x.size(1)
    for i in range(n):
        length = int(torch.randint(8, max(9, block // 2 + 1), (1,), generator=gen))
        passage = full[i, :length]
        full[i] = torch.cat([passage, passage, full[i]])[: block + 1]
    return full[:, :-1], full[:, 1:]


def scored_windows(stream_len: int, block_size: int, max_windows: int) -> tuple[int, torch.Tensor]:
    """(block, starts) of the non-overlapping windows a validation loss is taken over."""
    block = min(block_size, stream_len - 1)
    return block, torch.arange(0, max(0, stream_len - block - 1), block)[:max_windows]


@torch.no_grad()
def gpt_loss_on(model: GPT, stream: torch.Tensor, device, max_windows: int = 64) -> float:
    """Mean next-token loss over non-overlapping windows of ``stream``."""
    block, starts = scored_windows(len(stream), model.config.block_size, max_windows)
    if len(starts) == 0:
        return float("nan")
    was_training = model.training
    model.eval()
    total = 0.0
    for chunk in starts.split(32):  # (32, block) windows at a time keep the logits small
        x, y = gpt_windows(stream, block, chunk)
        logits = model(x.to(device)).logits
        total += float(F.cross_entropy(logits.reshape(-1, logits.size(-1)), y.to(device).reshape(-1), reduction="sum"))
    model.train(was_training)
    return total / (len(starts) * block)


MIN_TRAIN_TOKENS = 16   # below this a window is a handful of tokens; below 3, there is no window at all


def train_gpt(lines_train: list[str], lines_valid: list[str], config: TrainConfig,
              device: str | torch.device = "cpu", stop: Callable[[], bool] = lambda: False,
              loaded: LoadedModel | None = None) -> Generator[TrainProgress, None, LoadedModel]:
    """Train (or go on training ``loaded``) on lines of text; returns the model."""
    check_kind(config, TrainConfig, "config", "a TrainConfig")
    torch.manual_seed(config.seed)
    loaded = (loaded or build_gpt(lines_train, config)).to(device)
    train, valid = token_stream(loaded, lines_train), token_stream(loaded, lines_valid)
    if len(train) < MIN_TRAIN_TOKENS:
        raise ValueError(f"The text to train on has {len(train)} tokens; a GPT needs at least {MIN_TRAIN_TOKENS} "
                         "(a few sentences) to learn anything. Give it a longer text.")
    block = min(loaded.model.config.block_size, len(train) - 2)   # a short text trains on shorter windows
    gen = torch.Generator().manual_seed(config.seed)

    def batch():
        starts = torch.randint(0, len(train) - block - 1, (config.batch_size,), generator=gen)
        x, y = gpt_windows(train, block, starts)
        x, y = repeat_passages(x, y, config.repeat_fraction, gen)
        return (x.to(device), y.to(device)), x.numel()

    def loss_fn(b):
        x, y = b
        logits = loaded.model(x).logits
        return F.cross_entropy(logits.reshape(-1, logits.size(-1)), y.reshape(-1))

    yield from _loop(loaded, config, batch, loss_fn, lambda: gpt_loss_on(loaded.model, valid, device), stop)
    return loaded
