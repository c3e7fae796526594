"""Writing files safely: every file attnscope writes goes through ``atomic_path``.

Why: a kill, a full disk or an exception half-way through a write must never leave a
0-byte or half-written file under the real name, nor destroy the good file that was there.
So the writer gets a temporary name in the same folder (same file system, so the final
rename is atomic), the temporary is removed on any failure, and the finished file gets
the permissions the user's umask gives a new file (a temporary from ``mkstemp`` is 0600).
"""
from __future__ import annotations

import contextlib
import os
import tempfile
from pathlib import Path
from typing import Iterator


def _umask_mode() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return 0o666 & ~mask


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
    fd, name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=f".part{ext}", dir=path.parent)
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
