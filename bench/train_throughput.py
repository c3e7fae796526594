"""Training tokens/s of attnscope's Translator against torch.nn.Transformer of the same size.

Same sizes (the "small" preset), same batch of synthetic pairs, same embeddings, output
layer, loss and optimizer; only the transformer body differs. The two train in one loop, a
step of one then a step of the other on the same batch (the order alternating), two passes
over 25 batches after 3 warm-up steps each; tokens/s is that of the median step, with the
spread of the step times; on a worker thread, as the window trains. Goal: ratio >= 0.9. Prints one JSON object.
"""
from __future__ import annotations

import json
import math
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402
from torch import nn  # noqa: E402

from bench._timing import machine, on_worker, run_main, summary  # noqa: E402
from attnscope.engine.corpora.german import make_splits  # noqa: E402
from attnscope.engine.models.positional import SinusoidalPositionalEncoding  # noqa: E402
from attnscope.engine.training.loops import SIZES, TrainConfig, build_translator, encode_pairs, _pad  # noqa: E402


class TorchTranslator(nn.Module):
    """The reference: nn.Transformer with the same embeddings and output layer."""

    def __init__(self, vocab: int, d_model: int, n_head: int, n_encoder_layers: int, n_decoder_layers: int,
                 d_ff: int, max_len: int, **_):
        super().__init__()
        self.embed = nn.Embedding(vocab, d_model, padding_idx=0)
        self.positions = SinusoidalPositionalEncoding(d_model, max_len)
        self.body = nn.Transformer(d_model, n_head, n_encoder_layers, n_decoder_layers, d_ff, dropout=0.1,
                                   batch_first=True)
        self.generator = nn.Linear(d_model, vocab)
        self.generator.weight = self.embed.weight
        self.scale = math.sqrt(d_model)

    def forward(self, src, tgt):
        t = tgt.size(1)
        causal = torch.triu(torch.full((t, t), float("-inf")), diagonal=1)
        y = self.body(self.positions(self.embed(src) * self.scale), self.positions(self.embed(tgt) * self.scale),
                      tgt_mask=causal, src_key_padding_mask=src == 0, tgt_key_padding_mask=tgt == 0,
                      memory_key_padding_mask=src == 0)
        return self.generator(y)


def interleaved_steps(models: dict, batches, passes: int = 2, warmup: int = 3) -> dict[str, list[float]]:
    """Seconds per token of every step of every model, the models alternating step by step."""
    opts = {name: torch.optim.AdamW(m.parameters(), lr=1e-4) for name, (m, _) in models.items()}
    for m, _ in models.values():
        m.train()
    names = list(models)
    for src, tgt in batches[:warmup]:
        for name in names:
            _step(models[name][0], opts[name], src, tgt, models[name][1])
    per_token: dict[str, list[float]] = {name: [] for name in names}
    for i, (src, tgt) in enumerate(batches * passes):
        tokens = int((src != 0).sum() + (tgt != 0).sum())
        for name in (names if i % 2 == 0 else names[::-1]):
            start = time.perf_counter()
            _step(models[name][0], opts[name], src, tgt, models[name][1])
            per_token[name].append((time.perf_counter() - start) / tokens)
    return per_token


def _step(model, opt, src, tgt, logits_of):
    logits = logits_of(model, src, tgt[:, :-1])
    loss = F.cross_entropy(logits.reshape(-1, logits.size(-1)), tgt[:, 1:].reshape(-1), ignore_index=0)
    opt.zero_grad()
    loss.backward()
    opt.step()


def main() -> None:
    torch.manual_seed(0)
    steps, batch = 25, 64
    pairs = make_splits(seed=0, n_train=steps * batch, n_valid=10, n_test=10)["train"]
    ours = build_translator(pairs, TrainConfig(size="small"))
    data = encode_pairs(ours, pairs)
    # ids padded with 0 (no text here holds a 0 of its own, so ``ids != 0`` is the padding)
    batches = [(_pad([r[0] for r in data[i:i + batch]], 0, "cpu")[0], _pad([r[1] for r in data[i:i + batch]], 0, "cpu")[0])
               for i in range(0, len(data), batch)]
    sizes = SIZES["translator"]["small"]
    ref = TorchTranslator(ours.tokenizer.vocab_size, **sizes)
    per_token = on_worker(lambda: interleaved_steps({"attnscope": (ours.model, lambda m, s, t: m(s, t, src_keep=s != 0, tgt_keep=t != 0).logits),
                                   "torch.nn.Transformer": (ref, lambda m, s, t: m(s, t))}, batches))()
    rate = {k: 1 / statistics.median(v) for k, v in per_token.items()}
    print(json.dumps({
        "bench": "train_throughput",
        "device": "cpu", "threads": torch.get_num_threads(), "batch": batch,
        "steps": len(per_token["attnscope"]), "model": sizes,
        "params": {"attnscope": ours.n_parameters, "torch.nn.Transformer": sum(p.numel() for p in ref.parameters())},
        "tokens_per_s": {k: round(v) for k, v in rate.items()},
        "us_per_token": {k: summary([x * 1e6 for x in v], 2) for k, v in per_token.items()},
        "ratio": round(rate["attnscope"] / rate["torch.nn.Transformer"], 3),
        "machine": machine(),
        "goal": ">= 0.9",
    }))


if __name__ == "__main__":
    run_main(main)
