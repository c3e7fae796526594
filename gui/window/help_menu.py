"""The Help menu's two short dialogs: the keyboard shortcuts and About (What am I looking at is
gui.window.help)."""
from __future__ import annotations

from PySide6.QtWidgets import QMessageBox, QWidget

from attnscope.engine import version

SHORTCUTS = [
    ("Ctrl+Return", "Run the model on the text"),
    ("Ctrl+O", "Open a checkpoint"),
    ("Ctrl+Shift+O", "Open a Hugging Face model folder"),
    ("Ctrl+E", "Export the focused view (PNG or SVG)"),
    ("Ctrl+Shift+E", "Export the trace (NPZ or CSV)"),
    ("Ctrl+Shift+S", "Save the Run's recording (queries and keys: every view, no model needed)"),
    ("Ctrl+Shift+R", "Open a recording"),
    ("Esc", "Stop a long Run, or an export"),
    ("Ctrl+Shift+T", "Open a text file as the text (a long context)"),
    ("Ctrl+Shift+A", "Open an atlas: every head across a corpus (File > Build Atlas… makes one)"),
    ("Arrow keys", "In Head detail: previous/next head (left/right), layer (up/down)"),
    ("Alt+click", "In Head detail: why does this query attend to this key (the Why panel; or right-click the cell)"),
    ("F1", "What am I looking at: help for the focused view"),
    ("Ctrl+/", "This list of shortcuts"),
    ("F5", "Presentation mode: large fonts and thick lines, for a projector"),
    ("Right / Left", "In Decoding: one more token / back one step (kept, not recomputed)"),
    ("Ctrl+Q", "Quit"),
]


def show_shortcuts(parent: QWidget) -> None:
    rows = "".join(f"<tr><td><b>{k}</b></td><td>{v}</td></tr>" for k, v in SHORTCUTS)
    QMessageBox.information(parent, "Keyboard shortcuts", f"<table cellpadding=4>{rows}</table>")


def show_about(parent: QWidget) -> None:
    QMessageBox.about(parent, "About attnscope",
                      f"<b>attnscope {version()}</b><p>See every head of every layer of a transformer that really "
                      "runs: from-scratch translator, GPT and BERT trained by the app, and any Hugging Face "
                      "transformer (BERT, GPT-2, Llama, T5, BART, ...) for comparison.</p>")
