"""The window's smaller promises (issue 40): Save Recording asks before replacing a file, the
Decoding panel keeps its place when the interventions change, Head detail frames what is
knocked out and says when its head is off, Go to token finds a word split in pieces, the
Model menu ticks a folder's model, the status bar says the weights' type."""
from pathlib import Path
import shutil

import numpy as np
from PySide6.QtWidgets import QFileDialog, QMessageBox

from attnscope.engine.interventions import HeadRef
from attnscope.engine.interventions.refs import Edge
from attnscope.engine.interventions.spec import Interventions
from attnscope.engine.kinds import DECODER_SELF
from attnscope.engine.traces.recording_file import is_recording
from attnscope.gui.views.head_detail import find_tokens
from attnscope.gui.drawing.knockout_marks import knockout_rects

ROOT = Path(__file__).resolve().parents[2]


def _show(window, title):
    window.docks[title].show()
    window.docks[title].raise_()
    return window.dock_layout.view(title)


def test_save_recording_asks_before_replacing_a_model_and_keeps_it_on_no(window, qtbot, tmp_path, monkeypatch):
    model = tmp_path / "model.safetensors"
    shutil.copy(ROOT / "resources/checkpoints/gpt.safetensors", model)
    before = model.read_bytes()
    asked = []
    monkeypatch.setattr(QFileDialog, "getSaveFileName", lambda *a, **k: (str(tmp_path / "model"), ""))
    monkeypatch.setattr(QMessageBox, "question", lambda *a, **k: (asked.append(a[2]), QMessageBox.StandardButton.No)[1])
    window.recordings.save_dialog()              # "model" typed: written as model.safetensors, the checkpoint
    qtbot.waitUntil(lambda: not window.save_jobs.busy, timeout=20000)
    assert asked and "not a recording" in asked[0] and model.read_bytes() == before
    monkeypatch.setattr(QMessageBox, "question", lambda *a, **k: QMessageBox.StandardButton.Yes)
    window.recordings.save_dialog()              # asked, and told yes: replaced by the recording
    qtbot.waitUntil(lambda: is_recording(model) and not window.save_jobs.busy, timeout=20000)


def test_save_recording_never_replaces_a_file_of_the_open_hub_model(window_on, qtbot, tmp_path, monkeypatch):
    """Walked as a user: with a sharded Llama opened from the Hugging Face cache, Save Recording
    over one of its shards only asked (No by default); a file the open model is read from is
    refused in one sentence, asking nothing."""
    from tests.helpers.hf_sharded import build_model, put_in_cache, save_sharded

    cache = tmp_path / "hub"
    monkeypatch.setenv("HF_HUB_CACHE", str(cache))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    snapshot = put_in_cache(save_sharded(*build_model("llama"), tmp_path / "folder"), cache, "walk/tiny-llama")
    w = window_on("walk/tiny-llama")
    shard = sorted(snapshot.glob("model-*-of-*.safetensors"))[0]      # a link to its blob, as the hub makes it
    before = shard.read_bytes()
    asked, errors = [], []
    monkeypatch.setattr(QFileDialog, "getSaveFileName", lambda *a, **k: (str(shard), ""))
    monkeypatch.setattr(QMessageBox, "question", lambda *a, **k: asked.append(a) or QMessageBox.StandardButton.Yes)
    monkeypatch.setattr(w, "show_error", lambda title, exc: errors.append(str(exc)))
    w.recordings.save_dialog()
    assert not asked and not w.save_jobs.busy and shard.read_bytes() == before
    assert len(errors) == 1 and "the model open now, or one of its files" in errors[0]


def test_clear_all_keeps_the_decoding_step_on_screen(window_on, qtbot):
    w = window_on("random-gpt")
    panel = _show(w, "Decoding")
    for n in (1, 2, 3):
        panel.step()
        qtbot.waitUntil(lambda: len(panel.history) == n and not panel.jobs.busy, timeout=20000)
    w.state.set_interventions(w.state.interventions.ablate([HeadRef(DECODER_SELF, 0, 1)], "zero"))
    qtbot.waitUntil(lambda: len(panel.history) == 3 and not panel.jobs.busy, timeout=20000)
    assert panel.index == 2 and panel.history[-1].diff is not None      # the changed model, same place
    w.dock_layout.view("Interventions").clear_button.click()
    qtbot.waitUntil(lambda: len(panel.history) == 3 and not panel.jobs.busy, timeout=20000)
    assert panel.index == 2 and panel.history[-1].diff is None


