"""A chat template rendered in a child process with a hard memory cap and a hard deadline.

Why a process: the limits of chat_limits are checked by the template's own code (its output as it
is written, ``*`` before it is built, the clock between template lines), and one Python call inside
a single line passes them all: ``'{:>7000000000}'.format(1)`` took 7 GB, eight sorts of a 16M list
hung past 90 s, compiling a 50 MB template hung past 120 s (issue 58). A forked child whose address
space may grow at most MAX_EXTRA_BYTES (RLIMIT_AS over what it inherited) and which is killed at
HARD_SECONDS cannot pass them: whatever it does, the parent gets the rendered text or one sentence.

The child inherits the tokenizer (fork: nothing is pickled, nothing imported again; about a few
ms), renders with ``tokenize=False`` under chat_limits' in-process limits (they still give the
nicer sentence first), and writes the text to a pipe; the parent tokenizes it as transformers does
(``add_special_tokens=False``). Where fork is missing (Windows) the template runs in this process
under the in-process limits alone.
"""
from __future__ import annotations

import os
import resource
import select
import signal
import sys
import time

from attnscope.engine.adapters.chat_limits import MAX_OUTPUT_CHARS, TemplateLimit, limited_rendering

MAX_EXTRA_BYTES = 256 << 20         # the child's address space may grow this much past its parent's
HARD_SECONDS = 8.0                  # the child is killed past this, whatever line it is on
_OK, _REFUSED = b"O", b"E"
last_peak_growth: list[int] = [0]   # the last child's peak resident memory past its parent's, bytes (tests)


def _status(field: str) -> int:
    """A size from /proc/self/status ("VmSize", "VmRSS"), bytes; 0 where unknown."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith(field + ":"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return 0


def _render_here(tokenizer, messages, lock: bool = True) -> str:
    """The template's text, rendered in this process under chat_limits' limits."""
    with limited_rendering(lock=lock):
        text = tokenizer.apply_chat_template(messages, add_generation_prompt=True, tokenize=False)
    if not isinstance(text, str):
        raise TemplateLimit(f"it wrote a {type(text).__name__}, not text")
    return text


def _said(exc: BaseException) -> str:
    """A child's failure as the clause after "was stopped: " or "could not write this chat"."""
    if isinstance(exc, TemplateLimit):
        return f"E{exc}"
    if isinstance(exc, MemoryError):
        return f"Eit needed more than {MAX_EXTRA_BYTES >> 20} MB"
    if isinstance(exc, RecursionError):
        return "Eit nests too deep (its blocks, macros or values recurse past Python's limit)"
    first = (str(exc).strip().splitlines() or [type(exc).__name__])[0][:160]
    return f"F{first}"


def _child(tokenizer, messages, out_fd: int) -> None:
    """In the fork: cap the address space, render, write b'O'+text or b'E'/b'F'+sentence, exit."""
    try:
        size = _status("VmSize")
        if size:
            resource.setrlimit(resource.RLIMIT_AS, (size + MAX_EXTRA_BYTES, resource.RLIM_INFINITY))
        sys.setrecursionlimit(min(sys.getrecursionlimit(), 3000))
        try:
            payload = _OK + _render_here(tokenizer, messages, lock=False).encode("utf-8", "surrogatepass")
        except BaseException as exc:  # noqa: BLE001 - the template's author's code: said, never raised
            payload = _said(exc).encode("utf-8", "replace")
        view = memoryview(payload)
        while view:
            view = view[os.write(out_fd, view):]
    finally:
        os._exit(0)


def render(tokenizer, messages) -> str:
    """The chat's text as ``tokenizer``'s template writes it (generation prompt added), rendered
    in a capped child; TemplateLimit (a limit passed) or ValueError (the template failed: its first
    line) in one sentence."""
    if not hasattr(os, "fork") or sys.platform == "win32":
        return _render_here(tokenizer, messages)
    read_fd, write_fd = os.pipe()
    base = _status("VmRSS")
    pid = os.fork()
    if pid == 0:                                        # the child never returns
        os.close(read_fd)
        _child(tokenizer, messages, write_fd)
    os.close(write_fd)
    chunks, size, killed = [], 0, False
    end = time.monotonic() + HARD_SECONDS
    limit = 4 * MAX_OUTPUT_CHARS + 1024                 # utf-8 of the largest text allowed
    try:
        while True:
            left = end - time.monotonic()
            if left <= 0 or size > limit:
                killed = True
                break
            ready, _, _ = select.select([read_fd], [], [], left)
            if not ready:
                continue
            chunk = os.read(read_fd, 1 << 20)
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
    finally:
        os.close(read_fd)
        if killed:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        _, status, usage = os.wait4(pid, 0)
        last_peak_growth[0] = max(0, usage.ru_maxrss * 1024 - base)
    if killed:
        if size > limit:
            raise TemplateLimit(f"it writes more than {MAX_OUTPUT_CHARS:,} characters")
        raise TemplateLimit(f"it ran longer than {HARD_SECONDS:g} s")
    data = b"".join(chunks)
    if not data:                                        # killed by the kernel, or crashed in C
        raise TemplateLimit(f"its process ended without an answer (signal {os.WTERMSIG(status)})"
                            if os.WIFSIGNALED(status) else
                            f"it needed more than {MAX_EXTRA_BYTES >> 20} MB")
    text = data[1:].decode("utf-8", "surrogatepass" if data[:1] == _OK else "replace")
    if data[:1] == _OK:
        return text
    if data[:1] == _REFUSED:
        raise TemplateLimit(text)
    raise ValueError(text)
