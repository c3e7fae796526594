"""The bundled models by the names the window's Model menu gives them ("gpt (bundled)"):
`attnscope why gpt` was refused as a hub id, and the bundled GPT had to be named by its path,
which only the README's table gave. One resolver (engine.loading.catalog.resolve_name) serves
the window and every command, and every command's --help lists the names."""
import json

import pytest

from attnscope.engine.loading import catalog
from attnscope.cli.entry import build_parser, main


def test_the_names_resolve_to_the_bundled_checkpoints(tmp_path, monkeypatch):
    names = catalog.bundled_names()
    assert set(names) == {"gpt", "translator"}
    assert catalog.resolve_name("gpt") == str(names["gpt"])
    assert catalog.resolve_name("gpt (bundled)") == str(names["gpt"])      # as the menu writes it
    assert catalog.resolve_name("Translator") == str(names["translator"])
    for other in ("minilm", "random-gpt", "Qwen/Qwen2.5-0.5B", "ndif:gpt2", "./model.pt"):
        assert catalog.resolve_name(other) == other
    monkeypatch.chdir(tmp_path)
    (tmp_path / "gpt").mkdir()                    # the user's own folder called gpt comes first
    assert catalog.resolve_name("gpt") == "gpt"


@pytest.mark.parametrize("argv", [
    ["why", "gpt", "--text", "the cat sat", "--head", "0.0", "--query", "2", "--key", "0"],
    ["heads", "gpt", "--json"],
    ["lens", "gpt", "--text", "the cat sat"],
    ["intervene", "gpt", "--text", "the cat sat", "--ablate", "0.0"],
    ["translate", "translator", "the cat"],
])
def test_every_command_takes_the_bundled_names(argv, capsys):
    code = main(argv)
    out, err = capsys.readouterr()
    assert code == 0, err
    assert "not a local folder" not in err


def test_export_and_record_take_them(tmp_path, capsys):
    assert main(["record", "gpt", "--text", "the cat sat", "--out", str(tmp_path / "r.recording.safetensors")]) == 0, capsys.readouterr()
    assert main(["export", "translator", "--text", "the cat", "--out", str(tmp_path)]) == 0, capsys.readouterr()


def test_help_lists_the_names(capsys):
    parser = build_parser()
    assert "gpt" in " ".join(parser.format_help().split())
    sub = next(a for a in parser._actions if a.dest == "command").choices
    for command in ("why", "export", "record", "patch", "lens", "heads", "intervene", "translate"):
        text = " ".join(sub[command].format_help().split())
        assert "translator, gpt (the bundled trained models" in text, command


def test_a_wrong_name_lists_the_right_ones():
    with pytest.raises(catalog.ModelLoadError, match="gpt"):
        catalog.open_model("/no/such/gpt.safetensors", "cpu")