def test_head_detail_frames_knockouts_and_says_its_head_is_off(window_on, qtbot, drawn):
    w = window_on("random-gpt")
    detail = _show(w, "Head detail")
    w.state.select(DECODER_SELF, 0, 1)
    spec = Interventions().block(Edge(DECODER_SELF, (3,), None, (0,))).ablate([HeadRef(DECODER_SELF, 0, 1)])
    old = w.state.trace
    w.state.set_interventions(spec)
    qtbot.waitUntil(lambda: w.state.trace is not old and not w.run_jobs.busy, timeout=20000)
    drawn(detail)
    rect = detail.knockout_item.path().boundingRect()
    assert (rect.top(), rect.height()) == (3, 1) and rect.width() == detail.matrix.shape[1]   # row 3, every key
    assert "switched off" in detail.intervention_note.text() and "knocked out" in detail.intervention_note.text()
    w.state.select(head=2)
    drawn(detail)
    assert "switched off" not in detail.intervention_note.text()


def test_knockout_frames_follow_merged_words_and_never_walk_a_huge_range():
    class Trace:      # 5 pieces, 3 words (a decoder: queries and keys are the same pieces)
        source_tokens, target_tokens = [], ["a", "b", "c"]

        class recording:   # the capability that says how pieces merge into words
            pieces = {"source": [], "target": ["a", "##x", "b", "c", "##y"]}
            groups = {"target": [0, 0, 1, 2, 2]}
    spec = Interventions().block(Edge(DECODER_SELF, (1, 2), range(0, 10**9), None))
    rects = knockout_rects(spec, Trace(), DECODER_SELF, 4, np.arange(3), np.arange(3))
    assert rects == [(0, 0, 3, 2)]       # pieces 1 and 2: words 0 and 1; every key word


def test_go_to_token_finds_a_word_split_in_pieces_and_parts_of_words():
    tokens = ["The", " we", "ather", " is", " fine", ";", " dogs", " bark"]
    assert find_tokens(tokens, "weather") == (1, 2)
    assert find_tokens(tokens, "dog") == (6, 6)
    assert find_tokens(tokens, "is") == (3, 3)                    # a whole token before a part of one
    assert find_tokens(tokens, "ark", after=6) == (7, 7)
    assert find_tokens(tokens, "zebra") == (None, None)


def test_the_model_menu_ticks_a_folder_model_and_the_status_says_its_weights(window_on, qtbot, tmp_path):
    from tests.helpers.hf_tiny import tiny_folder

    folder = tiny_folder(tmp_path, "llama")
    w = window_on("random-gpt")
    old = w.state.loaded
    w.opening.open_source(str(folder))                  # from another model, as a user opens one after the first
    qtbot.waitUntil(lambda: w.state.loaded is not old and w.state.trace is not None, timeout=30000)
    ticked = [a.text() for a in w.model_menu.actions() if a.isChecked()]
    assert ticked == [f"{w.state.loaded.name} (open now)"]      # the walk saw the old model's name ticked
    assert "fp32" in w.status_line.params_label.text()


def test_open_recording_refuses_a_checkpoint_and_points_to_open_checkpoint():
    import pytest

    from attnscope.engine.traces.recording_file import RecordingError
    from attnscope.gui.window.engine_calls import open_recording as _open_recording

    with pytest.raises(RecordingError, match="File > Open Checkpoint"):
        _open_recording(str(ROOT / "resources/checkpoints/gpt.safetensors"))


def test_every_file_dialog_starts_in_the_folder_last_used_for_its_purpose(window_on, qtbot, tmp_path, monkeypatch):
    """Issue 40: file dialogs started in odd folders. Walked again: Compare's model B, Training's
    checkpoint, time-lapse and corpus dialogs still opened in the process's working folder.
    Every one starts where a file of its kind was last chosen, else the home folder, and
    remembers the folder chosen."""
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    (tmp_path / "home").mkdir()
    models, texts = tmp_path / "models", tmp_path / "texts"
    for folder in (models, texts):
        folder.mkdir()
    w = window_on("random-gpt")
    compare, training = _show(w, "Compare"), _show(w, "Training")
    asked = []

    def chosen(answer):
        def dialog(_parent, _title, start, *_rest, **_kw):
            asked.append(str(start))
            return answer
        return dialog

    monkeypatch.setattr(compare, "set_b", lambda _source: None)            # only the dialogs are looked at here
    monkeypatch.setattr(compare, "run", lambda: None)
    monkeypatch.setattr(training, "load_timelapse", lambda _path: None)
    monkeypatch.setattr(QFileDialog, "getExistingDirectory", chosen(str(models)))
    monkeypatch.setattr(QFileDialog, "getOpenFileName", chosen((str(models / "b.safetensors"), "")))
    compare._open_b_folder()                   # first: the home folder; the chosen folder remembered
    compare._open_b()                          # a model's dialog now starts there
    training.open_timelapse_dialog()
    monkeypatch.setattr(QFileDialog, "getOpenFileName", chosen((str(texts / "corpus.txt"), "")))
    training._browse()                         # a text's purpose: home first, then its own folder
    training._browse()
    assert asked == [str(tmp_path / "home"), str(models), str(models), str(tmp_path / "home"), str(texts)]
    assert not any(a in ("", ".") for a in asked)
