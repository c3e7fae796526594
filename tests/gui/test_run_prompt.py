"""One Run, one request (issue 54, "One Prompt"): the input bar gives one checked Prompt, the
state holds it, and a view's drawing job is built from its options object."""
import pytest

from attnscope.engine.inputs import InputError, Prompt
from attnscope.gui.settings import app_settings
from attnscope.gui.state import AppState
from attnscope.gui.window.input_bar import InputBar


def test_the_bar_gives_one_checked_prompt_and_refuses_no_text_in_one_sentence(qtbot):
    bar = InputBar(app_settings(), "cpu")
    qtbot.addWidget(bar)
    bar.text_edit.setText("  the big dog  ")
    bar.target_edit.setText("der")
    bar.pair_edit.setText("  ")
    prompt = bar.prompt()
    assert prompt == Prompt.of("the big dog", "der") and (prompt.target, prompt.pair) == ("der", None)
    bar.text_edit.setText("   ")
    with pytest.raises(InputError) as err:
        bar.prompt()
    assert str(err.value) == "There is no text to run: type a sentence first."


def test_the_state_holds_one_prompt_and_its_fields_follow_it(qtbot):
    state = AppState()
    prompt = Prompt.of("the big dog", pair="a cat")
    state.set_prompt(prompt)
    assert state.typed is prompt
    assert (state.text, state.target, state.pair, state.chat, state.system) == ("the big dog", "", "a cat", False, "")
    assert state.prompt == "the big dog"
    state.set_prompt(None)
    assert state.typed is None and (state.text, state.pair) == ("", "")

