"""What users type, checked and cut the same way for every model.

Empty text is refused with a clear message; a text longer than the model takes is cut (a
source keeps its beginning, a decoder's prompt its end: the continuation follows the end)
and a note says so once; words the vocabulary lacks are listed once each. No torch here.
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

_F = TypeVar("_F")                 # a callback handed back as given (check_callback)
MAX_TEXT_FILE_BYTES = 16 << 20     # a long context: 16 MB of text is millions of tokens


class InputError(ValueError):
    """A problem with the text a user gave, worded for the user."""

    def __str__(self) -> str:       # one line whatever was quoted (engine.errors.OneLine: the same rule)
        return " ".join(line.strip() for line in super().__str__().splitlines() if line.strip())


# ---- the engine's doors for values that are not texts: one sentence for a script's slip --------
def check_count(value, what: str, least: int = 1) -> int:
    """``value`` as a whole number of at least ``least`` (``what``: "k (the tokens to show)"), or
    InputError in one sentence: -1 reached torch as 'selected index k out of range'."""
    if isinstance(value, bool) or not isinstance(value, int) or value < least:
        raise InputError(f"The argument {what} must be a whole number from {least}, not {value!r:.40}.")
    return value


def check_callback(fn: _F, what: str) -> _F:
    """``fn`` when it is None or can be called (``what``: "stop", "report"), else InputError."""
    if fn is not None and not callable(fn):
        raise InputError(f"The argument {what} must be a function to call (or None), not {fn!r:.40}.")
    return fn


def check_kind(value, types, what: str, expected: str):
    """``value`` when it is one of ``types``, else InputError: "The argument {what} must be
    {expected}, not ..." (a script's None reached attribute errors deep inside)."""
    if not isinstance(value, types) or (isinstance(value, bool) and bool not in (types if isinstance(types, tuple)
                                                                                 else (types,))):
        shown = " ".join(repr(value).split())          # one line: a tensor's repr has several
        raise InputError(f"The argument {what} must be {expected}, not {shown:.40}.")
    return value


MAX_NAME_BYTES, MAX_PATH_BYTES = 255, 4096        # what Linux, macOS and Windows file systems take at most


def too_long(path, what: str) -> str | None:
    """One sentence when ``path`` is longer than a file system takes (a part past 255 bytes, the
    whole past 4,096): the OS said a raw "[Errno 36] File name too long" or, where a check called
    exists() first, a traceback (issue 58); None when it fits."""
    text = os.fspath(path) if isinstance(path, (str, os.PathLike)) else ""
    try:
        longest = max((len(os.fsencode(part)) for part in Path(text).parts), default=0)
        whole = len(os.fsencode(text))
    except (UnicodeError, ValueError):
        return f"The name of the {what} cannot be written as a file name on this system."
    if longest > MAX_NAME_BYTES or whole > MAX_PATH_BYTES:
        return (f"The name of the {what} is too long for the file system ({whole:,} bytes, a part of {longest:,}; at most "
                f"{MAX_NAME_BYTES} a part and {MAX_PATH_BYTES:,} in all): give a shorter one.")
    return None


def check_path(path, what: str) -> Path:
    """``path`` as a Path when it is a non-empty str or path that fits a file system, else
    InputError naming ``what``."""
    if isinstance(path, bytes) or not isinstance(path, (str, Path)) or not str(path).strip():
        raise InputError(f"The {what} is a path to a file, not {path!r:.40}.")
    said = too_long(path, what)
    if said:
        raise InputError(said)
    return Path(path)


def read_utf8(path: str | Path, what: str = "text file", limit: int = MAX_TEXT_FILE_BYTES) -> str:
    """The text of a user's file (a text to run, a corpus, a pairs file); InputError (a
    ValueError) with a message if it is missing, not a regular file (a pipe or a device would
    never end), larger than ``limit`` bytes, or not UTF-8."""
    path = check_path(path, what)
    if not path.is_file():
        raise InputError(f"No such {what}: {path}" if not path.exists() else f"{path} is not a regular {what}.")
    size = path.stat().st_size
    if size > limit:
        raise InputError(f"{path.name} is {size / (1 << 20):,.0f} MiB; a {what} may be at most "
                         f"{limit >> 20} MiB. Use a sample of it.")
    try:
        return path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(f"{path.name} is not UTF-8 text (byte {exc.start}); save it as UTF-8 and try again.") from None


