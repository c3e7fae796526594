"""The text box holds a file's text as it is, and a Run reads what the command line reads
(issue 45, item 5: Open Text File collapsed every run of whitespace into one space, so the 22
newlines of a 4k-token file became other tokens, weights off by up to 0.0081 from
``attnscope export --text-file`` on the same file)."""
from __future__ import annotations

import numpy as np
import pytest
from PySide6.QtCore import Qt

from attnscope.engine.inputs import read_utf8
from attnscope.engine.traces.tracing import trace_text
from tests.helpers.hf_tiny import tiny_folder
from attnscope.engine.traces import reading

BODY = "the big dog\n\tsees the  small cat .\n\nfruit flies\u00a0like a banana .\n"


@pytest.fixture(scope="module")
def llama(tmp_path_factory):
    return tiny_folder(tmp_path_factory.mktemp("text_box"), "llama")


def test_open_text_file_runs_the_files_text_as_the_command_line_reads_it(window_on, llama, qtbot, tmp_path):
    w = window_on(str(llama))
    path = tmp_path / "text.txt"
    path.write_text(BODY, encoding="utf-8")
    w.input_bar.open_text(str(path))
    # the state holds the Run's Prompt: the file's text through the engine's one door (its edges
    # stripped, as `--text-file` reads it); the text box keeps the file as it is
    qtbot.waitUntil(lambda: not w.state.pending and w.state.text == BODY.strip(), timeout=30000)
    assert w.input_bar.text_edit.text() == BODY == read_utf8(path)          # tabs, line breaks, two spaces, nbsp
    cli = trace_text(w.state.loaded, read_utf8(path))              # what --text-file reads (cli.common.text_of)
    kind = cli.kinds[0]
    assert reading.query_tokens(w.state.trace, kind) == reading.query_tokens(cli, kind)
    np.testing.assert_array_equal(reading.weights(w.state.trace, kind), reading.weights(cli, kind))
    # and the command itself: `attnscope export --text-file` of one head, as the window has it
    from attnscope.cli.entry import main
    out = tmp_path / "out"
    assert main(["export", str(llama), "--text-file", str(path), "--format", "npz", "--view", "head",
                 "--kind", kind, "--layer", "1", "--head", "2", "--out", str(out)]) == 0
    with np.load(next(out.glob("*.npz"))) as written:
        assert list(written["query_tokens"]) == reading.query_tokens(w.state.trace, kind)
        np.testing.assert_allclose(written["weights"], reading.head(w.state.trace, kind, 1, 2), atol=1e-6)


def test_line_breaks_and_tabs_show_and_return_runs_while_shift_return_breaks_the_line(qtbot):
    from PySide6.QtGui import QTextOption

    from attnscope.gui.widgets.text_box import TextBox

    box = TextBox()
    qtbot.addWidget(box)
    box.show()
    one_line = box.sizeHint().height()
    box.setText("a\tb\nc")
    flags = box.document().defaultTextOption().flags()
    assert flags & QTextOption.Flag.ShowLineAndParagraphSeparators and flags & QTextOption.Flag.ShowTabsAndSpaces
    assert box.sizeHint().height() > one_line                      # two lines shown, not one cut
    edits, runs = [], []
    box.textEdited.connect(edits.append)
    box.returnPressed.connect(lambda: runs.append(True))
    assert not edits                                               # setText is not an edit
    box.moveCursor(box.textCursor().MoveOperation.End)
    qtbot.keyClick(box, Qt.Key.Key_Return)
    assert runs == [True] and box.text() == "a\tb\nc"
    qtbot.keyClick(box, Qt.Key.Key_Return, Qt.KeyboardModifier.ShiftModifier)
    qtbot.keyClicks(box, "d")
    assert box.text() == "a\tb\nc\nd" and edits[-1] == "a\tb\nc\nd" and runs == [True]


def test_a_text_that_wraps_when_the_box_narrows_shows_its_second_line(qtbot):
    """Presentation mode at 1280x800 hid the text box's second line: a text on one line at
    1600 px wrapped when the window narrowed, and the box stayed one line tall (its height
    followed the text's changes only, not its width's)."""
    from PySide6.QtWidgets import QHBoxLayout, QWidget

    from attnscope.gui.widgets.text_box import TextBox

    host = QWidget()
    qtbot.addWidget(host)
    box = TextBox()
    QHBoxLayout(host).addWidget(box)
    box.setText("the big dog sees the small cat and the cat runs away .")
    host.resize(900, 200)
    host.show()
    qtbot.waitUntil(lambda: box.isVisible())
    one_line = box.height()
    assert box.document().size().height() == 1
    host.resize(180, 200)                                          # narrower: the text wraps
    qtbot.waitUntil(lambda: box.document().size().height() >= 2)
    lines = int(box.document().size().height())
    qtbot.waitUntil(lambda: box.height() >= one_line + (min(lines, 4) - 1) * box.fontMetrics().lineSpacing())
