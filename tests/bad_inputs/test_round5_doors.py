"""Issue 46: what a user types wrong gets one sentence about the user's own value: answers
(id:² and id: with 5,000 digits gave Python's own messages; a word the vocabulary lacks was
measured as [UNK]), a blank system turn (it blamed the text), and a pair of different lengths
(its refusal listed every token: 1,565 characters on one line)."""
from __future__ import annotations

import pytest

from attnscope.engine.adapters import adapter_for
from attnscope.engine.experiments.pairs import PromptPair, answer_id, frame_pair
from attnscope.engine.inputs import Chat, InputError, check_text
from attnscope.engine.loading.catalog import open_model

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


def test_a_drawing_over_an_hour_asks_for_max_seconds(tmp_path, monkeypatch, capsys):
    """A PNG export estimated past an hour is refused by default, naming --max-seconds (one of a
    few minutes draws, with progress: tests/engine/test_export_threshold.py)."""
    import attnscope.engine.traces as traces
    from attnscope.cli.entry import main
    from tests.bad_inputs.cases import synthetic_recording

    path = synthetic_recording(tmp_path / "r.safetensors", 64)
    real = traces.estimate_drawing

    def slow(*args, **kwargs):            # the same estimate, as a huge recording's on a CPU: 2 h
        est = real(*args, **kwargs)
        est.seconds = 7200.0
        return est
    monkeypatch.setattr(traces, "estimate_drawing", slow)          # the CLI asks the package's face
    assert main(["export", str(path), "--out", str(tmp_path / "o"), "--view", "head"]) == 2
    err = capsys.readouterr().err
    assert "--max-seconds" in err and err.count("\n") == 1 and not (tmp_path / "o").exists() or \
        not list((tmp_path / "o").iterdir())


@pytest.mark.parametrize("where", ["/proc/attnscope-test.safetensors", "/sys/attnscope-test.safetensors"])
def test_an_output_that_cannot_be_written_names_the_users_path(where, capsys):
    from attnscope.cli.entry import main

    assert main(["record", "random-gpt", "--text", "the dog", "--out", where]) == 2
    err = capsys.readouterr().err
    assert f"Cannot write {where}:" in err and ".part" not in err and err.count("\n") == 1


def test_a_write_that_fails_at_the_end_names_the_users_path(tmp_path, monkeypatch):
    import os

    from attnscope.engine.runtime import files

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
    from attnscope.engine.experiments.run import over_pairs
    from attnscope.engine.loading.demo import random_model

    with pytest.raises(InputError) as err:
        next(over_pairs(random_model("gpt", layers=1, heads=2, width=16), pairs))
    assert "pairs" in _said(err)


def test_a_file_of_pairs_is_estimated_from_its_first_and_refused_past_the_limit(tmp_path, capsys):
    """A million lines would have run two days saying nothing: the first pair is timed, the file
    estimated from it, and refused past --max-seconds with the numbers, before the rest is framed."""
    from attnscope.cli.entry import main

    line = "the big dog sees the small cat\tthe big cat sees the small dog\tid:5\tid:6\n"
    (tmp_path / "pairs.tsv").write_text(line * 12000 + "the dog\tthe big dog\tid:5\tid:6\n")   # never framed
    assert main(["patch", "random-gpt", "--pairs", str(tmp_path / "pairs.tsv"), "--max-seconds", "1", "--json"]) == 2
    err = capsys.readouterr().err
    assert "12,001 pairs at about" in err and "--max-seconds" in err and "Pair 1 of 12001" in err
    (tmp_path / "three.tsv").write_text(line * 3)
    assert main(["patch", "random-gpt", "--pairs", str(tmp_path / "three.tsv"), "--json"]) == 0
    assert "Patching 3 pairs: about" in capsys.readouterr().err


# ---- the engine's doors: each public call given a wrong type or value says so in one sentence ----
@pytest.fixture(scope="module")
def doors():
    from attnscope.engine.loading.demo import random_model
    from attnscope.engine.traces import trace_text

    gpt = random_model("gpt", layers=1, heads=2, width=16)
    return {"gpt": gpt, "translator": random_model("translator", layers=1, heads=2, width=16),
            "bert": random_model("bert", layers=1, heads=2, width=16), "recording": trace_text(gpt, "the dog"),
            "pair": PromptPair("the big dog", "the big cat", "id:5", "id:6")}


