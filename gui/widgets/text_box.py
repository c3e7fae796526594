"""The text box: the text the model reads, exactly as it is, line breaks and tabs included.

It was a one-line QLineEdit, so File > Open Text File joined a file's lines and collapsed its
whitespace before the Run (22 newlines of a 4k-token file became other tokens, weights off by up
to 0.0081 from ``attnscope export --text-file`` on the same file). Now the box holds the file's
text as read (engine.inputs.read_utf8, the CLI's reader), and what it hands a Run is that text
to the character while nobody has edited it (Qt turns a non-breaking space into a space on the
way out; the file's own string is kept for that). Line breaks are drawn as pilcrows and, where
the text holds a tab, tabs as arrows and spaces as dots, so what the model reads is what shows.

Return runs (as the one-line box did), Shift+Return breaks the line. The box is one line tall
for a sentence and grows to MAX_LINES for more, then scrolls, at the font of the moment
(presentation mode included).
"""
from __future__ import annotations

from PySide6.QtCore import QEvent, QSize, Qt, Signal
from PySide6.QtGui import QTextOption
from PySide6.QtWidgets import QPlainTextEdit, QSizePolicy

MAX_LINES = 4


class TextBox(QPlainTextEdit):
    textEdited = Signal(str)     # the user changed the text (typing, pasting, undo), never setText
    returnPressed = Signal()     # Return or Enter without Shift: run

    def __init__(self, parent=None):
        super().__init__(parent)
        self._quiet = False
        self._exact: tuple[str, str] | None = None    # (as the box shows it, as it was given)
        self.setTabChangesFocus(True)                 # Tab moves on, as in every other box of the bar
        self.setLineWrapMode(QPlainTextEdit.LineWrapMode.WidgetWidth)
        self.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Fixed)
        self.textChanged.connect(self._changed)
        self._tab_width()

    # ---- the QLineEdit calls the window and its tests make ------------------------------------
    def text(self) -> str:
        """What a Run reads: the text given, to the character, until it is edited."""
        shown = self.toPlainText()
        return self._exact[1] if self._exact is not None and self._exact[0] == shown else shown

    def setText(self, text: str) -> None:
        self._quiet = True
        try:
            self.setPlainText(text)
        finally:
            self._quiet = False
        self._exact = (self.toPlainText(), text)
        self._show_whitespace()

    # ---- behaviour ---------------------------------------------------------------------------
    def _changed(self) -> None:
        self._show_whitespace()
        self.updateGeometry()                         # one line more or fewer
        if not self._quiet:
            self.textEdited.emit(self.text())

    def _show_whitespace(self) -> None:
        """Line breaks always drawn (only a text with one shows any); tabs and spaces where a tab is."""
        option = self.document().defaultTextOption()
        flags = option.flags() | QTextOption.Flag.ShowLineAndParagraphSeparators
        tabs = "\t" in self.toPlainText()
        flags = flags | QTextOption.Flag.ShowTabsAndSpaces if tabs else flags & ~QTextOption.Flag.ShowTabsAndSpaces
        if flags != option.flags():
            option.setFlags(flags)
            self.document().setDefaultTextOption(option)

    def keyPressEvent(self, event) -> None:
        if event.key() in (Qt.Key.Key_Return, Qt.Key.Key_Enter) and \
                not event.modifiers() & Qt.KeyboardModifier.ShiftModifier:
            self.returnPressed.emit()
            event.accept()
            return
        super().keyPressEvent(event)

    def changeEvent(self, event) -> None:
        super().changeEvent(event)
        if event.type() == QEvent.Type.FontChange:   # presentation mode: taller lines, a taller box
            self._tab_width()
            self.updateGeometry()

    def resizeEvent(self, event) -> None:
        """The wrapped lines change with the width too (the window narrowed, presentation mode's
        font): the box stayed one line tall and hid the second line of a text that wrapped then."""
        super().resizeEvent(event)                    # lays the document out at the new width
        if self.sizeHint().height() != self.height():
            self.updateGeometry()

    def _tab_width(self) -> None:
        """A tab as wide as four spaces (Qt's default is 80 pixels: a tab looked like a gap of ten words)."""
        self.setTabStopDistance(4 * self.fontMetrics().horizontalAdvance(" "))

    # ---- size ------------------------------------------------------------------------------
    def _height_for(self, lines: int) -> int:
        margins = self.contentsMargins()
        document = 2 * int(self.document().documentMargin())
        return (lines * self.fontMetrics().lineSpacing() + document + 2 * self.frameWidth()
                + margins.top() + margins.bottom())

    def sizeHint(self) -> QSize:
        lines = max(1, min(MAX_LINES, int(self.document().size().height())))   # wrapped lines, as laid out
        return QSize(super().sizeHint().width(), self._height_for(lines))

    def minimumSizeHint(self) -> QSize:
        return QSize(super().minimumSizeHint().width(), self._height_for(1))
