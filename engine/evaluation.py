"""How good is a trained model: BLEU and chrF for the translator, loss against a unigram
baseline for the GPT. The numbers go into the checkpoint and the README.

Why sacrebleu: it is the reference implementation of BLEU and chrF, with a fixed
tokenisation, so the scores mean the same as in papers.
"""
from __future__ import annotations

import math
from collections import Counter

import torch

from engine.loaded import LoadedModel


@torch.no_grad()
def greedy_translate(loaded: LoadedModel, sentences: list[str], batch_size: int = 128,
                     max_new_tokens: int | None = None) -> list[list[int]]:
    """Greedy translations of ``sentences`` as target ids (no BOS/EOS), a batch at a time
    with a KV cache."""
    model, src_tok, tgt_tok = loaded.model, loaded.tokenizer, loaded.tgt_tokenizer
    model.eval()
    dev, pad, n = loaded.device, model.config.pad_id, model.config.max_len
    limit = max_new_tokens or n - 1
    out = []
    for i in range(0, len(sentences), batch_size):
        rows = [src_tok.encode(s)[: n - 1] + [src_tok.eos_id] for s in sentences[i:i + batch_size]]
        width = max(len(r) for r in rows)
        src = torch.tensor([r + [pad] * (width - len(r)) for r in rows], device=dev)
        keep = torch.tensor([[j < len(r) for j in range(width)] for r in rows], device=dev)  # (B, S) real tokens
        memory, src_mask, _ = model.encode(src, src_keep=keep)
        step = torch.full((len(rows), 1), tgt_tok.bos_id, device=dev)
        past, generated = None, []
        finished = torch.zeros(len(rows), dtype=torch.bool, device=dev)
        for _ in range(limit):
            res = model.decode(step, memory, src_mask, past=past, use_cache=True)
            past = res.present
            step = res.logits[:, -1].argmax(-1, keepdim=True)  # (B, 1)
            generated.append(step)
            finished |= step[:, 0] == tgt_tok.eos_id
            if bool(finished.all()):
                break
        ids = torch.cat(generated, dim=1).tolist()
        for row in ids:
            out.append(row[: row.index(tgt_tok.eos_id)] if tgt_tok.eos_id in row else row)
    return out


def translation_scores(loaded: LoadedModel, pairs: list[tuple[str, str]], limit: int | None = None) -> dict:
    """BLEU and chrF (sacrebleu) of greedy translations against the references."""
    import sacrebleu

    pairs = pairs[:limit] if limit else pairs
    hyps = [loaded.tgt_tokenizer.decode(ids) for ids in greedy_translate(loaded, [s for s, _ in pairs])]
    refs = [t for _, t in pairs]
    exact = sum(h.split() == loaded.tgt_tokenizer.decode(loaded.tgt_tokenizer.encode(r)).split() for h, r in zip(hyps, refs))
    return {
        "bleu": round(sacrebleu.corpus_bleu(hyps, [refs]).score, 2),
        "chrf": round(sacrebleu.corpus_chrf(hyps, [refs]).score, 2),
        "exact_match": round(exact / max(1, len(pairs)), 4),
        "sentences": len(pairs),
        "examples": [{"source": s, "reference": r, "output": h} for (s, r), h in list(zip(pairs, hyps))[:3]],
    }


def unigram_loss(train_ids: torch.Tensor, valid_ids: torch.Tensor, vocab_size: int) -> float:
    """Cross-entropy (nats/token) of ``valid_ids`` under add-one unigram frequencies of
    ``train_ids``: what a model that ignores context can do at best, roughly."""
    counts = Counter(train_ids.tolist())
    total = len(train_ids) + vocab_size
    return -sum(math.log((counts[int(t)] + 1) / total) for t in valid_ids.tolist()) / max(1, len(valid_ids))


def language_model_scores(loaded: LoadedModel, lines_train: list[str], lines_valid: list[str]) -> dict:
    """Validation loss and perplexity of a GPT, next to the unigram baseline on the same tokens."""
    from engine.training import gpt_loss_on, scored_windows, token_stream

    train, valid = token_stream(loaded, lines_train), token_stream(loaded, lines_valid)
    loss = gpt_loss_on(loaded.model, valid, loaded.device, max_windows=256)
    block, starts = scored_windows(len(valid), loaded.model.config.block_size, 256)
    used = valid[1: len(starts) * block + 1]  # exactly the targets gpt_loss_on scored
    base = unigram_loss(train, used, loaded.model.config.vocab_size)
    return {"val_loss": round(loss, 4), "perplexity": round(math.exp(loss), 2),
            "unigram_loss": round(base, 4), "unigram_perplexity": round(math.exp(base), 2),
            "val_tokens": int(len(used))}
