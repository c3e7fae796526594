"""Issue 58: a chat template's limits held inside one template line too. Each bypass
(tests/helpers/hostile.py) took gigabytes or hung past 90 s, because the limits were checked by the template's own code between
lines; now the template runs in a child with a memory cap and a hard deadline (chat_process), and
each is refused in one sentence with the child's memory growth under a few hundred MB
(test_chat_templates.py runs them beside the older hostile templates)."""
from __future__ import annotations

import pytest

import attnscope.engine.adapters.chat_limits as limits
import attnscope.engine.adapters.chat_process as process
from attnscope.engine.adapters.chat import chat_ids
from attnscope.engine.inputs import Chat, InputError


def test_compiling_a_huge_template_is_under_the_hard_deadline(tokenizer, monkeypatch):
    monkeypatch.setattr(limits, "MAX_SECONDS", 1.0)
    monkeypatch.setattr(process, "HARD_SECONDS", 2.0)
    monkeypatch.setattr(tokenizer, "chat_template", "{{ 1 }}{% if x %}y{% endif %}" * 2_000_000)   # ~56 MB
    with pytest.raises(InputError) as err:
        chat_ids(tokenizer, Chat.of("hello"), "tiny")
    assert "chat template was stopped" in str(err.value)


def test_a_template_error_is_still_its_first_line(tokenizer, monkeypatch):
    monkeypatch.setattr(tokenizer, "chat_template", "{{ raise_exception('no system role here') }}")
    with pytest.raises(InputError) as err:
        chat_ids(tokenizer, Chat.of("hello"), "tiny")
    assert "could not write this chat (no system role here)" in str(err.value)
