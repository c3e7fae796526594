"""Tokenizers for the from-scratch models, trained with Hugging Face ``tokenizers``.

Why the library: its trainers and JSON format are standard, fast and well tested, and the
JSON goes into a checkpoint's metadata as-is, so a checkpoint is one self-contained file.
Two kinds: word-level (one token per word, so heatmap axes read as words; used for the
synthetic translation corpus) and BPE (open vocabulary; used for GPT on free text).
The special tokens come first, at fixed ids, in every tokenizer this module makes.
"""
from __future__ import annotations

import codecs
import json
import re
import unicodedata
from typing import Iterable

from tokenizers import Tokenizer as HFTokenizer
from tokenizers import decoders, models, normalizers, pre_tokenizers, trainers

PAD, UNK, BOS, EOS, CLS, SEP, MASK = "[PAD]", "[UNK]", "[BOS]", "[EOS]", "[CLS]", "[SEP]", "[MASK]"
SPECIALS = [PAD, UNK, BOS, EOS, CLS, SEP, MASK]

_SPACE_BEFORE_PUNCT = re.compile(r" ([.,!?;:)\]}'])")
_SPACE_AFTER_OPEN = re.compile(r"([(\[{]) ")


def _byte_token(byte: int) -> str:
    """The token a byte-fallback BPE uses for one UTF-8 byte (sentencepiece's spelling)."""
    return f"<0x{byte:02X}>"


# ``bytes.decode(errors=BYTES_AS_LABELS)``: a byte that is no whole UTF-8 character reads <0xNN>,
# as it does on the axes, where "replace" would draw U+FFFD, a "?" box.
BYTES_AS_LABELS = "attnscope-byte-labels"
codecs.register_error(BYTES_AS_LABELS, lambda e: ("".join(map(_byte_token, e.object[e.start:e.end])), e.end))


class Tokenizer:
    """A thin, explicit wrapper: ids without specials from ``encode``; the models add BOS/EOS."""

    def __init__(self, hf: HFTokenizer):
        self.hf = hf
        for tok in SPECIALS:
            if hf.token_to_id(tok) is None:
                raise ValueError(f"tokenizer lacks the special token {tok}")
        self.kind = "bpe" if isinstance(hf.model, models.BPE) else "word"

    # ---- training ------------------------------------------------------------------
    @classmethod
    def train_word_level(cls, texts: Iterable[str], min_frequency: int = 1, lowercase: bool = False) -> "Tokenizer":
        """``lowercase``: the corpus is written in lower case, so input is read that way too
        (``corpus_style``), inside the tokenizer: it travels with the checkpoint."""
        hf = HFTokenizer(models.WordLevel(unk_token=UNK))
        hf.normalizer = corpus_style() if lowercase else normalizers.NFC()
        hf.pre_tokenizer = pre_tokenizers.Whitespace()
        trainer = trainers.WordLevelTrainer(special_tokens=SPECIALS, min_frequency=min_frequency)
        hf.train_from_iterator(texts, trainer=trainer)
        return cls(hf)

    @classmethod
    def train_bpe(cls, texts: Iterable[str], vocab_size: int = 2000) -> "Tokenizer":
        """Cased BPE with byte fallback: a character the training text never had becomes its
        UTF-8 bytes (``<0xC3>`` ``<0xA9>``), never [UNK], so any typed text runs and decodes
        back exactly. The 256 byte tokens come after the learned ones."""
        hf = HFTokenizer(models.BPE(unk_token=UNK))
        hf.normalizer = normalizers.NFC()
        hf.pre_tokenizer = pre_tokenizers.Metaspace()
        hf.decoder = decoders.Metaspace()
        trainer = trainers.BpeTrainer(vocab_size=vocab_size, special_tokens=SPECIALS, min_frequency=2)
        hf.train_from_iterator(texts, trainer=trainer)
        spec = json.loads(hf.to_str())
        vocab = spec["model"]["vocab"]
        for byte in range(256):
            vocab.setdefault(_byte_token(byte), len(vocab))
        spec["model"]["byte_fallback"] = True
        spec["decoder"] = {"type": "Sequence", "decoders": [{"type": "ByteFallback"}, spec["decoder"]]}
        return cls(HFTokenizer.from_str(json.dumps(spec)))

    # ---- serialisation -------------------------------------------------------------
    def to_json(self) -> str:
        return self.hf.to_str()

    @classmethod
    def from_json(cls, text: str) -> "Tokenizer":
        return cls(HFTokenizer.from_str(text))

    # ---- use -------------------------------------------------------------------------
    @property
    def vocab_size(self) -> int:
        return self.hf.get_vocab_size()

    @property
    def id_bound(self) -> int:
        """One past the largest id this tokenizer can give: the embedding rows a model needs
        (more than ``vocab_size`` when a file's ids leave gaps)."""
        return max(self.hf.get_vocab(with_added_tokens=True).values(), default=-1) + 1

    def token_id(self, token: str) -> int:
        i = self.hf.token_to_id(token)
        return self.unk_id if i is None else i

    pad_id = property(lambda self: self.hf.token_to_id(PAD))
    unk_id = property(lambda self: self.hf.token_to_id(UNK))
    bos_id = property(lambda self: self.hf.token_to_id(BOS))
    eos_id = property(lambda self: self.hf.token_to_id(EOS))
    cls_id = property(lambda self: self.hf.token_to_id(CLS))
    sep_id = property(lambda self: self.hf.token_to_id(SEP))
    mask_id = property(lambda self: self.hf.token_to_id(MASK))

    @property
    def special_ids(self) -> set[int | None]:     # None: a special this vocabulary lacks
        return {self.hf.token_to_id(t) for t in SPECIALS}

    def encode(self, text: str) -> list[int]:
        """Token ids of ``text``, without special tokens."""
        return self.hf.encode(text, add_special_tokens=False).ids

    def tokens(self, ids: Iterable[int]) -> list[str]:
        """The tokens of ``ids`` as people read them: word-level tokens are words; BPE pieces
        are written as BERT writes word pieces (a piece starting a word, "▁the", is "the";
        a piece inside a word is "##piece"), so axes never show tokenizer markers and word
        merging works the same for every model (engine.traces.words.word_groups)."""
        pieces = [self.hf.id_to_token(int(i)) or UNK for i in ids]
        if self.kind != "bpe":
            return pieces
        specials = set(SPECIALS)
        out, after_special = [], True
        for piece in pieces:
            if piece in specials:
                out.append(piece)
                after_special = True
                continue
            if piece.startswith("▁"):
                out.append(piece[1:] or "␣")
            else:
                out.append(piece if after_special else "##" + piece)
            after_special = False
        return out

    def decode(self, ids: Iterable[int]) -> str:
        """Text of ``ids``, special tokens dropped."""
        specials = self.special_ids
        kept = [int(i) for i in ids if int(i) not in specials]
        if self.kind == "bpe":
            return self.hf.decode(kept)
        text = " ".join(self.tokens(kept))
        return _SPACE_AFTER_OPEN.sub(r"\1", _SPACE_BEFORE_PUNCT.sub(r"\1", text))

    def unknown_words(self, text: str) -> list[str]:
        """Pieces of ``text`` that map to [UNK] (for a clear note in the GUI)."""
        enc = self.hf.encode(text, add_special_tokens=False)
        return [text[a:b] for (a, b), i in zip(enc.offsets, enc.ids) if i == self.unk_id]


    def normalise(self, text: str) -> str:
        """``text`` as the tokenizer reads it (its normalizer applied)."""
        return self.hf.normalizer.normalize_str(text) if self.hf.normalizer else text


