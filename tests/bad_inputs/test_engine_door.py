"""Issue 40: every entry point of the engine answers bad input with the project's own error type
and one sentence (a script calling the engine gets what the CLI and the window get), and the
commands refuse what would destroy a user's file or take unbounded memory or time."""
import json

import pytest

from attnscope.engine.inputs import InputError
from attnscope.engine.interventions.refs import Edge, HeadRef
from attnscope.engine.interventions.spec import MEAN, Interventions
from attnscope.engine.loading.demo import random_model
from attnscope.engine.errors import ModelLoadError
from attnscope.engine.traces.recording_file import RecordingError
from tests.bad_inputs.cases import synthetic_recording


def one_sentence(exc) -> str:
    text = str(exc.value)
    assert "\n" not in text and text.strip(), text
    return text


@pytest.fixture(scope="module")
def gpt():
    return random_model("gpt", layers=2, heads=2, width=16)


@pytest.fixture(scope="module")
def translator():
    return random_model("translator", layers=2, heads=2, width=16)


@pytest.mark.parametrize("device", [42, ["cpu"], "quantum", "cuda:x"])
def test_open_model_with_a_device_that_is_not_one(device):
    from attnscope.engine.loading.catalog import open_model

    with pytest.raises(ModelLoadError) as err:
        open_model("random-gpt", device)
    assert "device" in one_sentence(err)


@pytest.mark.parametrize("path", [None, 42, "", "   "])
def test_load_recording_of_nothing(path):
    from attnscope.engine.traces.recording_file import load_recording

    with pytest.raises(RecordingError) as err:
        load_recording(path)
    assert "recording" in one_sentence(err)


@pytest.mark.parametrize("where", ["target", "pair"])
@pytest.mark.parametrize("bad", ["the \ud800 dog", "caf\udce9", b"\xff\xfe", 42])
def test_a_second_text_that_is_not_unicode(translator, where, bad):
    from attnscope.engine.traces.tracing import trace_text

    loaded = translator if where == "target" else random_model("bert", layers=1, heads=2, width=16)
    with pytest.raises(InputError) as err:
        trace_text(loaded, "the dog", **{where: bad})
    assert one_sentence(err).startswith("The ")


@pytest.mark.parametrize("spec", [
    "ablate 0.0", 42,
    Interventions(ablated=((("decoder self", 0, 0), "zero"),)),               # a head that is not a HeadRef
    Interventions(ablated=((HeadRef("decoder self", 0, 0), "sideways"),)),    # a mode that is not one
    Interventions(ablated=((HeadRef("decoder self", "0", 0), "zero"),)),      # a layer that is not a number
    Interventions(knockout=(Edge("sideways", None, None),)),
    Interventions(knockout=(Edge("decoder self", (1.5,), None),)),
    Interventions(knockout=(Edge("decoder self", (), None),)),
    Interventions(knockout=("0:0@0",)),
])
def test_effect_of_a_malformed_spec(gpt, spec):
    from attnscope.engine.interventions.effect import intervention_effect

    with pytest.raises(InputError) as err:
        intervention_effect(gpt, "the dog sees the cat", spec)
    assert "do not fit" in one_sentence(err)


@pytest.mark.parametrize("spec, phrase", [
    (Interventions().ablate([HeadRef("decoder self", 0, 9)]), "heads are 0 to 1"),
    (Interventions().ablate([HeadRef("decoder self", 7, 0)], MEAN), "layers are 0 to 1"),
    (Interventions().ablate([HeadRef("cross", 0, 0)]), "no cross attention"),
    (Interventions().block(Edge("decoder self", (0,), (0,), range(0, 1_000_000_001))), "layers are 0 to 1"),
    (Interventions().block(Edge("decoder self", range(0, 1_000_000_001), (0,))), "query positions here, 0 to"),
    (Interventions().block(Edge("decoder self", (0,), (99,), (0,))), "key positions here, 0 to"),
])
def test_effect_and_lens_check_heads_and_edges(gpt, spec, phrase):
    """Only the CLI checked them: the engine accepted a head or an edge the model lacks silently."""
    from attnscope.engine.interventions.effect import intervention_effect
    from attnscope.engine.interventions.lens import logit_lens

    for run in (lambda: intervention_effect(gpt, "the dog sees the cat", spec), lambda: logit_lens(gpt, "the dog", spec=spec)):
        with pytest.raises(InputError, match=phrase) as err:
            run()
        one_sentence(err)


def test_a_recording_asked_to_run_says_it_is_a_recording_and_what_it_can_do(tmp_path, capsys):
    from attnscope.engine.interventions.effect import intervention_effect
    from attnscope.engine.interventions.lens import logit_lens
    from attnscope.engine.traces.recording_file import load_recording
    from attnscope.engine.traces.tracing import trace_text
    from attnscope.cli.entry import main

    path = synthetic_recording(tmp_path / "r.safetensors", 8)
    trace = load_recording(path)
    for run in (lambda: logit_lens(trace, "the dog"), lambda: intervention_effect(trace, "the dog", Interventions()),
                lambda: trace_text(trace, "the dog")):
        with pytest.raises(InputError, match="This is a recording") as err:
            run()
        one_sentence(err)
    for argv in (["heads", str(path)], ["lens", str(path), "--text", "the dog"],
                 ["intervene", str(path), "--text", "the dog", "--ablate", "0.0"],
                 ["record", str(path), "--text", "the dog", "--out", str(tmp_path / "again")]):
        assert main(argv) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and "is an attnscope recording" in err[0] and "probably" not in err[0], (argv, err)


