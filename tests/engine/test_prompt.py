"""One Prompt: checked once at construction, prepared once, and never checked again by an
entry point given the prepared request (issue 54, "One Prompt")."""
from __future__ import annotations

import pytest

import attnscope.engine.adapters.base as adapters_base
import attnscope.engine.adapters.chat as adapters_chat
from attnscope.engine.adapters import Prepared
from attnscope.engine.decoding.greedy import request
from attnscope.engine.inputs import Chat, InputError, Prompt
from attnscope.engine.loading.demo import random_model
from attnscope.engine.traces.tracing import trace_text


def test_a_bad_prompt_is_refused_at_construction_in_one_sentence():
    for text, target, pair in (("   ", None, None), (b"\xff", None, None), ("ok", Chat.of("no"), None),
                               (Chat(()), None, None), ("ok", None, 3)):
        with pytest.raises(InputError) as err:
            Prompt.of(text, target, pair)
        said = str(err.value)
        assert "\n" not in said and said.endswith(".") and said[0].isupper()


def test_a_prompt_is_frozen_and_keeps_its_checked_fields():
    prompt = Prompt.of("  the big dog  ", target="  ", pair="a cat")
    assert (prompt.text, prompt.target, prompt.pair, prompt.chat) == ("the big dog", None, "a cat", False)
    assert Prompt.of(prompt) is prompt
    with pytest.raises(AttributeError):
        prompt.text = "other"


@pytest.mark.parametrize("family", ["gpt", "translator", "bert"])
def test_an_entry_point_given_a_prepared_request_does_not_check_again(family, monkeypatch):
    loaded = random_model(family)
    prepared = request(loaded, Prompt.of("the big dog sees the cat ."))
    assert isinstance(prepared, Prepared) and prepared.loaded is loaded and prepared.framed.target_ids + \
        prepared.framed.source_ids
    calls = []

    def counted(*args, **kwargs):
        calls.append(args)
        raise AssertionError("the door was reopened")
    monkeypatch.setattr(adapters_base, "check_prompt", counted)
    monkeypatch.setattr(adapters_chat, "check_prompt", counted)
    assert request(loaded, prepared) is prepared
    assert trace_text(loaded, prepared) is not None and calls == []


def test_a_plain_text_is_checked_once_on_its_way_in(monkeypatch):
    loaded, calls = random_model("gpt"), []
    real = adapters_base.check_prompt

    def counted(*args, **kwargs):
        calls.append(args)
        return real(*args, **kwargs)
    monkeypatch.setattr(adapters_base, "check_prompt", counted)
    trace_text(loaded, "the big dog")
    assert len(calls) == 1


def _door_shut(monkeypatch) -> list:
    """check_prompt made to fail wherever an entry point could reach it; the calls it got."""
    import attnscope.engine.decoding.greedy as greedy

    calls = []

    def counted(*args, **kwargs):
        calls.append(args)
        raise AssertionError("the door was reopened")
    for module in (adapters_base, adapters_chat, greedy):
        monkeypatch.setattr(module, "check_prompt", counted)
    return calls


@pytest.mark.parametrize("family", ["gpt", "translator"])
def test_every_converted_door_given_a_prepared_request_does_not_check_again(family, monkeypatch):
    """The decoding session, the model's output, the next tokens of a pair, the effect of an
    intervention, the logit lens and why a head attends each read the prepared request's
    checked text, adapter and framing, and never call check_prompt again (issue 54)."""
    from attnscope.engine.decoding.records import DecodeSettings
    from attnscope.engine.decoding.session import DecodeSession, decode_all, model_output
    from attnscope.engine.experiments.pairs import next_tokens
    from attnscope.engine.experiments.score_split import why
    from attnscope.engine.interventions import HeadRef, Interventions
    from attnscope.engine.interventions.effect import intervention_effect
    from attnscope.engine.interventions.lens import logit_lens
    from attnscope.engine.kinds import DECODER_SELF

    loaded = random_model(family)
    prepared = request(loaded, Prompt.of("the big dog sees the cat ."))
    calls = _door_shut(monkeypatch)
    settings = DecodeSettings(max_new_tokens=3)
    assert DecodeSession(loaded, prepared, settings).prompt_tokens
    assert decode_all(loaded, prepared, settings).steps
    assert isinstance(model_output(loaded, prepared, 3), str)
    assert len(next_tokens(loaded, prepared, k=2)) >= 2
    spec = Interventions(ablated=((HeadRef(DECODER_SELF, 0, 0), "zero"),))
    assert intervention_effect(loaded, prepared, spec, k=2).after
    assert logit_lens(loaded, prepared, k=2).n_layers >= 1
    t = len(prepared.framed.target_ids)
    assert why(loaded, prepared, DECODER_SELF, 0, 0, t - 1, 0) is not None
    assert calls == []


def test_a_prompt_given_to_a_door_is_checked_for_the_model_once(monkeypatch):
    """A Prompt (checked as text) still meets the model's door once: a chat for a model that
    reads none is refused in one sentence, whatever entry point it reaches."""
    from attnscope.engine.decoding.session import model_output

    loaded = random_model("gpt")
    with pytest.raises(InputError) as err:
        model_output(loaded, Prompt.of(Chat.of("hello there")), 3)
    assert "chat" in str(err.value)


def test_a_target_beside_a_prompt_is_refused_not_dropped():
    """A Prompt carries its target and pair: one given beside it would be silently lost."""
    loaded = random_model("translator")
    with pytest.raises(InputError) as err:
        trace_text(loaded, Prompt.of("the big dog"), target="der")
    assert "Prompt.of" in str(err.value) and "\n" not in str(err.value)
    assert trace_text(loaded, Prompt.of("the big dog", target="der"), target="  ") is not None