def corpus_style() -> normalizers.Normalizer:
    """How the synthetic translation corpus is written: lower case, and "n't" spelt out
    ("doesn't" -> "does not", "can't" -> "cannot"), so "The dog doesn't sleep." reads as the
    corpus's "the dog does not sleep ." (the pre-tokenizer splits off the punctuation)."""
    return normalizers.Sequence([normalizers.NFC(), normalizers.Lowercase(), normalizers.Replace("’", "'"),
                                 normalizers.Replace("can't", "cannot"), normalizers.Replace("can not", "cannot"),
                                 normalizers.Replace("n't", " not")])


def normalisation_note(tokenizer, text: str) -> str | None:
    """A note for a trace when the tokenizer reads ``text`` differently from how it was typed
    (for engine.traces.tracing), e.g. "The dog doesn't sleep." read as "the dog does not sleep."."""
    normalise = getattr(tokenizer, "normalise", None)
    if normalise is None:
        return None
    read = normalise(text)
    if read == unicodedata.normalize("NFC", text):
        return None
    return f"Read as the training corpus is written (lower case, n't spelt out): {read!r}"


class ByteTokenizer:
    """Text as UTF-8 bytes, id = byte value: the stand-in for checkpoints that carry no
    tokenizer (nanoGPT's ckpt.pt). Bytes the model's vocabulary lacks become [UNK] notes."""

    kind = "byte"
    pad_id = unk_id = bos_id = eos_id = cls_id = sep_id = mask_id = None
    special_ids: set = set()

    def __init__(self, vocab_size: int):
        self._vocab_size = vocab_size

    @property
    def vocab_size(self) -> int:
        return self._vocab_size

    id_bound = vocab_size

    def encode(self, text: str) -> list[int]:
        return [b for b in text.encode("utf-8") if b < self._vocab_size]

    def tokens(self, ids: Iterable[int]) -> list[str]:
        """One byte each: an ASCII character as itself; a byte of a longer UTF-8 character is
        no character on its own, so it reads <0xNN> (as a byte-fallback piece does), not "?"."""
        return [chr(int(i)) if int(i) < 0x80 else _byte_token(int(i)) if int(i) < 256 else f"<{int(i)}>" for i in ids]

    def decode(self, ids: Iterable[int]) -> str:
        return bytes(int(i) for i in ids if int(i) < 256).decode("utf-8", errors=BYTES_AS_LABELS)

    def unknown_words(self, text: str) -> list[str]:
        return [ch for ch in text if any(b >= self._vocab_size for b in ch.encode("utf-8"))]


def raw_pieces(tokenizer, ids) -> list[str]:
    """The vocabulary's own spelling of ``ids`` ("▁the", "<0xC3>"), not the display form."""
    hf = getattr(tokenizer, "hf", None)
    if hf is None:
        return tokenizer.tokens(ids)
    if hasattr(hf, "id_to_token"):                           # a tokenizers.Tokenizer (ours)
        return [hf.id_to_token(int(i)) or "" for i in ids]
    return [p or "" for p in hf.convert_ids_to_tokens([int(i) for i in ids])]   # a transformers tokenizer
