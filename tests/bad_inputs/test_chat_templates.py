"""Issue 46: a chat template is the model author's code, run with limits on its output, its
repetitions and its time, and refused in one sentence past them (a 30 MB output aborted the
whole process in the Rust tokenizer; 'xy ' * 1000000000 took 6 GB; two nested range(100000)
loops hung; a template that writes nothing gave an internal error in lens)."""
from __future__ import annotations

import pytest

from attnscope.engine.adapters.chat import chat_ids
from attnscope.engine.inputs import Chat, InputError
from tests.helpers.hostile import BYPASSES
from tests.helpers.hf_tiny import CHAT_TEMPLATE

HOSTILE = {
    "30 MB of output": "{% for i in range(100000) %}{{ 'x' * 300 }}{% endfor %}",
    "a billion-fold repetition": "{{ 'xy ' * 1000000000 }}",
    "nested loops that write nothing": "{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}"
                                       "{% endfor %}x",
    **BYPASSES,                       # issue 58: inside one line, past the limits checked between lines
}


@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_a_hostile_template_is_stopped_in_one_sentence(tokenizer, name, monkeypatch):
    import attnscope.engine.adapters.chat_limits as limits
    import attnscope.engine.adapters.chat_process as process

    monkeypatch.setattr(limits, "MAX_SECONDS", 1.0)
    monkeypatch.setattr(process, "HARD_SECONDS", 3.0)
    monkeypatch.setattr(tokenizer, "chat_template", HOSTILE[name])
    with pytest.raises(InputError) as err:
        chat_ids(tokenizer, Chat.of("hello"), "tiny")
    said = str(err.value)
    assert "\n" not in said and "chat template was stopped" in said and "maximum recursion" not in said, said
    assert process.last_peak_growth[0] < 400 << 20          # the child's memory past its parent's


def test_a_template_that_writes_nothing_is_one_sentence(tokenizer, monkeypatch):
    monkeypatch.setattr(tokenizer, "chat_template", "{% if false %}x{% endif %}")
    with pytest.raises(InputError) as err:
        chat_ids(tokenizer, Chat.of("hello"), "tiny")
    assert "wrote nothing" in str(err.value)


def test_a_real_template_reads_as_transformers_reads_it(tokenizer):
    chat = Chat.of("the big dog", system="You are a helpful assistant.")
    assert tokenizer.chat_template == CHAT_TEMPLATE
    want = tokenizer.apply_chat_template(chat.messages, add_generation_prompt=True, tokenize=True, return_dict=True)
    assert chat_ids(tokenizer, chat, "tiny") == list(want["input_ids"])