CHAT_ROLES = ("system", "user", "assistant")


@dataclass(frozen=True)
class Chat:
    """A prompt typed as a chat: (role, content) turns, system and user, which an instruction-
    tuned model reads through its tokenizer's own chat template with the start of the reply
    added (engine.adapters.chat), not as plain text. Passed wherever a text is."""
    turns: tuple[tuple[str, str], ...]

    @classmethod
    def of(cls, user: str, system: str | None = None) -> "Chat":
        return cls(((("system", system),) if system else ()) + (("user", user),))

    @property
    def messages(self) -> list[dict]:
        """The turns as a chat template reads them."""
        return [{"role": role, "content": content} for role, content in self.turns]

    def __str__(self) -> str:
        """The words typed (for notes and lists of unknown words), without the template."""
        return "\n".join(content for _, content in self.turns)


def check_chat(chat, what: str = "run") -> Chat:
    """``chat`` with each turn checked as a text; InputError in one sentence otherwise."""
    turns = getattr(chat, "turns", None)
    if not isinstance(turns, tuple) or not turns or not all(isinstance(t, tuple) and len(t) == 2 for t in turns):
        raise InputError(f"The chat to {what} should be turns of (role, text), user last.")
    roles = [role for role, _ in turns]
    if any(role not in CHAT_ROLES for role in roles) or roles[-1] != "user":
        raise InputError(f"The chat to {what} has turns {', '.join(map(repr, roles))}; a turn is "
                         f"{', '.join(CHAT_ROLES)}, and the last is the user's.")
    for role, content in turns[:-1]:      # a blank system turn is that turn's fault, not the text's
        if isinstance(content, str) and not content.strip():
            raise InputError(f"The chat's {role} turn is blank: give it words, or leave it out.")
    return Chat(tuple((role, check_text(content, what)) for role, content in turns))


def check_text(text: str, what: str = "run") -> str:
    """``text`` stripped, or InputError in one sentence: the engine's one door for text, so a
    script that calls it gets the CLI's and the window's refusals (no text, bytes that are not
    UTF-8, lone surrogates, something that is not text at all). A Chat has each turn checked."""
    if isinstance(text, Chat):
        return check_chat(text, what)   # pyright: ignore[reportReturnType]  (a Chat passes as text)
    if isinstance(text, (bytes, bytearray)):
        try:
            text = bytes(text).decode("utf-8")
        except UnicodeDecodeError as exc:
            raise InputError(f"The text to {what} is not valid UTF-8 (byte 0x{text[exc.start]:02x} at "
                             f"byte {exc.start + 1}); pass UTF-8 text.") from None
    elif text is not None and not isinstance(text, str):
        raise InputError(f"The text to {what} should be a string, not {type(text).__name__}.")
    problem = text_problem(text or "")
    if problem:
        raise InputError(f"Cannot {what} this text: {problem}.")
    text = (text or "").strip()
    if not text:
        raise InputError(f"There is no text to {what}: type a sentence first.")
    return text


def check_optional_text(text, what: str) -> str | None:
    """A second text that may be absent (a target prefix, a second sentence): None when it is
    absent or blank, else ``check_text``'s answer: lone surrogates or bytes that are not UTF-8
    are refused in one sentence at the engine's door, as the first text's are."""
    if text is None or (isinstance(text, str) and not text.strip()):
        return None
    if isinstance(text, Chat):
        raise InputError(f"The {what} is a plain text, not a chat.")
    try:
        checked = check_text(text)
    except InputError as exc:
        raise InputError(f"The {what} cannot be used: {str(exc)[0].lower()}{str(exc)[1:]}") from None
    return text if isinstance(text, str) else checked     # a text's own spaces kept: a tokenizer reads them


