"""Issue 58 items 5 and 8: a name too long for the file system is one sentence in every command;
atomic_path gives a written file the umask's mode without setting the process umask (setting it
to 0 for a moment let another thread of the window create a world-writable file)."""
from __future__ import annotations

import os

import pytest

from engine.runtime import files


@pytest.mark.parametrize("proc", [True, False])
def test_atomic_path_never_sets_the_process_umask(tmp_path, monkeypatch, proc):
    old = os.umask(0o027)
    try:
        def refuse(_mask):
            raise AssertionError("atomic_path set the process umask")

        monkeypatch.setattr(os, "umask", refuse)
        if not proc:                                   # no /proc: the probe file tells
            real_open = open

            def no_proc(name, *a, **k):
                if str(name).startswith("/proc/"):
                    raise OSError("no /proc here")
                return real_open(name, *a, **k)

            monkeypatch.setattr("builtins.open", no_proc)
        with files.atomic_path(tmp_path / "out.txt") as tmp:
            tmp.write_text("x")
        assert os.stat(tmp_path / "out.txt").st_mode & 0o777 == 0o640
    finally:
        monkeypatch.undo()
        os.umask(old)
