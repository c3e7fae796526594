"""Issue 40, item 7: every command that takes a text takes --text-file too (Linux caps one
argument at 128 KB: a 32k-token text could not be given at all), read by one reader
(engine.inputs.read_utf8), with the same one-line refusals."""
import json

import pytest

from attnscope.cli.entry import main

TR = "resources/checkpoints/translator.safetensors"
TEXT = "the big dog sees the small cat ."
COMMANDS = {
    "translate": ["translate", TR, "--max-new-tokens", "4"],
    "generate": ["generate", "random-gpt", "--max-new-tokens", "3"],
    "export": ["export", "random-gpt", "--format", "npz", "--out", "{out}"],
    "intervene": ["intervene", "random-gpt", "--ablate", "0.0"],
    "lens": ["lens", "random-gpt"],
    "record": ["record", "random-gpt", "--out", "{out}/r.safetensors"],
    "compare": ["compare", "random-gpt", "--with", "random-gpt"],
}
POSITIONAL = {"translate", "generate"}


def _argv(name, tmp_path, *text):
    return [a.replace("{out}", str(tmp_path / "out")) for a in COMMANDS[name]] + list(text)


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_a_text_file_reads_as_the_same_text(name, tmp_path, capsys):
    file = tmp_path / "text.txt"
    file.write_text(TEXT + "\n", encoding="utf-8")
    as_arg = [TEXT] if name in POSITIONAL else ["--text", TEXT]
    assert main(_argv(name, tmp_path, *as_arg)) == 0
    given = json.loads(capsys.readouterr().out)
    assert main(_argv(name, tmp_path, "--text-file", str(file))) == 0
    read = json.loads(capsys.readouterr().out)
    for key in ("source_tokens", "prompt_tokens", "tokens", "token_ids", "translation", "continuation", "next", "kinds"):
        assert given.get(key) == read.get(key), key


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_a_bad_text_file_is_one_line(name, tmp_path, capsys):
    (tmp_path / "latin1.txt").write_bytes(b"caf\xe9 \xff")
    for extra in (["--text-file", str(tmp_path / "latin1.txt")], ["--text-file", str(tmp_path / "absent.txt")]):
        assert main(_argv(name, tmp_path, *extra)) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and ("not UTF-8" in err[0] or "No such text file" in err[0]), err


def test_a_text_longer_than_a_command_line_argument(tmp_path, capsys):
    """A 200 KB text: more than one argument may carry; the file gives it whole (the model keeps
    its last tokens and says so)."""
    file = tmp_path / "long.txt"
    file.write_text("the dog sees the cat . " * 9000)
    assert file.stat().st_size > 128 * 1024
    assert main(["lens", "random-gpt", "--text-file", str(file)]) == 0
    assert len(json.loads(capsys.readouterr().out)["tokens"]) <= 256


def test_text_and_text_file_together_or_neither(tmp_path, capsys):
    file = tmp_path / "t.txt"
    file.write_text(TEXT)
    assert main(["generate", "random-gpt", TEXT, "--text-file", str(file)]) == 2
    assert "not both" in capsys.readouterr().err
    assert main(["generate", "random-gpt"]) == 2
    assert "Give a text" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["lens", "random-gpt", "--text", TEXT, "--text-file", str(file)])   # argparse: not allowed with


def test_patch_takes_its_two_texts_from_files(tmp_path, capsys):
    """`attnscope patch` reads two texts: --clean-file and --corrupt-file give them as the
    arguments would, through the same reader and its one-line refusals."""
    clean, corrupt = tmp_path / "clean.txt", tmp_path / "corrupt.txt"
    clean.write_text("the big dog sees the small cat .\n", encoding="utf-8")
    corrupt.write_text("the big cat sees the small dog .\n", encoding="utf-8")
    base = ["patch", "random-gpt", "--answers", "id:5", "id:6", "--json"]
    assert main(base + ["--clean", "the big dog sees the small cat .",
                        "--corrupt", "the big cat sees the small dog ."]) == 0
    given = json.loads(capsys.readouterr().out)
    assert main(base + ["--clean-file", str(clean), "--corrupt-file", str(corrupt)]) == 0
    read = json.loads(capsys.readouterr().out)
    assert read["token_ids"] == given["token_ids"] and read["results"] == given["results"]
    (tmp_path / "latin1.txt").write_bytes(b"caf\xe9 \xff")
    for extra in (["--clean-file", str(tmp_path / "latin1.txt"), "--corrupt-file", str(corrupt)],
                  ["--clean-file", str(clean), "--clean", "x", "--corrupt-file", str(corrupt)]):
        assert main(base + extra) == 2
        assert len(capsys.readouterr().err.strip().splitlines()) == 1
