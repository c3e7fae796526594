"""Hugging Face tokens as people read them, the token that ends generation, the cache's name."""
from __future__ import annotations

import functools
import inspect
import re

from attnscope.engine.loading.loaded import LoadedModel
from attnscope.engine.models.tokenizer import BYTES_AS_LABELS


def readable_tokens(tokenizer, ids) -> list[str]:
    """Tokens as people read them, one per id, the same way for every tokenizer: a piece
    that starts a word is the word's text ("Ġthe", "▁the" -> "the"); a piece inside a word
    gets "##" in front, as BERT writes it ("believ" -> "##believ"); special tokens stay
    as they are. So word merging (``word_groups``) works for every model."""
    ids = [int(i) for i in ids]
    # An id past the tokenizer's vocabulary (embeddings padded to a round size, which greedy
    # decoding of a random model can pick) has no piece: it is shown by its number.
    pieces = [p if p is not None else f"<id {i}>" for i, p in zip(ids, tokenizer.convert_ids_to_tokens(ids))]
    special = special_ids(tokenizer)
    wordpiece = _marks_inner_pieces(tokenizer, pieces)
    out: list[str] = []
    # Each id's label and whether it starts a word, worked out once per text: asking the
    # tokenizer for every token's string was most of the labels' time at 32k tokens.
    labels: dict[int, tuple[str, bool]] = {}
    after_special = True
    for i, piece in zip(ids, pieces):
        piece = "" if piece is None else str(piece)
        if i in special:
            out.append(piece)
            after_special = True
            continue
        if piece.startswith("##"):
            out.append(piece)
        else:
            label = labels.get(i)
            if label is None:
                text = byte_labels(piece, tokenizer.convert_tokens_to_string([piece])) if piece else ""
                label = labels[i] = (text.strip() or ("␣" if text else piece),
                                     piece.startswith(("Ġ", "▁", " ")) or text.startswith(" "))
            text, starts_word = label
            out.append(text if starts_word or after_special or wordpiece else "##" + text)
        after_special = False
    return out


def special_ids(tokenizer) -> set[int]:
    """The tokenizer's special ids, and every added token it marks special (a chat template's
    turn marks, <|im_start|>, <|eot_id|>): shown as tokens, never as part of a word."""
    added = getattr(tokenizer, "added_tokens_decoder", None) or {}
    return set(getattr(tokenizer, "all_special_ids", []) or []) | {int(i) for i, t in added.items()
                                                                   if getattr(t, "special", False)}


def byte_labels(piece: str, text: str) -> str:
    """``text`` of one ``piece``, with every byte that is not part of a whole UTF-8 character
    written <0xNN>: a byte-fallback or byte-level piece holding part of a character (an emoji
    is four byte pieces) decodes to U+FFFD alone, drawn as a "?" box on every axis. Pieces that
    decode whole are left as they are (linear in the piece: no table lookup per text)."""
    if "\ufffd" not in text or "\ufffd" in piece:
        return visible(text)
    if _BYTE_PIECE.fullmatch(piece):                 # sentencepiece's byte fallback spells it already
        return f"<0x{piece[3:5].upper()}>"
    raw = _byte_level_bytes(piece)
    return visible(raw.decode("utf-8", errors=BYTES_AS_LABELS)) if raw is not None else text


_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")


def visible(text: str) -> str:
    """``text`` with each control character but tab and line breaks written <0xNN>, as a byte
    piece is: a vocabulary's single-byte pieces include them, and a label or an output of "\x1f"
    was drawn as an empty box."""
    return _CONTROL.sub(lambda m: f"<0x{ord(m.group()):02X}>", text)


_BYTE_PIECE = re.compile(r"<0x[0-9A-Fa-f]{2}>")


@functools.lru_cache(maxsize=1)
def _byte_level_alphabet() -> dict[str, int]:
    """Byte-level BPE's (GPT-2's) one printable character per byte, as a map back to the byte:
    printable Latin-1 bytes stand for themselves, the others for U+0100 on, in byte order."""
    kept = [*range(ord("!"), ord("~") + 1), *range(ord("¡"), ord("¬") + 1), *range(ord("®"), ord("ÿ") + 1)]
    shifted = [b for b in range(256) if b not in kept]
    return {**{chr(b): b for b in kept}, **{chr(256 + i): b for i, b in enumerate(shifted)}}


