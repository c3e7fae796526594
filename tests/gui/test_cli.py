"""The headless commands: train -> eval -> translate on a tiny run; bad files exit cleanly."""
import json

import numpy as np

import pytest

from attnscope.cli.entry import main
from attnscope.engine.traces import reading


def run(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_train_eval_translate_generate(tmp_path, capsys):
    ckpt = tmp_path / "t.safetensors"
    code, out, _ = run(capsys, "train", "translator", "--size", "tiny", "--steps", "20", "--train-pairs", "200",
                       "--eval-limit", "20", "--out", str(ckpt), "--quiet")
    assert code == 0 and ckpt.exists()
    summary = json.loads(out)
    assert summary["steps"] == 20 and "bleu" in summary["metrics"]

    from attnscope.engine.loading.checkpoint import load_checkpoint
    training = load_checkpoint(ckpt).meta["training"]
    assert training["command"].startswith("attnscope train translator --size tiny")
    assert training["metrics"]["bleu"] == summary["metrics"]["bleu"]
    assert (training["config"]["batch_size"], training["config"]["lr"], training["config"]["repeat_fraction"]) == (64, 1e-3, 0)

    code, out, _ = run(capsys, "eval", str(ckpt), "--limit", "20")
    scores = json.loads(out)
    assert code == 0 and scores["family"] == "translator" and scores["bleu"] == summary["metrics"]["bleu"]

    code, out, _ = run(capsys, "translate", str(ckpt), "the dog sleeps .")
    result = json.loads(out)
    assert code == 0 and result["source_tokens"] == ["the", "dog", "sleeps", ".", "[EOS]"]
    assert isinstance(result["output_tokens"], list)

    code, out, _ = run(capsys, "generate", str(ckpt), "the dog")   # an encoder-decoder writes its output
    assert code == 0 and "translation" in json.loads(out)
    assert "notes" not in json.loads(out)

    # a text far longer than the model reads, full of one unknown word: said once each
    code, out, _ = run(capsys, "translate", str(ckpt), " ".join(["the dog zzqx sleeps ."] * 100))
    result = json.loads(out)
    assert code == 0 and result["unknown_words"] == ["zzqx"]
    note, = result["notes"]
    assert "has 500 tokens" in note and "only the first" in note


def test_train_gpt_on_a_text_file(tmp_path, capsys):
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("\n".join(f"the dog number {i} sleeps in the garden ." for i in range(200)), encoding="utf-8")
    ckpt = tmp_path / "g.safetensors"
    code, out, _ = run(capsys, "train", "gpt", "--corpus", str(corpus), "--size", "tiny", "--steps", "15",
                       "--position", "rope", "--lr", "3e-3", "--out", str(ckpt), "--quiet")
    assert code == 0 and json.loads(out)["metrics"]["val_loss"] > 0
    from attnscope.engine.loading.checkpoint import load_checkpoint
    from attnscope.engine.training.records import GPT_RECIPE
    assert load_checkpoint(ckpt).model.config.position == "rope"
    config = load_checkpoint(ckpt).meta["training"]["config"]   # the recipe, but the option given wins
    assert {k: config[k] for k in GPT_RECIPE} == {**GPT_RECIPE, "lr": 3e-3}
    code, out, _ = run(capsys, "generate", str(ckpt), "the dog", "--max-new-tokens", "5")
    assert code == 0 and len(json.loads(out)["output_tokens"]) <= 5


@pytest.mark.parametrize("command", ["eval", "translate"])
def test_bad_checkpoint_exits_with_a_message(tmp_path, capsys, command):
    bad = tmp_path / "bad.safetensors"
    bad.write_bytes(b"\x00" * 20)
    args = [command, str(bad)] + (["hello"] if command == "translate" else [])
    code, out, err = run(capsys, *args)
    assert code == 2 and err.startswith("attnscope: ") and "Traceback" not in err


def test_missing_corpus_exits_with_a_message(tmp_path, capsys):
    code, _, err = run(capsys, "train", "translator", "--corpus", str(tmp_path / "none.tsv"), "--quiet")
    assert code == 2 and "No such pairs file" in err


def test_compare_minilm_prints_per_layer_differences(capsys):
    code, out, _ = run(capsys, "compare", "minilm", "--text", "the big dog", "--pair", "a small cat")
    result = json.loads(out)
    assert code == 0 and len(result["max_abs_diff_per_layer"]) == 6 and result["max_abs_diff"] < 1e-5
    assert result["tokens"][0] == "[CLS]" and result["tokens"].count("[SEP]") == 2


@pytest.mark.parametrize("view, fmt", [("grid", "png"), ("head", "svg"), ("lines", "png")])
def test_export_views_headless(tmp_path, capsys, view, fmt):
    code, out, _ = run(capsys, "export", "random-translator", "--text", "the big dog sees the cat .",
                       "--out", str(tmp_path), "--view", view, "--format", fmt, "--kind", "cross", "--size", "900x500")
    path = tmp_path / f"{view}.{fmt}"
    assert code == 0 and path.exists() and json.loads(out)["written"] == [str(path)]
    if fmt == "png":
        from PySide6.QtGui import QImage
        image = QImage(str(path))
        assert (image.width(), image.height()) == (900, 500)
    else:
        assert path.read_text().lstrip().startswith("<?xml")


def test_export_trace_npz_holds_the_trace(tmp_path, capsys):
    from attnscope.engine.loading.catalog import open_model
    from attnscope.engine.inspection.export import load_npz
    from attnscope.engine.traces.tracing import trace_text
    code, out, _ = run(capsys, "export", "random-gpt", "--text", "the big dog", "--out", str(tmp_path), "--format", "npz")
    assert code == 0
    back = load_npz(tmp_path / "trace.npz")
    expected = trace_text(open_model("random-gpt", "cpu"), "the big dog")
    np.testing.assert_allclose(reading.weights(back, "decoder self"), reading.weights(expected, "decoder self"), atol=1e-6)


def test_first_ctrl_c_asks_the_trainer_to_stop_and_save(capsys):
    import os
    import signal

    from attnscope.cli.train import _ctrl_c_flag
    previous = signal.getsignal(signal.SIGINT)
    try:
        stop = _ctrl_c_flag()
        assert stop() is False
        os.kill(os.getpid(), signal.SIGINT)   # the first Ctrl-C: no KeyboardInterrupt, a request
        assert stop() is True
        assert "stopping after this step" in capsys.readouterr().err
        with pytest.raises(KeyboardInterrupt):  # the second one aborts
            os.kill(os.getpid(), signal.SIGINT)
    finally:
        signal.signal(signal.SIGINT, previous)


@pytest.mark.parametrize("family,name,text", [("translator", "one.tsv", "the dog\tder hund\n"),
                                              ("gpt", "one.txt", "just one line\n"),
                                              ("gpt", "few.txt", "a b c\nd e\n")])
def test_a_corpus_too_small_to_train_on_exits_with_a_message(tmp_path, capsys, family, name, text):
    corpus = tmp_path / name
    corpus.write_text(text, encoding="utf-8")
    code, out, err = run(capsys, "train", family, "--corpus", str(corpus), "--size", "tiny", "--steps", "2",
                         "--out", str(tmp_path / "m.safetensors"), "--quiet")
    assert code == 2 and err.startswith("attnscope: ") and "internal error" not in err and "needs at least" in err
    assert not (tmp_path / "m.safetensors").exists()


def test_export_of_a_text_too_long_says_so_in_its_notes_and_nothing_on_stderr(tmp_path):
    """A user's terminal: the JSON's notes say the text was cut; no transformers warning about
    token indices and no line from Qt's offscreen platform come before it."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    from tests.helpers.hf_tiny import tiny_folder

    folder = tiny_folder(tmp_path, "bert")   # 64 positions
    root = Path(__file__).resolve().parents[2]
    env = {k: v for k, v in os.environ.items() if k != "QT_QPA_PLATFORM"}   # export picks offscreen itself
    out = subprocess.run([sys.executable, str(root / "main.py"), "export", str(folder), "--text",
                          "the big dog sees the small cat . " * 30, "--out", str(tmp_path / "png"), "--view", "grid"],
                         capture_output=True, text=True, env=env, cwd=root, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stderr == ""
    note, = json.loads(out.stdout)["notes"]
    assert "the model takes 64, so it was truncated" in note


def test_compare_minilm_on_a_long_text_prints_no_transformers_warning(capfd):
    code = main(["compare", "minilm", "--text", "the cat sat on the mat . " * 100])
    out, err = capfd.readouterr()
    assert code == 0 and json.loads(out)["max_abs_diff"] < 1e-3
    assert err == ""
    assert any("truncated" in note for note in json.loads(out)["notes"])   # the JSON says what was compared


def test_train_out_a_folder_says_it_is_a_folder(capsys, tmp_path):
    with pytest.raises(SystemExit):
        main(["train", "--out", str(tmp_path), "--quiet"])
    err = capsys.readouterr().err
    assert "is a folder" in err and "no extension" not in err and str(tmp_path / "model.safetensors") in err