def test_record_never_writes_over_the_model_it_reads_or_a_users_file(tmp_path, capsys):
    """`attnscope record model.safetensors --out model.safetensors` destroyed the checkpoint."""
    from attnscope.engine.loading.checkpoint import save_checkpoint
    from attnscope.cli.entry import main

    model = save_checkpoint(random_model("gpt", layers=1, heads=2, width=16), tmp_path / "model.safetensors")
    notes = tmp_path / "notes.safetensors"
    notes.write_text("a file of the user's")
    before = {p: p.read_bytes() for p in (model, notes)}
    for out in (model, notes, tmp_path / "model"):         # "model" gets the suffix: the model again
        assert main(["record", str(model), "--text", "the dog", "--out", str(out)]) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and "will not write over it" in err[0]
    assert {p: p.read_bytes() for p in before} == before
    assert not [p for p in tmp_path.iterdir() if ".part" in p.name]
    again = tmp_path / "run.safetensors"                     # a recording of ours is replaced
    for _ in range(2):
        assert main(["record", str(model), "--text", "the dog", "--out", str(again)]) == 0
    capsys.readouterr()


def test_save_recording_refuses_a_foreign_file_unless_replacing_was_confirmed(tmp_path, gpt):
    from attnscope.engine.traces.recording_file import is_recording, save_recording
    from attnscope.engine.traces.tracing import trace_text

    target = tmp_path / "weights.safetensors"
    target.write_bytes(b"not ours")
    trace = trace_text(gpt, "the dog")
    with pytest.raises(RecordingError, match="will not write over it"):
        save_recording(trace, target)
    assert target.read_bytes() == b"not ours"
    save_recording(trace, target, replace=True)                  # the window asked, and the user said yes
    assert is_recording(target)


def test_a_knockout_range_stays_a_range(gpt, capsys):
    """`--knockout 0:0@0-1000000000` built a billion-element tuple (MemoryError): refused now in
    one sentence, with the model's layers, in a few milliseconds of parsing."""
    from attnscope.cli.intervene import knockout_arg
    from attnscope.cli.entry import main

    kind, queries, keys, layers = knockout_arg("0:0@0-1000000000")
    assert isinstance(layers, range) and len(layers) == 1_000_000_001 and queries == (0,)
    assert str(Edge("decoder self", queries, keys, layers)) == "decoder self 0->0 @ 0-1000000000"
    for value, phrase in (("0:0@0-1000000000", "layers are 0 to"), ("0-1000000000:0@0", "query positions here, 0 to"),
                          ("1:0-1000000000@all", "key positions here, 0 to")):
        assert main(["intervene", "random-gpt", "--text", "the dog sees", "--knockout", value]) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and phrase in err[0], err
    assert main(["intervene", "random-gpt", "--text", "the dog sees the cat", "--knockout", "1-3:0-1@0-1"]) == 0
    assert json.loads(capsys.readouterr().out)["interventions"] == ["knockout: decoder self 1-3->0-1 @ 0-1"]


def test_a_query_left_no_key_is_said_in_the_notes(capsys):
    from attnscope.cli.entry import main

    assert main(["intervene", "random-gpt", "--text", "the dog sees the cat", "--knockout", "0:0@0",
                 "--knockout", "2:*@1"]) == 0
    notes = json.loads(capsys.readouterr().out)["notes"]
    assert notes == ["The knockout leaves decoder self query position 0 no key to attend to in layer 0: its attention "
                     "output there is zero.",
                     "The knockout leaves decoder self query position 2 no key to attend to in layer 1: its attention "
                     "output there is zero."]
    assert main(["intervene", "random-gpt", "--text", "the dog sees the cat", "--knockout", "2:0@0"]) == 0
    assert json.loads(capsys.readouterr().out)["notes"] == []          # query 2 still sees keys 1 and 2


def test_a_long_recording_as_a_png_is_estimated_and_refused_with_numbers(tmp_path, capsys):
    from attnscope.cli.entry import main

    path = synthetic_recording(tmp_path / "long.safetensors", 30_000)
    assert main(["export", str(path), "--out", str(tmp_path / "o"), "--max-seconds", "1"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "4 heads x 30,000 x 30,000 positions" in err[0] and "billion scores" in err[0]
    assert not (tmp_path / "o" / "grid.png").exists()


def test_a_runs_trace_says_which_query_the_knockout_left_no_key(gpt):
    from attnscope.engine.traces.tracing import trace_text

    spec = Interventions().block(Edge("decoder self", (0,), (0,), (1,)))
    notes = trace_text(gpt, "the dog sees the cat", interventions=spec).notes
    assert "The knockout leaves decoder self query position 0 no key to attend to in layer 1: its attention output " \
           "there is zero." in notes


@pytest.mark.parametrize("device, phrase", [(42, "a recording opens on a device named"),
                                            ("quantum", "cannot be opened there: unknown device")])
def test_a_recording_on_a_device_that_is_not_one_is_not_called_damaged(tmp_path, device, phrase):
    from attnscope.engine.traces.recording_file import load_recording

    path = synthetic_recording(tmp_path / "r.safetensors", 8)
    with pytest.raises(RecordingError, match=phrase) as err:
        load_recording(path, device)
    assert "damaged" not in one_sentence(err)
