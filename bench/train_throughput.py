"""Training tokens/s of attnscope's Translator against torch.nn.Transformer of the same size.

Same sizes (the "small" preset), same batch of synthetic pairs, same embeddings, output
layer, loss and optimizer; only the transformer body differs. Goal: ratio >= 0.9.
Prints one JSON object.
"""
from __future__ import annotations

import json
import math
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402
from torch import nn  # noqa: E402

from engine.corpora.german import make_splits  # noqa: E402
from engine.positional import SinusoidalPositionalEncoding  # noqa: E402
from engine.training import SIZES, TrainConfig, build_translator, encode_pairs, _pad  # noqa: E402


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


def tokens_per_second(model, batches, logits_of) -> float:
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    model.train()
    for src, tgt in batches[:3]:  # warm-up
        _step(model, opt, src, tgt, logits_of)
    start, tokens = time.perf_counter(), 0
    for src, tgt in batches[3:]:
        _step(model, opt, src, tgt, logits_of)
        tokens += int((src != 0).sum() + (tgt != 0).sum())
    return tokens / (time.perf_counter() - start)


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
    batches = [(_pad([r[0] for r in data[i:i + batch]], 0, "cpu"), _pad([r[1] for r in data[i:i + batch]], 0, "cpu"))
               for i in range(0, len(data), batch)]
    sizes = SIZES["translator"]["small"]
    ref = TorchTranslator(ours.tokenizer.vocab_size, **sizes)
    # Alternate the two twice so neither gets a warmer machine.
    runs = {"attnscope": [], "torch.nn.Transformer": []}
    for _ in range(2):
        runs["attnscope"].append(tokens_per_second(ours.model, batches, lambda m, s, t: m(s, t).logits))
        runs["torch.nn.Transformer"].append(tokens_per_second(ref, batches, lambda m, s, t: m(s, t)))
    best = {k: max(v) for k, v in runs.items()}
    print(json.dumps({
        "bench": "train_throughput",
        "device": "cpu", "threads": torch.get_num_threads(), "batch": batch, "steps": steps - 3,
        "model": sizes,
        "params": {"attnscope": ours.n_parameters, "torch.nn.Transformer": sum(p.numel() for p in ref.parameters())},
        "tokens_per_s": {k: round(v) for k, v in best.items()},
        "ratio": round(best["attnscope"] / best["torch.nn.Transformer"], 3),
        "goal": ">= 0.9",
    }))


if __name__ == "__main__":
    main()
