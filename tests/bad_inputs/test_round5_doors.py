"""Issue 46: what a user types wrong gets one sentence about the user's own value: answers
(id:² and id: with 5,000 digits gave Python's own messages; a word the vocabulary lacks was
measured as [UNK]), a blank system turn (it blamed the text), and a pair of different lengths
(its refusal listed every token: 1,565 characters on one line)."""
from __future__ import annotations

import pytest

from engine.adapters import adapter_for
from engine.experiments.pairs import PromptPair, answer_id, frame_pair
from engine.inputs import Chat, InputError, check_text
from engine.loading.catalog import open_model

TRANSLATOR = "resources/checkpoints/translator.safetensors"


@pytest.fixture(scope="module")
def translator():
    return open_model(TRANSLATOR, "cpu")


def _said(err) -> str:
    text = str(err.value)
    assert "\n" not in text and len(text) < 300, text
    return text


@pytest.mark.parametrize("spec", ["id:²", "id:" + "9" * 5000, "id:-1", "id:1e3", "id:", None, 5, b"x"])
def test_an_answer_that_is_no_id_or_text_is_one_sentence(translator, spec):
    with pytest.raises(InputError) as err:
        answer_id(adapter_for(translator), spec)
    assert "answer" in _said(err).lower()


def test_an_answer_the_vocabulary_lacks_is_refused_not_measured_as_unknown(translator):
    adapter = adapter_for(translator)
    with pytest.raises(InputError) as err:
        answer_id(adapter, "Flugzeugtraeger")
    assert "vocabulary" in _said(err)
    assert answer_id(adapter, "hund") == answer_id(adapter, " hund ")      # a word it knows
    assert answer_id(adapter, "[UNK]") == translator.tokenizer.unk_id     # asked for by name: allowed


def test_a_blank_system_turn_is_that_turns_fault():
    with pytest.raises(InputError) as err:
        check_text(Chat.of("hello", system="   "))
    assert "system turn" in _said(err) and "no text" not in _said(err)


def test_a_pair_of_different_lengths_says_where_they_part_not_every_token(translator):
    words = "the big dog sees the small cat . " * 4
    pair = PromptPair(words, words.replace("small cat", "small old cat", 1), "der", "die")
    with pytest.raises(InputError) as err:
        frame_pair(translator, pair)
    said = _said(err)
    assert "first differing at token" in said and "'old'" in said


def test_a_drawing_over_a_minute_asks_for_max_seconds(tmp_path, monkeypatch, capsys):
    """A PNG export estimated past a minute is refused by default, naming --max-seconds; asked
    with more, it runs."""
    import engine.traces as traces
    from main import main
    from tests.bad_inputs.cases import synthetic_recording

    path = synthetic_recording(tmp_path / "r.safetensors", 64)
    real = traces.estimate_drawing

    def slow(*args, **kwargs):            # the same estimate, as a 60,000-position recording's: 9.1 min
        est = real(*args, **kwargs)
        est.seconds = 546.0
        return est
    monkeypatch.setattr(traces, "estimate_drawing", slow)          # the CLI asks the package's face
    assert main(["export", str(path), "--out", str(tmp_path / "o"), "--view", "head"]) == 2
    err = capsys.readouterr().err
    assert "--max-seconds" in err and err.count("\n") == 1 and not (tmp_path / "o").exists() or \
        not list((tmp_path / "o").iterdir())


@pytest.mark.parametrize("where", ["/proc/attnscope-test.safetensors", "/sys/attnscope-test.safetensors"])
def test_an_output_that_cannot_be_written_names_the_users_path(where, capsys):
    from main import main

    assert main(["record", "random-gpt", "--text", "the dog", "--out", where]) == 2
    err = capsys.readouterr().err
    assert f"Cannot write {where}:" in err and ".part" not in err and err.count("\n") == 1


def test_a_write_that_fails_at_the_end_names_the_users_path(tmp_path, monkeypatch):
    import os

    from engine.runtime import files

    def refuse(src, dst):
        raise PermissionError(13, "Permission denied", str(src))
    monkeypatch.setattr(files.os, "replace", refuse)
    target = tmp_path / "out.bin"
    with pytest.raises(files.WriteError) as err:
        with files.atomic_path(target) as tmp:
            tmp.write_bytes(b"x")
    assert str(err.value) == f"Cannot write {target}: permission denied." and os.listdir(tmp_path) == []


@pytest.mark.parametrize("pairs", [[], None, "pairs.tsv"])
def test_over_pairs_of_nothing_is_one_sentence(pairs):
    from engine.experiments.run import over_pairs
    from engine.loading.demo import random_model

    with pytest.raises(InputError) as err:
        next(over_pairs(random_model("gpt", layers=1, heads=2, width=16), pairs))
    assert "pairs" in _said(err)


def test_a_file_of_pairs_is_estimated_from_its_first_and_refused_past_the_limit(tmp_path, capsys):
    """A million lines would have run two days saying nothing: the first pair is timed, the file
    estimated from it, and refused past --max-seconds with the numbers, before the rest is framed."""
    from main import main

    line = "the big dog sees the small cat\tthe big cat sees the small dog\tid:5\tid:6\n"
    (tmp_path / "pairs.tsv").write_text(line * 12000 + "the dog\tthe big dog\tid:5\tid:6\n")   # never framed
    assert main(["patch", "random-gpt", "--pairs", str(tmp_path / "pairs.tsv"), "--max-seconds", "1", "--json"]) == 2
    err = capsys.readouterr().err
    assert "12,001 pairs at about" in err and "--max-seconds" in err and "Pair 1 of 12001" in err
    (tmp_path / "three.tsv").write_text(line * 3)
    assert main(["patch", "random-gpt", "--pairs", str(tmp_path / "three.tsv"), "--json"]) == 0
    assert "Patching 3 pairs: about" in capsys.readouterr().err
