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
"""
from __future__ import annotations

import contextlib
import os
import re
import tempfile
from pathlib import Path
from typing import Iterator


def _umask_mode() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return 0o666 & ~mask


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
    path = Path(path)
    if path.is_dir():
        raise IsADirectoryError(f"{path} is a folder; give a file name.")
    path.parent.mkdir(parents=True, exist_ok=True)
    ext = path.suffix if suffix is None else suffix
    remove_stale_temporaries(path)
    fd, name = tempfile.mkstemp(prefix=f".{path.name}.{os.getpid()}.", suffix=f".part{ext}", dir=path.parent)
    os.close(fd)
    tmp = Path(name)
    try:
        yield tmp
        if not tmp.exists() or tmp.stat().st_size == 0:
            raise OSError(f"Nothing was written to {path.name}.")
        os.chmod(tmp, _umask_mode())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise
