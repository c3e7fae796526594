"""The window's chat form (issue 40): an instruction-tuned model (a Hugging Face decoder whose
tokenizer has a chat template) gets a "chat" toggle and a system line beside the text box; with
chat on every Run, continuation, Lens, effect and Decoding step reads the prompt through the
template (its turn marks are tokens on the axes); toggling chat is a new prompt, as an edit is;
a model without a template shows no toggle and reads plain text; the toggle and the system turn
are kept across starts."""
import numpy as np
import pytest

import attnscope.gui.window.engine_calls
import attnscope.gui.window.input_bar
import attnscope.gui.window.main_window
import attnscope.gui.views.interventions
from attnscope.engine.inputs import Chat
from attnscope.gui.window.main_window import MainWindow
from tests.helpers.hf_tiny import TURN_TOKENS, tiny_chat_folder, tiny_folder
from tests.helpers.window import open_views
from attnscope.engine.traces import reading

KIND = "decoder self"


@pytest.fixture(scope="module")
def folders(tmp_path_factory):
    """(a tiny Llama with a chat template of our own, the same Llama's folder without one)."""
    return (tiny_chat_folder(tmp_path_factory.mktemp("chat")),
            tiny_folder(tmp_path_factory.mktemp("plain"), "llama"))


def _chat_run(window, qtbot, text="the dog sees the cat", system="be brief"):
    """Chat on, with ``system``, on ``text``; returns once that Run's trace is on screen."""
    window.input_bar.text_edit.setText(text)
    window.input_bar.system_edit.setText(system)
    window.input_bar.chat_box.setChecked(True)       # toggling runs
    qtbot.waitUntil(lambda: window.state.chat and window.state.text == text and not window.run_jobs.busy,
                    timeout=30000)
    return window.state.trace


def test_the_toggle_is_shown_only_for_a_model_with_a_chat_template(window_on, folders, qtbot):
    chat, plain = folders
    gpt = window_on(str(attnscope.gui.window.main_window.catalog.bundled_checkpoints()[1]))
    assert gpt.state.loaded.family == "gpt"
    assert gpt.input_bar.chat_box.isHidden() and gpt.input_bar.system_edit.isHidden()
    w = window_on(str(plain))
    assert w.input_bar.chat_box.isHidden() and w.input_bar.system_edit.isHidden()
    with qtbot.waitSignal(w.state.model_changed, timeout=30000):
        w.opening.open_source(str(chat))
    assert not w.input_bar.chat_box.isHidden()
    assert w.input_bar.system_edit.isHidden()              # the system line comes with chat on
    w.input_bar.chat_box.setChecked(True)
    assert not w.input_bar.system_edit.isHidden() and not w.input_bar.system_label.isHidden()


def test_a_chat_run_is_the_engines_run_of_the_chat(window_on, folders, qtbot):
    from attnscope.engine.decoding.session import model_output
    from attnscope.engine.traces.tracing import trace_text

    w = window_on(str(folders[0]))
    plain = w.state.trace
    assert not any(t in reading.query_tokens(plain, KIND) for t in TURN_TOKENS)     # chat off: the words alone
    trace = _chat_run(w, qtbot)
    assert w.state.prompt == Chat.of("the dog sees the cat", "be brief")
    tokens = reading.query_tokens(trace, KIND)
    assert tokens[:2] == ["<s>", "<|system|>"] and tokens[-1] == "<|assistant|>" and "<|user|>" in tokens
    want = trace_text(w.state.loaded, Chat.of("the dog sees the cat", "be brief"))
    assert tokens == reading.query_tokens(want, KIND)
    np.testing.assert_array_equal(reading.head(trace, KIND, 1, 2), reading.head(want, KIND, 1, 2))
    # the continuation is the chat's: the engine's reply, which stops at the template's end of turn
    qtbot.waitUntil(lambda: w.state.output_for == w.state.trace_id and not w.output_jobs.busy, timeout=30000)
    assert w.output_row.label.text() == model_output(w.state.loaded, Chat.of("the dog sees the cat", "be brief"))


def test_toggling_chat_or_editing_the_system_turn_is_a_new_prompt(window_on, folders, qtbot, monkeypatch):
    w = window_on(str(folders[0]))
    decoding, = open_views(w, "Decoding")
    decoding.step()
    qtbot.waitUntil(lambda: len(decoding.history) == 1 and not decoding.jobs.busy, timeout=30000)
    first = w.state.trace
    trace = _chat_run(w, qtbot, text=w.state.text, system="")
    assert trace is not first and w.state.prompt == Chat.of(w.state.text)
    assert decoding.history == []              # the plain text's steps are another prompt's
    seen = []
    real = attnscope.gui.window.engine_calls.timed_trace
    monkeypatch.setattr(attnscope.gui.window.engine_calls, "timed_trace", lambda loaded, text, *a, **k: (seen.append(text.text),
                                                                                        real(loaded, text, *a, **k))[1])
    w.input_bar.system_edit.setText("be brief")
    w.input_bar.system_edit.textEdited.emit("be brief")     # as typed: live re-runs
    qtbot.waitUntil(lambda: w.state.system == "be brief" and not w.run_jobs.busy, timeout=30000)
    w.input_bar.chat_box.setChecked(False)
    qtbot.waitUntil(lambda: not w.state.chat and not w.run_jobs.busy, timeout=30000)
    assert seen == [Chat.of(w.state.text, "be brief"), w.state.text]
    assert not any(t in reading.query_tokens(w.state.trace, KIND) for t in TURN_TOKENS)


