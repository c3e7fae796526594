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




def test_a_views_job_is_built_from_its_options_object_not_its_widgets():
    """Each job builder reads the view's options object (view.option_binding.options) and no
    widget: asked on a stand-in that has the options and no widgets at all, it builds the job."""
    from types import SimpleNamespace

    from attnscope.gui.views.decoding import DecodingOptions, DecodingPanel
    from attnscope.gui.views.head_detail import HeadDetail, HeadDetailOptions
    from attnscope.gui.views.head_grid import HeadGrid, OverviewOptions
    from attnscope.gui.views.training import TrainingOptions, TrainingPanel

    def bare(options, **fields):
        return SimpleNamespace(option_binding=SimpleNamespace(options=options), **fields)

    s = DecodingPanel.settings(bare(DecodingOptions(strategy="sample", seed=7, top_k=40)))
    assert (s.strategy, s.seed, s.top_k) == ("sample", 7, 40)
    c = TrainingPanel.config(bare(TrainingOptions(family="gpt", size="small", steps=900, lr=0.002, probe_every=25),
                                  probe_text=SimpleNamespace(text=lambda: "a probe")))
    assert (c.size, c.steps, c.lr, c.probe_every, c.probe_text) == ("small", 900, 0.002, 25, "a probe")
    trace = object()
    job = HeadDetail.drawing_job(bare(HeadDetailOptions(how="max of heads", threshold=0.1, log_colour=True),
                                      trace=trace, kind="decoder self", layer=1, head=2))
    assert job[1:] == (trace, "decoder self", 1, 2, "max of heads", False, 0.1, False, True)
    job = HeadGrid.drawing_job(bare(OverviewOptions(threshold=0.3, log_colour=True), trace=trace, kind="decoder self",
                                    drawing=None))
    assert job[1:] == (trace, "decoder self", 0.3, True, None)
