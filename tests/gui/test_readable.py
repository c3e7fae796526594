"""Readable on any screen: token labels never overlap at any size, and every map says what
its colours mean (a colorbar with its range)."""
import numpy as np
import pyqtgraph as pg
import pytest
from PySide6.QtWidgets import QApplication, QToolTip

from attnscope.gui.state import AppState

TOKENS = [f"w{i}" + "x" * (i % 9) for i in range(150)]


def _pixel_centres(axis, vb, horizontal: bool) -> list[float]:
    levels = axis._tickLevels or [[]]
    points = [vb.mapViewToScene(pg.Point(v, 0) if horizontal else pg.Point(0, v)) for v, _ in levels[0]]
    return sorted(p.x() if horizontal else p.y() for p in points)


def _assert_apart(centres: list[float], size: float) -> None:
    gaps = np.diff(centres)
    assert len(centres) >= 2 and (gaps >= size - 0.5).all(), (len(centres), gaps.min() if len(gaps) else None)


@pytest.mark.parametrize("width", [320, 480, 640, 900, 1280, 1920])
def test_token_matrix_labels_never_overlap(qtbot, width):
    from attnscope.gui.widgets.token_matrix import TokenMatrix

    view = TokenMatrix(AppState())
    qtbot.addWidget(view)
    view.resize(width, int(width * 0.6))
    view.show()
    view.show_matrix(np.random.default_rng(0).random((150, 150)), TOKENS, TOKENS)
    QApplication.processEvents()
    line = view.fontMetrics().height()
    _assert_apart(_pixel_centres(view.item.getAxis("left"), view.item.vb, horizontal=False), line)
    _assert_apart(_pixel_centres(view.key_axis, view.item.vb, horizontal=True), line)


@pytest.mark.parametrize("height", [300, 500, 800, 1080])
def test_head_lines_labels_never_overlap(qtbot, drawn, height):
    from attnscope.engine.traces.dense import DenseTrace
    from attnscope.gui.views.head_lines import HeadLines

    w = np.random.default_rng(1).random((2, 2, 150, 150)).astype(np.float32)
    w /= w.sum(-1, keepdims=True)
    state = AppState()
    state.set_trace(DenseTrace("t", "bert", {"encoder self": w}, source_tokens=TOKENS))
    view = HeadLines(state)
    qtbot.addWidget(view)
    view.resize(700, height)
    view.show()
    drawn(view)
    QApplication.processEvents()
    line = view.fontMetrics().height()
    for side in ("left", "right"):
        _assert_apart(_pixel_centres(view.item.getAxis(side), view.item.vb, horizontal=False), line)


def test_every_map_has_a_colorbar(qtbot, drawn):
    from attnscope.gui.window.main_window import MainWindow

    window = MainWindow(source="random-translator", device="cpu")
    qtbot.addWidget(window)
    window.show()
    qtbot.waitUntil(lambda: window.state.trace is not None, timeout=20000)
    for title in window.docks:
        window.dock_layout.view(title)
    decoding = window.views["Decoding"]
    decoding.step()
    qtbot.waitUntil(lambda: len(decoding.history) == 1 and not decoding.jobs.busy, timeout=20000)
    window.views["Positions"].show()
    QApplication.processEvents()
    without = []
    for title, view in window.views.items():
        images = [i for g in view.findChildren(pg.GraphicsView) for i in g.scene().items() if isinstance(i, pg.ImageItem)]
        if isinstance(view, pg.GraphicsView):
            images += [i for i in view.scene().items() if isinstance(i, pg.ImageItem)]
        scenes = {i.scene() for i in images}
        for scene in scenes:
            if not any(isinstance(i, pg.ColorBarItem) for i in scene.items()):
                without.append(title)
    assert without == []
    window.close()