def _calls(d):
    from attnscope.engine.decoding import decode_all
    from attnscope.engine.experiments import experiment, next_tokens
    from attnscope.engine.experiments.pairs import read_pairs
    from attnscope.engine.experiments.run import over_pairs
    from attnscope.engine.inputs import read_utf8
    from attnscope.engine.interventions import logit_lens
    from attnscope.engine.interventions.effect import intervention_effect
    from attnscope.engine.loading.demo import random_model
    from attnscope.engine.traces import is_recording, trace_text

    gpt, pair = d["gpt"], d["pair"]
    framed = lambda: frame_pair(gpt, pair)   # noqa: E731
    return {
        "frame_pair(None)": lambda: frame_pair(None, pair),
        "frame_pair(a recording)": lambda: frame_pair(d["recording"], pair),
        "frame_pair(a str)": lambda: frame_pair("gpt", pair),
        "frame_pair(target=bytes)": lambda: frame_pair(d["translator"], pair, target=b"\xff"),
        "frame_pair(target=a surrogate)": lambda: frame_pair(d["translator"], pair, target="\udcff"),
        "frame_pair(pair=None)": lambda: frame_pair(gpt, None),
        "experiment(metric='bogus')": lambda: list(experiment(gpt, framed(), metric="bogus")),
        "experiment(max_batch='x')": lambda: list(experiment(gpt, framed(), max_batch="x")),
        "experiment(stop=5)": lambda: list(experiment(gpt, framed(), stop=5)),
        "experiment(another model)": lambda: list(experiment(random_model("gpt", layers=1, heads=2, width=16),
                                                             framed())),
        "over_pairs(None)": lambda: next(over_pairs(gpt, None)),
        "next_tokens(k=-1)": lambda: next_tokens(gpt, "the dog", k=-1),
        "next_tokens(an encoder)": lambda: next_tokens(d["bert"], "the dog"),
        "decode_all(settings='greedy')": lambda: decode_all(gpt, "the dog", settings="greedy"),
        "trace_text(interventions='0.0')": lambda: trace_text(gpt, "the dog", interventions="0.0"),
        "trace_text(report=5)": lambda: trace_text(gpt, "the dog", report=5),
        "intervention_effect(k=-5)": lambda: intervention_effect(gpt, "the dog", None, k=-5),
        "logit_lens(k=-1)": lambda: logit_lens(gpt, "the dog", k=-1),
        "read_utf8(None)": lambda: read_utf8(None),
        "read_utf8(5)": lambda: read_utf8(5),
        "read_pairs(None)": lambda: read_pairs(None),
        "read_pairs(5)": lambda: read_pairs(5),
        "is_recording(None)": lambda: is_recording(None),
        "is_recording(5)": lambda: is_recording(5),
    }


CALLS = ["frame_pair(None)", "frame_pair(a recording)", "frame_pair(a str)", "frame_pair(target=bytes)",
         "frame_pair(target=a surrogate)", "frame_pair(pair=None)", "experiment(metric='bogus')",
         "experiment(max_batch='x')", "experiment(stop=5)", "experiment(another model)", "over_pairs(None)",
         "next_tokens(k=-1)", "next_tokens(an encoder)", "decode_all(settings='greedy')",
         "trace_text(interventions='0.0')", "trace_text(report=5)", "intervention_effect(k=-5)", "logit_lens(k=-1)",
         "read_utf8(None)", "read_utf8(5)", "read_pairs(None)", "read_pairs(5)", "is_recording(None)",
         "is_recording(5)"]


@pytest.mark.parametrize("call", CALLS)
def test_a_public_call_given_a_wrong_value_answers_in_the_projects_own_words(doors, call):
    """Issue 46 found 44 public calls that raised TypeError, IndexError, RuntimeError or a plain
    ValueError on a script's slip; these are its cases, each now the project's own error."""
    from attnscope.engine.traces import RecordingError

    with pytest.raises((InputError, RecordingError)) as err:
        _calls(doors)[call]()
    said = str(err.value)
    assert "\n" not in said and 0 < len(said) < 300, said


@pytest.mark.parametrize("family", ["gpt", "translator", "bert"])
def test_a_huge_text_is_cut_to_what_the_model_reaches_before_it_is_tokenized(family):
    """A 15 MiB --text-file took 4.5-5.2 GB and 25-87 s on a model that reads 255 tokens: it was
    tokenized whole. Only what the model can reach is read now; the tokens read are the same."""
    from attnscope.engine.adapters import adapter_for
    from attnscope.engine.loading.demo import random_model

    loaded = random_model(family, layers=1, heads=2, width=16)
    adapter = adapter_for(loaded)
    words = "the big dog sees the small cat . "
    short, huge = words * 200, words * 200_000                 # 6.6 k and 6.6 M characters
    prefix = {"target": "der"} if family == "translator" else {}    # a translator reads a target prefix too
    a, b = adapter.frame(short, **prefix), adapter.frame(huge, **prefix)
    side = "target_tokens" if family == "gpt" else "source_tokens"
    assert getattr(a, side) == getattr(b, side)                # the same tokens: the reach covers them
    assert any("characters; only its" in n for n in b.notes)