def readable_text(tokenizer, ids) -> str:
    """The tokenizer's text of ``ids`` (special tokens dropped), with every byte that makes no
    whole UTF-8 character written <0xNN>, as the axes write it: a random or small model often
    writes half a character (one byte piece of an emoji), which ``decode`` turns into U+FFFD,
    drawn as a "?" box on the output line. Text without such bytes is ``decode``'s, unchanged.

    Where a run of byte pieces sits, its bytes are joined and decoded together (pieces that make
    a character between them still read as it); every other run is the part its ids add to the
    decoded prefix, so the tokenizer's own spacing and clean-up stay."""
    ids = [int(i) for i in ids]
    decode = lambda part: tokenizer.decode(part, skip_special_tokens=True)   # noqa: E731
    text = decode(ids)
    if "\ufffd" not in text:
        return visible(text)
    pieces = [p or "" for p in tokenizer.convert_ids_to_tokens(ids)]
    raw = [_piece_bytes(p) if "\ufffd" in decode([i]) else None for i, p in zip(ids, pieces)]   # bytes of byte pieces
    out: list[str] = []
    start = 0
    while start < len(ids):
        end = start + 1
        while end < len(ids) and (raw[end] is None) == (raw[start] is None):
            end += 1
        if raw[start] is not None:
            out.append(b"".join(raw[start:end]).decode("utf-8", errors=BYTES_AS_LABELS))
        else:
            before, upto = decode(ids[:start]), decode(ids[:end])
            out.append(upto[len(before):] if upto.startswith(before) else decode(ids[start:end]))
        start = end
    return visible("".join(out))


def _piece_bytes(piece: str) -> bytes | None:
    """The bytes a byte piece stands for: sentencepiece's byte fallback (<0xE2>) or a byte-level
    piece ("ðŁ"); None for a piece of another kind."""
    if _BYTE_PIECE.fullmatch(piece):
        return bytes([int(piece[3:5], 16)])
    return _byte_level_bytes(piece)


def _byte_level_bytes(piece: str) -> bytes | None:
    """The bytes a byte-level piece ("Ġd", "ðŁ") stands for; None for a piece of another kind."""
    alphabet = _byte_level_alphabet()
    if not all(ch in alphabet for ch in piece):
        return None
    return bytes(alphabet[ch] for ch in piece)


def _marks_inner_pieces(tokenizer, pieces: list[str]) -> bool:
    """Whether a word-piece vocabulary (BERT's) marks inner pieces with "##" itself, so every
    other piece starts a word. Decided once per text, from the tokenizer's model where it has
    one (asked per token of the joined pieces, it cost T^2: 2 s of a Run at 8k tokens)."""
    if getattr(tokenizer, "do_lower_case", None) is not None:
        return True
    backend = getattr(getattr(tokenizer, "backend_tokenizer", None), "model", None)
    if backend is not None:
        return type(backend).__name__ == "WordPiece"
    return any(str(p).startswith("##") for p in pieces)


def unknown_pieces_note(tokenizer, ids, notes: list[str]) -> None:
    unk = getattr(tokenizer, "unk_token_id", None)
    n = sum(int(i) == unk for i in ids) if unk is not None else 0
    if n:
        notes.append(f"{n} piece(s) are not in the vocabulary and show as {tokenizer.unk_token}.")


def cache_field(model) -> str:
    """The name of the KV cache in a Hugging Face model's call and output: ``cache`` in recent
    transformers, ``past_key_values`` before (the old name still works there, with a
    deprecation warning, until transformers 5.40)."""
    return "cache" if "cache" in inspect.signature(model.forward).parameters else "past_key_values"


def hf_eos_id(loaded: LoadedModel) -> int | None:
    """The token that ends generation: the generation config's first, else the tokenizer's."""
    eos = getattr(getattr(loaded.model, "generation_config", None), "eos_token_id", None)
    if isinstance(eos, (list, tuple)):
        eos = eos[0] if eos else None
    return eos if eos is not None else loaded.tokenizer.eos_token_id


class HFTokens:
    """A Hugging Face tokenizer with the small interface decoding uses (tokens, decode)."""

    def __init__(self, hf_tokenizer, eos_id: int | None = None):
        self.hf, self.eos_id = hf_tokenizer, eos_id

    def tokens(self, ids) -> list[str]:
        return readable_tokens(self.hf, ids)

    @property
    def special_ids(self) -> set[int]:
        return set(getattr(self.hf, "all_special_ids", []) or [])

    def decode(self, ids) -> str:
        return readable_text(self.hf, ids)