def test_the_window_explains_itself(qtbot):
    from attnscope.gui.window.help import HelpButton, PAGES
    from attnscope.gui.window.main_window import MainWindow
    from attnscope.gui.widgets.tooltips import controls

    window = MainWindow(source="random-translator", device="cpu")
    qtbot.addWidget(window)
    for title in window.docks:
        window.dock_layout.view(title)
    bare = [(title, type(c).__name__) for title, view in window.views.items() for c in controls(view)
            if not c.toolTip()]
    bare += [("main", type(c).__name__) for c in controls(window.centralWidget()) if not c.toolTip()]
    assert bare == []
    for title, view in window.views.items():     # each view: a "?" that opens its page
        button = view.findChild(HelpButton)
        assert button is not None and title in PAGES
        button.click()
        assert window.help_dialog.isVisible() and window.help_dialog.pages.currentItem().text() == title
    assert "a row is a query" in PAGES["Head detail"] and "cross" in PAGES["Kinds of attention"]
    window.close()


def test_presentation_mode_is_larger_everywhere_and_kept(qtbot, tmp_path, monkeypatch):
    from attnscope.gui.window.main_window import MainWindow
    from attnscope.gui.theme import PRESENTATION_SCALE

    monkeypatch.setenv("ATTNSCOPE_SETTINGS", str(tmp_path / "s.ini"))
    w = MainWindow(source="random-translator", device="cpu")
    qtbot.addWidget(w)
    detail = w.dock_layout.view("Head detail")
    qtbot.waitUntil(lambda: bool(w.grid.labels), timeout=30000)   # L0, H0 made before the switch
    before = QApplication.font().pointSizeF()
    w.presentation_action.setChecked(True)
    try:
        assert QApplication.font().pointSizeF() == pytest.approx(before * PRESENTATION_SCALE)
        assert detail.item.getAxis("left").style["tickFont"].pointSizeF() == pytest.approx(before * PRESENTATION_SCALE)
        large = before * PRESENTATION_SCALE
        assert [label.textItem.font().pointSizeF() for label in w.grid.labels] == [pytest.approx(large)] * len(w.grid.labels)
        assert detail.item.getAxis("left").labelStyle["font-size"] == f"{large:.0f}pt"   # "query"
        assert QToolTip.font().pointSizeF() == pytest.approx(large)                      # the hover tip
        lines = w.dock_layout.view("Head lines")                       # built after the switch: large too
        assert lines.item.getAxis("left").style["tickFont"].pointSizeF() == pytest.approx(before * PRESENTATION_SCALE)
        w.close()
        w2 = MainWindow(source="random-translator", device="cpu")
        qtbot.addWidget(w2)
        assert w2.presentation_action.isChecked()
        w2.presentation_action.setChecked(False)
        assert QApplication.font().pointSizeF() == pytest.approx(before)
        w2.close()
    finally:
        from attnscope.gui.theme import apply_font
        apply_font(False)


def test_zooming_in_labels_more_tokens_without_overlap(qtbot):
    from attnscope.gui.widgets.token_matrix import TokenMatrix

    view = TokenMatrix(AppState())
    qtbot.addWidget(view)
    view.resize(640, 400)
    view.show()
    view.show_matrix(np.random.default_rng(0).random((150, 150)), TOKENS, TOKENS)
    QApplication.processEvents()
    whole = len(view.item.getAxis("left")._tickLevels[0])
    view.item.vb.setRange(xRange=(0, 20), yRange=(0, 20), padding=0)      # what the mouse wheel does
    QApplication.processEvents()
    ticks = view.item.getAxis("left")._tickLevels[0]
    step = ticks[1][0] - ticks[0][0]
    assert step < 150 / whole and step == int(step)
    line = view.fontMetrics().height()
    centres = [c for c in _pixel_centres(view.item.getAxis("left"), view.item.vb, horizontal=False)
               if view.item.vb.sceneBoundingRect().top() <= c <= view.item.vb.sceneBoundingRect().bottom()]
    _assert_apart(centres, line)