def test_the_lens_the_effect_and_decoding_read_the_chat(window_on, folders, qtbot, monkeypatch):
    from attnscope.engine.interventions.refs import HeadRef

    w = window_on(str(folders[0]))
    lens, panel = open_views(w, "Lens", "Interventions")
    _chat_run(w, qtbot)
    qtbot.waitUntil(lambda: lens.lens is not None and lens.current(), timeout=30000)
    assert lens.lens.tokens[-1] == "<|assistant|>" and "<|system|>" in lens.lens.tokens
    decoding, = open_views(w, "Decoding")          # a tab beside the Lens
    while not decoding.ended:          # this model ends its reply within a few tokens
        decoding.step()
        qtbot.waitUntil(lambda: not decoding.jobs.busy, timeout=30000)
    assert decoding.session.prompt_tokens == reading.query_tokens(w.state.trace, KIND)
    assert decoding.history[-1].token == "<|end|>" and len(decoding.history) < 5   # the turn's end stops it
    asked = []
    real = attnscope.gui.views.interventions._effect
    monkeypatch.setattr(attnscope.gui.views.interventions, "_effect", lambda loaded, text, *a, **k: (asked.append(text),
                                                                                          real(loaded, text, *a, **k))[1])
    w.state.set_interventions(w.state.interventions.ablate([HeadRef(KIND, 0, 1)], "zero"))
    qtbot.waitUntil(lambda: bool(asked) and not panel.jobs.busy and "Next token" in panel.effect.text(), timeout=30000)
    assert asked[-1] == Chat.of("the dog sees the cat", "be brief")


def test_a_model_without_a_template_reads_plain_text_and_a_refusal_is_one_sentence(window_on, folders, qtbot,
                                                                                   monkeypatch):
    w = window_on(str(folders[0]))
    _chat_run(w, qtbot)
    with qtbot.waitSignal(w.state.model_changed, timeout=30000):
        w.opening.open_source(str(folders[1]))
    qtbot.waitUntil(lambda: w.state.trace is not None and not w.run_jobs.busy, timeout=30000)
    assert w.input_bar.chat_box.isHidden() and w.input_bar.chat_box.isChecked()       # kept for the next chat model, unused here
    assert not w.state.chat and w.state.prompt == w.state.text
    assert reading.query_tokens(w.state.trace, KIND)[0] == "<s>" and "<|user|>" not in reading.query_tokens(w.state.trace, KIND)
    # Were the chat form sent anyway, the engine's refusal is the dialog's one sentence.
    monkeypatch.setattr(attnscope.gui.window.input_bar, "reads_chat", lambda loaded: True)
    w.input_bar.system_edit.setText("x")
    w.run()
    qtbot.waitUntil(lambda: w.last_error is not None and not w.run_jobs.busy, timeout=30000)
    assert "no chat template" in w.last_error and "\n" not in w.last_error


def test_the_chat_toggle_and_system_turn_are_kept_across_starts(folders, qtbot, tmp_path, monkeypatch):
    monkeypatch.setenv("ATTNSCOPE_SETTINGS", str(tmp_path / "s.ini"))
    w = MainWindow(source=str(folders[0]), device="cpu")
    qtbot.addWidget(w)
    qtbot.waitUntil(lambda: w.state.trace is not None, timeout=30000)
    assert not w.input_bar.chat_box.isChecked()
    w.input_bar.chat_box.setChecked(True)
    w.input_bar.system_edit.setText("answer in German")
    qtbot.waitUntil(lambda: not w.run_jobs.busy, timeout=30000)
    w.close()
    w2 = MainWindow(source=str(folders[0]), device="cpu")
    qtbot.addWidget(w2)
    assert w2.input_bar.chat_box.isChecked() and w2.input_bar.system_edit.text() == "answer in German"
    qtbot.waitUntil(lambda: w2.state.trace is not None and not w2.run_jobs.busy, timeout=30000)
    assert w2.state.prompt == Chat.of(w2.state.text, "answer in German")     # the first Run is a chat
    w2.close()


def test_patching_reads_both_texts_as_chats_and_a_toggle_makes_its_result_stale(window_on, folders, qtbot):
    w = window_on(str(folders[0]))
    _chat_run(w, qtbot)
    w.docks["Patching"].show()
    w.docks["Patching"].raise_()
    p = w.dock_layout.view("Patching")
    p.clean_edit.setText("the dog sees the cat")
    p.corrupt_edit.setText("the cat sees the dog")
    qtbot.waitUntil(lambda: p.answer_box.count() > 1 and not p.answer_jobs.busy, timeout=30000)
    p.wrong_box.setCurrentIndex(1)
    p.run()
    qtbot.waitUntil(lambda: p.result is not None and not p.jobs.busy, timeout=60000)
    assert p.result.tokens["clean"] == reading.query_tokens(w.state.trace, KIND)     # the chat the window ran
    assert p.current() and not p.mark.isVisible()
    w.input_bar.chat_box.setChecked(False)
    qtbot.waitUntil(lambda: not w.state.chat and not w.run_jobs.busy, timeout=30000)
    assert not p.current() and p.mark.isVisible()        # the same words, another prompt
