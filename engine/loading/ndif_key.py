"""The NDIF API key checked before anything is sent with it, and the hosts it may go to.

Why here, below engine.remote: the window's settings (gui), the ``NDIF_API_KEY`` variable
(engine.loading.remote_source) and a remote job (engine.remote) all hand the key on; a key holding
CR/LF was put into the websocket handshake as is and a stand-in host logged the injected header
line, a 1 MB key and a key of spaces were accepted (issue 58). So one function says what a key may
be, and one where it may go; each refusal is one sentence that never quotes the key.
"""
from __future__ import annotations

import os
import string
from urllib.parse import urlsplit

from attnscope.engine.errors import RemoteJobError
from attnscope.engine.inputs import InputError

MAX_KEY_CHARS = 512                 # NDIF's keys are tens of characters; a header line is not a file
HOST_VARIABLE = "NDIF_HOST"         # nnsight's own variable: a host the user asked for by name
_ALLOWED = frozenset(string.ascii_letters + string.digits + string.punctuation)


def checked_key(key, where: str = "File > NDIF API Key…") -> str | None:
    """``key`` without the blanks around it; None when there is none (None, empty or only blanks:
    "no key is set"); InputError in one sentence when it holds a control, non-ASCII or inner blank
    character, or is longer than MAX_KEY_CHARS. ``where`` names where the key came from."""
    if key is None:
        return None
    if not isinstance(key, str):
        raise InputError(f"The NDIF API key in {where} is text, not a {type(key).__name__}.")
    key = key.strip(" \t")
    if not key:
        return None
    if len(key) > MAX_KEY_CHARS:
        raise InputError(f"The NDIF API key in {where} is {len(key):,} characters long, past the {MAX_KEY_CHARS} a "
                         "key can be: paste the key alone (from https://login.ndif.us).")
    bad = next((c for c in key if c not in _ALLOWED), None)
    if bad is not None:
        what = ("a line break" if bad in "\r\n" else "a blank" if bad.isspace() else
                "a control character" if ord(bad) < 32 or ord(bad) == 127 else "a character that is not ASCII")
        raise InputError(f"The NDIF API key in {where} holds {what} (U+{ord(bad):04X}), which no key has: paste the "
                         "key alone, on one line (from https://login.ndif.us).")
    return key


def key_may_go(host) -> None:
    """RemoteJobError unless the key may be sent to ``host`` (nnsight's ``CONFIG.API.HOST``):
    https, or plain http only to the host the user named in NDIF_HOST."""
    host = str(host or "").strip()
    scheme = urlsplit(host).scheme.lower() if "://" in host else ""
    if scheme in ("https", "wss"):
        return
    if scheme in ("http", "ws") and host.rstrip("/") == os.environ.get(HOST_VARIABLE, "").strip().rstrip("/"):
        return
    raise RemoteJobError(f"The NDIF host {host[:200] or '(none)'} is not https, so the API key is not sent there: "
                         f"use https, or name that host yourself in {HOST_VARIABLE}.")
