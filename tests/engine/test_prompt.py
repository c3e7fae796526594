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
