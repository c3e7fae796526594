"""Writing files safely: every file attnscope writes goes through ``atomic_path``.

Why: a kill, a full disk or an exception half-way through a write must never leave a
0-byte or half-written file under the real name, nor destroy the good file that was there.
So the writer gets a temporary name in the same folder (same file system, so the final
rename is atomic), the temporary is removed on any failure, and the finished file gets
the permissions the user's umask gives a new file (a temporary from ``mkstemp`` is 0600).

A process killed outright (SIGKILL, a power cut) cannot remove its temporary. The
temporary's name carries the writer's process id (``.NAME.PID.XXXX.partEXT``), so the next
write of the same file removes those whose writer no longer runs; a writer that still runs,
in this process or another, keeps its own.

Reading goes the other way: a file from outside is checked before it is read
(``check_regular_file``; ``check_archive``: a zip that would expand to far more than its size
is refused, and so is one whose content would not fit in memory), and ``open_npz`` opens an
.npz (an export, a time-lapse) with every problem said as one ValueError that names the file.
"""
from __future__ import annotations

import contextlib
import os
import re
import tempfile
import threading
import zipfile
from pathlib import Path
from typing import Iterator

import numpy as np

from attnscope.engine.errors import ModelLoadError
from attnscope.engine.inputs import InputError, check_path
from attnscope.engine.runtime.free_memory import check_memory, gib


def _umask_mode() -> int:
    """The mode a new file gets under this process's umask, read without setting the umask: the
    old ``os.umask(0)`` then back left, for a moment, every file another thread of the window
    created world-writable (issue 58). Linux says the umask in /proc; elsewhere a probe file in
    the temp folder, created 0666, shows what the umask leaves."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("Umask:"):
                    return 0o666 & ~int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    probe = os.path.join(tempfile.gettempdir(), f".attnscope-umask-{os.getpid()}-{threading.get_ident()}")
    try:
        os.close(os.open(probe, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666))
        return os.stat(probe).st_mode & 0o777
    except OSError:
        return 0o644                              # the common umask 022, when nothing can tell
    finally:
        with contextlib.suppress(OSError):
            os.unlink(probe)


def _running(pid: int) -> bool:
    try:
        os.kill(pid, 0)          # signal 0: only asks whether the process exists
    except ProcessLookupError:
        return False
    except PermissionError:      # it exists, under another user
        return True
    return True


def remove_stale_temporaries(path: str | Path) -> list[Path]:
    """Remove the temporaries that killed writers of ``path`` left beside it; return them."""
    path = Path(path)
    pattern = re.compile(rf"^\.{re.escape(path.name)}\.(\d+)\.[^.]+\.part")
    removed = []
    with contextlib.suppress(OSError):
        for candidate in path.parent.iterdir():
            match = pattern.match(candidate.name)
            if match and candidate.is_file() and not _running(int(match.group(1))):
                with contextlib.suppress(OSError):
                    candidate.unlink()
                    removed.append(candidate)
    return removed


@contextlib.contextmanager
def atomic_path(path: str | Path, suffix: str | None = None) -> Iterator[Path]:
    """Yield a temporary path beside ``path``; on success it is renamed to ``path``.

    ``suffix`` is the temporary's extension (default: ``path``'s own), for writers that
    look at it (NumPy appends ``.npz`` to a name without it, Qt picks an image format).
    """
    path = check_path(path, "file to write")
    if path.is_dir():
        raise WriteError(f"{path} is a folder; give a file name.")
    ext = path.suffix if suffix is None else suffix
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        remove_stale_temporaries(path)
        fd, name = tempfile.mkstemp(prefix=f".{path.name}.{os.getpid()}.", suffix=f".part{ext}", dir=path.parent)
    except OSError as exc:
        raise unwritable(path, exc) from None
    os.close(fd)
    tmp = Path(name)
    try:
        yield tmp
        if not tmp.exists() or tmp.stat().st_size == 0:
            raise WriteError(f"Nothing was written to {path.name}.")
        os.chmod(tmp, _umask_mode())
        os.replace(tmp, path)
    except BaseException as exc:
        with contextlib.suppress(OSError):
            tmp.unlink()
        if isinstance(exc, OSError) and not isinstance(exc, WriteError) and name in (exc.filename, exc.filename2):
            raise unwritable(path, exc) from None       # the user's path, never the hidden temporary
        raise


class WriteError(OSError):
    """A file that could not be written, said in one sentence about the user's own path (not
    the hidden temporary beside it that the write went through)."""


def unwritable(path: Path, exc: OSError) -> WriteError:
    """``exc`` (from writing ``path`` through its temporary) as a WriteError naming ``path``."""
    reason = (exc.strerror or str(exc)).rstrip(".")
    return WriteError(f"Cannot write {path}: {reason[:1].lower()}{reason[1:]}.")


# ---- reading: files from outside, checked before they are read ---------------------------------
def check_regular_file(path: Path, what: str = "file") -> None:
    """A path that exists and is a regular file (not a folder, pipe or device)."""
    if not path.exists() and not path.is_symlink():
        raise ModelLoadError(f"No such {what}: {path}")
    if not path.is_file():
        raise ModelLoadError(f"{path} is not a regular {what} (a folder, pipe, device or broken link); "
                             "give the path of a model file or of a Hugging Face model folder.")


def check_archive(path: Path, ratio: int = 4) -> None:
    """A zip must not expand to far more than its size: a zip bomb would fill the memory before
    the reader sees that the content is nonsense. torch.save stores without compression, so a
    real checkpoint expands to about its own size (``ratio`` 4); attention arrays in an .npz
    compress a few times (callers pass a larger ``ratio``). Then the expanded size must fit."""
    try:
        if not zipfile.is_zipfile(path):
            return
        with zipfile.ZipFile(path) as z:
            expanded = sum(i.file_size for i in z.infolist())
    except (OSError, zipfile.BadZipFile, ValueError, EOFError):
        return  # not a readable zip: the reader gives its own "damaged" message
    size = path.stat().st_size
    if expanded > ratio * size + (64 << 20):
        raise ModelLoadError(f"{path.name} is a {gib(size)} file that would expand to {gib(expanded)}, far more than "
                             "any file attnscope or PyTorch writes (a zip bomb?); attnscope does not open it.")
    check_memory(path.name, 2 * expanded, "reading this file")


@contextlib.contextmanager
def open_npz(path: str | Path, what: str) -> Iterator[np.lib.npyio.NpzFile]:
    """``np.load`` of an .npz that is refused with one ValueError, naming the file, for any
    problem: in opening it, or in the caller's reading of it inside the ``with``."""
    path = check_path(path, what)
    try:
        if not path.is_file():
            raise InputError("no such file" if not path.exists() else "not a regular file")
        check_archive(path, ratio=50)
        with np.load(path, allow_pickle=False) as f:
            yield f
    except ModelLoadError as exc:
        raise InputError(f"{path.name} cannot be opened as a {what}: {exc}") from None
    except (OSError, ValueError, KeyError, IndexError, TypeError, AttributeError, EOFError, zipfile.BadZipFile,
            UnicodeError, MemoryError, RuntimeError) as exc:
        detail = (str(exc).strip().splitlines() or [type(exc).__name__])[0][:200]
        raise InputError(f"{path.name} is not a readable {what} ({detail}).") from None
