"""How good is a trained model: BLEU and chrF for the translator, loss against a unigram
baseline for the GPT. The numbers go into the checkpoint and docs/models.md.

Why sacrebleu: it is the reference implementation of BLEU and chrF, with a fixed
tokenisation, so the scores mean the same as in papers.
"""
from __future__ import annotations

import math
from collections import Counter

import torch

from attnscope.engine.corpora.german import handwritten_pairs
from attnscope.engine.inspection.analysis import mechanism_scores
from attnscope.engine.loading.loaded import LoadedModel
from attnscope.engine.models.outputs import DECODER_SELF
from attnscope.engine.models.tokenizer import raw_pieces
from attnscope.engine.inputs import check_kind


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
        memory, src_mask = model.encode(src, src_keep=keep)
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


def translation_scores(loaded: LoadedModel, pairs: list[tuple[str, str]], limit: int | None = None,
                       constructions: list[str] | None = None) -> dict:
    """BLEU and chrF (sacrebleu) of greedy translations against the references; with
    ``constructions`` (a label per pair), also BLEU per construction."""
    check_kind(loaded, LoadedModel, "loaded", "a LoadedModel (engine.loading.open_model)")
    check_kind(pairs, (list, tuple), "pairs", "a list of (source, target) pairs")
    import sacrebleu

    pairs = pairs[:limit] if limit else pairs
    hyps = [loaded.tgt_tokenizer.decode(ids) for ids in greedy_translate(loaded, [s for s, _ in pairs])]
    refs = [t for _, t in pairs]
    exact = sum(h.split() == loaded.tgt_tokenizer.decode(loaded.tgt_tokenizer.encode(r)).split() for h, r in zip(hyps, refs))
    scores = {
        "bleu": round(sacrebleu.corpus_bleu(hyps, [refs]).score, 2),
        "chrf": round(sacrebleu.corpus_chrf(hyps, [refs]).score, 2),
        "exact_match": round(exact / max(1, len(pairs)), 4),
        "sentences": len(pairs),
        "examples": [{"source": s, "reference": r, "output": h} for (s, r), h in list(zip(pairs, hyps))[:3]],
    }
    if constructions is not None:
        groups: dict[str, list[int]] = {}
        for i, label in enumerate(constructions[: len(pairs)]):
            groups.setdefault(label, []).append(i)
        scores["by_construction"] = {
            label: {"bleu": round(sacrebleu.corpus_bleu([hyps[i] for i in idx], [[refs[i] for i in idx]]).score, 2),
                    "sentences": len(idx)} for label, idx in groups.items()}
    return scores


def translator_report(loaded: LoadedModel, splits: dict, limit: int | None = None, corpus: str | None = None) -> dict:
    """What ``attnscope train`` records and ``attnscope eval`` prints for a translator: the
    test split (per held-out construction where the split has them) and, for the synthetic
    corpus, the hand-written sentences."""
    check_kind(loaded, LoadedModel, "loaded", "a LoadedModel (engine.loading.open_model)")
    check_kind(splits, dict, "splits", "a dict of named pair lists")
    scores = translation_scores(loaded, splits["test"], limit, splits.get("constructions"))
    if corpus is None:
        hand = translation_scores(loaded, handwritten_pairs())
        scores["handwritten"] = {k: hand[k] for k in ("bleu", "chrf", "exact_match", "sentences")}
    return scores


def unigram_loss(train_ids: torch.Tensor, valid_ids: torch.Tensor, vocab_size: int) -> float:
    """Cross-entropy (nats/token) of ``valid_ids`` under add-one unigram frequencies of
    ``train_ids``: what a model that ignores context can do at best, roughly."""
    counts = Counter(train_ids.tolist())
    total = len(train_ids) + vocab_size
    return -sum(math.log((counts[int(t)] + 1) / total) for t in valid_ids.tolist()) / max(1, len(valid_ids))


def language_model_scores(loaded: LoadedModel, lines_train: list[str], lines_valid: list[str]) -> dict:
    """Validation loss and perplexity of a GPT, next to the unigram baseline on the same tokens."""
    check_kind(loaded, LoadedModel, "loaded", "a LoadedModel (engine.loading.open_model)")
    from attnscope.engine.training.loops import gpt_loss_on, scored_windows, token_stream

    train, valid = token_stream(loaded, lines_train), token_stream(loaded, lines_valid)
    loss = gpt_loss_on(loaded.model, valid, loaded.device, max_windows=256)
    block, starts = scored_windows(len(valid), loaded.model.config.block_size, 256)
    used = valid[1: len(starts) * block + 1]  # exactly the targets gpt_loss_on scored
    base = unigram_loss(train, used, loaded.model.config.vocab_size)
    chars = characters(loaded.tokenizer, used.tolist())
    return {"val_loss": round(loss, 4), "perplexity": round(math.exp(loss), 2),
            "unigram_loss": round(base, 4), "unigram_perplexity": round(math.exp(base), 2),
            "val_tokens": int(len(used)), "val_chars": chars,
            "val_loss_per_char": round(loss * len(used) / max(1, chars), 4), **best_heads(loaded)}


def best_heads(loaded: LoadedModel) -> dict:
    """The strongest induction and previous-token head of a GPT (engine.inspection.analysis), as
    {"induction_head": {"layer", "head", "score"}, "previous_token_head": {...}}."""

    was_training = loaded.model.training
    loaded.model.eval()
    scores = mechanism_scores(loaded).get(DECODER_SELF, {})
    loaded.model.train(was_training)
    out = {}
    for name, key in (("induction", "induction_head"), ("previous", "previous_token_head")):
        if name in scores:
            layer, head = (int(i) for i in divmod(int(scores[name].argmax()), scores[name].shape[1]))
            out[key] = {"layer": layer, "head": head, "score": round(float(scores[name][layer, head]), 4)}
    return out


def characters(tokenizer, ids: list[int]) -> int:
    """How many characters of text ``ids`` stand for, spaces included and a line end for
    each [EOS]: the denominator of a per-character loss, comparable with a character-level
    model's (nanoGPT's shakespeare_char)."""

    eos = getattr(tokenizer, "eos_id", None)
    unique = sorted(set(ids))
    counts = {i: 1 if i == eos or (t.startswith("<0x") and t.endswith(">")) else len(t)
              for i, t in zip(unique, raw_pieces(tokenizer, unique))}
    return sum(counts[i] for i in ids)
