"""Issue 58 items 5 and 8: a name too long for the file system is one sentence in every command;
atomic_path gives a written file the umask's mode without setting the process umask (setting it
to 0 for a moment let another thread of the window create a world-writable file)."""
from __future__ import annotations

import os

import pytest

from attnscope.engine.runtime import files


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


LONG = "n" * 5000


def _cli(argv, capsys) -> tuple[int, str]:
    from attnscope.cli.entry import main

    try:
        code = main(argv)
    except SystemExit as exc:                           # argparse's refusal
        code = exc.code
    err = capsys.readouterr().err
    return code, err


@pytest.mark.parametrize("argv", [
    ["export", "random-gpt", "--text", "hi", "--out", "{tmp}/" + LONG],
    ["train", "gpt", "--out", "{tmp}/" + LONG + ".safetensors"],
    ["record", "random-gpt", "--text", "hi", "--out", "{tmp}/" + LONG],
    ["heads", "{tmp}/" + LONG],
    ["export", "random-gpt", "--text-file", "{tmp}/" + LONG, "--out", "{tmp}/o"],
    ["export", "{tmp}/" + LONG, "--text", "hi", "--out", "{tmp}/o"],
    ["atlas", "random-gpt", "--out", "{tmp}/" + LONG],
])
def test_a_name_too_long_for_the_file_system_is_one_sentence(tmp_path, capsys, argv):
    code, err = _cli([a.replace("{tmp}", str(tmp_path)) for a in argv], capsys)
    assert code == 2, err
    assert "Traceback" not in err and "Errno" not in err and "internal error" not in err, err
    assert "too long for the file system" in err and len(err.strip().splitlines()) == 1 and len(err) < 400, err


@pytest.mark.parametrize("argv, name", [
    (["--format", "png"], "grid.png"),
    (["--format", "npz"], "trace.npz"),
])
def test_export_never_writes_over_a_file_unless_forced(tmp_path, capsys, argv, name):
    mine = tmp_path / name
    mine.write_bytes(b"the user's own file")
    code, err = _cli(["export", "random-gpt", "--text", "a b c", "--out", str(tmp_path), *argv], capsys)
    assert code == 2 and name in err and "--force" in err and mine.read_bytes() == b"the user's own file", err
    code, err = _cli(["export", "random-gpt", "--text", "a b c", "--out", str(tmp_path), *argv, "--force"], capsys)
    assert code == 0 and mine.read_bytes() != b"the user's own file", err
    if name.endswith(".npz"):                          # export's own file: replaced by the next export
        code, err = _cli(["export", "random-gpt", "--text", "a b c", "--out", str(tmp_path), *argv], capsys)
        assert code == 0, err