def test_menus_and_tables_say_what_is_there(qtbot, drawn):
    from attnscope.gui.window.main_window import MainWindow

    w = MainWindow(source="random-gpt", device="cpu")
    qtbot.addWidget(w)
    qtbot.waitUntil(lambda: w.state.trace is not None, timeout=20000)
    checked = [a.text() for a in w.model_menu.actions() if a.isChecked()]
    assert checked == ["Untrained gpt (random weights)"]
    stats = w.dock_layout.view("Head statistics")
    drawn(stats)
    columns = [stats.table.horizontalHeaderItem(c).text() for c in range(stats.table.columnCount())
               if not stats.table.isColumnHidden(c)]
    assert "cls" not in columns and "sep" not in columns and "entropy" in columns   # a GPT has neither
    assert [stats.row_head(r)[0] for r in range(stats.table.rowCount())] == sorted(
        stats.row_head(r)[0] for r in range(stats.table.rowCount()))                 # layer 0 first
    w.close()


def test_byte_tokens_that_are_not_whole_characters_read_as_their_bytes(tmp_path):
    """Issue 40: a byte piece holding part of a UTF-8 character (an emoji is four) was drawn as a
    "?" box; it reads <0xNN>, and pieces that are whole characters read as themselves."""
    from transformers import AutoTokenizer

    from attnscope.engine.adapters.hf_text import byte_labels, readable_tokens
    from attnscope.engine.models.tokenizer import ByteTokenizer
    from tests.helpers.hf_tiny import tiny_folder

    tok = AutoTokenizer.from_pretrained(str(tiny_folder(tmp_path, "llama")))      # byte-level BPE
    labels = readable_tokens(tok, tok("the dog 😀 café", add_special_tokens=False)["input_ids"])
    assert "\ufffd" not in "".join(labels)
    assert [t.removeprefix("##") for t in labels if "<0x" in t][:4] == ["<0xF0>", "<0x9F>", "<0x98>", "<0x80>"]
    assert labels[:2] == ["the", "dog"]
    assert byte_labels("<0xc3>", "\ufffd") == "<0xC3>"                            # sentencepiece's byte fallback
    assert byte_labels("Ġd\u00c3", " d\ufffd") == " d<0xC3>"                       # a whole character and a byte
    assert byte_labels("\ufffd", "\ufffd") == "\ufffd"                             # a real replacement character
    assert ByteTokenizer(256).tokens(list("é!".encode())) == ["<0xC3>", "<0xA9>", "!"]


def test_an_output_that_ends_inside_a_character_reads_its_bytes(tmp_path):
    """Walked as a user: a random Llama's continuation read "~N~N�~��" on the output line. The
    output line and the Decoding panel decode with the axes' rule: a byte that makes no whole
    character reads <0xNN>; a whole character made of byte pieces, and every other piece, read
    as the tokenizer's own decode writes them."""
    from transformers import AutoTokenizer

    from attnscope.engine.adapters.hf_text import HFTokens, readable_tokens
    from attnscope.engine.models.tokenizer import ByteTokenizer
    from tests.helpers.hf_tiny import tiny_folder

    tok = AutoTokenizer.from_pretrained(str(tiny_folder(tmp_path, "llama")))      # byte-level BPE
    ids = tok("the dog 😀 café", add_special_tokens=False)["input_ids"]
    words = HFTokens(tok)
    assert words.decode(ids) == tok.decode(ids, skip_special_tokens=True)           # whole characters: unchanged
    byte_pieces = [j for j, i in enumerate(ids) if "\ufffd" in tok.decode([i])]     # the emoji's 4, then é's 2
    cut = ids[:byte_pieces[3]] + ids[byte_pieces[3] + 1:]                           # the emoji's last byte lost
    assert "\ufffd" in tok.decode(cut)
    assert words.decode(cut) == tok.decode(ids).replace("😀", "<0xF0><0x9F><0x98>")
    assert ByteTokenizer(256).decode(list("é!".encode())[1:]) == "<0xA9>!"
    control = tok("a\x1fb\tc", add_special_tokens=False)["input_ids"]                # a control byte: no empty box
    assert words.decode(control) == tok.decode(control).replace("\x1f", "<0x1F>") and "\t" in words.decode(control)
    assert "<0x1F>" in "".join(readable_tokens(tok, control))