@dataclass(frozen=True)
class Prompt:
    """One Run's request as the user typed it, checked once here: the text (a str, or a Chat for
    an instruct model), the encoder-decoder's ``target`` prefix and the encoder's ``pair``
    (segment B). Made only through ``Prompt.of``, so every entry point reads a checked one and
    never reopens the door (engine.adapters.Adapter.prepare frames it once for a model)."""
    text: "str | Chat"
    target: str | None = None
    pair: str | None = None

    @classmethod
    def of(cls, text, target=None, pair=None, what: str = "run") -> "Prompt":
        """The checked Prompt, or InputError in one sentence (no text, bytes that are not UTF-8,
        a chat whose turns are wrong, a target or pair that is not text)."""
        if isinstance(text, Prompt):      # its own target and pair: one beside it would be lost, so refused
            if any(isinstance(x, str) and x.strip() for x in (target, pair)):
                raise InputError("A Prompt carries its own target and pair: give them to Prompt.of, not beside it.")
            return text
        return cls(check_text(text, what), check_optional_text(target, "target prefix"),
                   check_optional_text(pair, "second sentence"))

    @property
    def chat(self) -> bool:
        """Whether the text is a chat (read through the model's chat template)."""
        return isinstance(self.text, Chat)


CHARS_A_TOKEN = 64   # more characters than any token here spans (a long run of spaces, a URL's piece: ~20)


def within_reach(text: str, tokens: int, notes: list[str], end: bool) -> str:
    """The part of ``text`` a model reading ``tokens`` tokens can reach, cut before it is
    tokenized: its last (``end``: a decoder's prompt) or first CHARS_A_TOKEN x ``tokens``
    characters, more than those tokens can span. A 15 MiB file was tokenized whole (4.5-5.2 GB,
    25-87 s) for a model that reads 255 tokens; now its reach is, and ``notes`` says so."""
    most = max(1, tokens) * CHARS_A_TOKEN
    if not isinstance(text, str) or len(text) <= most:
        return text
    notes.append(f"The text is {len(text):,} characters; only its {'last' if end else 'first'} {most:,} (more than "
                 f"the model's {tokens:,} tokens can hold) were read.")
    return text[-most:] if end else text[:most]


def keep_start(ids: list[int], limit: int, notes: list[str], what: str = "input") -> list[int]:
    """The first ``limit`` ids (a source, an encoder's text), said in ``notes`` when cut."""
    if len(ids) > limit:
        notes.append(f"The {what} has {len(ids)} tokens; the model takes {limit}, so it was truncated to the "
                     f"first {limit}.")
        return ids[:limit]
    return ids


def keep_end(ids: list[int], limit: int, notes: list[str], lead: list[int] = (), reads: int | None = None) -> list[int]:
    """``lead`` (the specials a prompt starts with, e.g. BOS), then the last ids of a decoder's
    prompt that fit in ``limit`` tokens in all, said in ``notes`` when cut: a continuation
    follows the end, so the Run's heads and decoding show the same tokens. ``reads``: the
    model's context when ``limit`` leaves room for what decoding adds."""
    lead = list(lead)
    total = len(lead) + len(ids)
    if total > limit:
        notes.append(f"The prompt has {total} tokens and the model reads at most {reads or limit}, so it was truncated "
                     f"to its last {limit}: a continuation follows the end.")
        return lead + ids[len(ids) - (limit - len(lead)):]
    return lead + ids


def unknown_words(tokenizer, text: str) -> list[str] | None:
    """The pieces of ``text`` ``tokenizer`` has no token for, each once, in order of first
    appearance; None for a tokenizer that cannot tell."""
    find = getattr(tokenizer, "unknown_words", None)
    return list(dict.fromkeys(find(text))) if callable(find) else None


def unknown_note(tokenizer, text: str, notes: list[str]) -> None:
    unknown = unknown_words(tokenizer, text)
    if unknown:
        shown = ", ".join(repr(u) for u in unknown[:8]) + (" ..." if len(unknown) > 8 else "")
        notes.append(f"Not in this model's vocabulary (shown as [UNK]): {shown}")


def text_problem(text: str) -> str | None:
    """Why ``text`` cannot go to a tokenizer (None when it can): text that is not valid Unicode,
    as invalid UTF-8 bytes on a command line arrive (lone surrogates)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        ch = text[exc.start]
        if 0xDC80 <= ord(ch) <= 0xDCFF:
            return (f"the text is not valid UTF-8 (byte 0x{ord(ch) - 0xDC00:02x} at character {exc.start + 1}); "
                    "pass UTF-8 text")
        return f"the text holds a lone surrogate (U+{ord(ch):04X} at character {exc.start + 1}); pass valid Unicode text"
    return None
