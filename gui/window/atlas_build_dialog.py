"""File > Build Atlas…: the options of an atlas pass over a corpus (engine.atlas.build_atlas), its
progress and Stop, in one small non-modal dialog.

Why a dialog of its own and not the status bar alone: a pass over thousands of documents takes
minutes, and the user must see what it reads, how far it is, and that Stop keeps what is done
(the same options, Build again, resume it from the file). The dialog only holds widgets; the
pass runs on the model thread (gui.window.atlas_actions), which hands each ("atlas", done,
asked) record to ``show_progress`` on the GUI thread.
"""
from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import Signal
from PySide6.QtWidgets import (QDialog, QFileDialog, QFormLayout, QHBoxLayout, QLabel, QLineEdit, QProgressBar,
                               QPushButton, QSpinBox, QVBoxLayout, QWidget)

ATLAS_FILTER = "Atlas (*.safetensors)"
DEFAULT_DOCS = 64          # documents read when the user does not ask for more (0: the whole corpus)
DEFAULT_TOP = 32           # engine.atlas.DEFAULT_TOP, kept here so the dialog imports no torch
DEFAULT_LENGTH = 4096      # engine.atlas.DEFAULT_LENGTH, capped by the model's context


def _row(*widgets: QWidget) -> QHBoxLayout:
    row = QHBoxLayout()
    row.setContentsMargins(0, 0, 0, 0)
    for w in widgets:
        row.addWidget(w, 1 if isinstance(w, QLineEdit) else 0)
    return row


class BuildAtlasDialog(QDialog):
    """``build_asked(options)``: Build pressed, ``options`` the keyword arguments of the pass
    (corpus (None: the bundled Shakespeare), length, docs (None: all), top, out); ``stop_asked``: Stop."""
    build_asked = Signal(dict)
    stop_asked = Signal()

    def __init__(self, parent: QWidget, model_name: str, max_len: int, out: str):
        super().__init__(parent)
        self.setWindowTitle(f"Build Atlas of {model_name}")
        self.corpus_edit = QLineEdit()
        self.corpus_edit.setPlaceholderText("the bundled Shakespeare")
        self.corpus_edit.setToolTip("A text file, a folder of .txt files, or JSONL with a \"text\" field; "
                                    "empty: the bundled Shakespeare")
        corpus_file, corpus_folder = QPushButton("File…"), QPushButton("Folder…")
        corpus_file.clicked.connect(self._pick_corpus_file)
        corpus_folder.clicked.connect(self._pick_corpus_folder)
        self.length_box = QSpinBox()
        self.length_box.setRange(2, max(2, int(max_len)))
        self.length_box.setValue(min(DEFAULT_LENGTH, int(max_len)))
        self.length_box.setSuffix(" tokens")
        self.length_box.setToolTip(f"Tokens per document, at most the model's context ({int(max_len):,})")
        self.docs_box = QSpinBox()
        self.docs_box.setRange(0, 10**7)
        self.docs_box.setValue(DEFAULT_DOCS)
        self.docs_box.setSpecialValueText("the whole corpus")
        self.docs_box.setToolTip("Documents to read (0: the whole corpus)")
        self.top_box = QSpinBox()
        self.top_box.setRange(1, 4096)
        self.top_box.setValue(DEFAULT_TOP)
        self.top_box.setToolTip("Top contexts kept per head, by the head's activation")
        self.out_edit = QLineEdit(out)
        self.out_edit.setToolTip("The atlas file; an existing one built with the same options is resumed")
        out_pick = QPushButton("…")
        out_pick.clicked.connect(self._pick_out)
        form = QFormLayout()
        form.addRow("Corpus", _row(self.corpus_edit, corpus_file, corpus_folder))
        form.addRow("Length", self.length_box)
        form.addRow("Documents", self.docs_box)
        form.addRow("Top contexts", self.top_box)
        form.addRow("Atlas file", _row(self.out_edit, out_pick))
        self.progress = QProgressBar()
        self.progress.setRange(0, 1)
        self.progress.setValue(0)
        self.said = QLabel("Stop keeps the documents done; Build with the same options resumes.")
        self.said.setWordWrap(True)
        self.build_button, self.stop_button, close = QPushButton("Build"), QPushButton("Stop"), QPushButton("Close")
        self.build_button.setDefault(True)
        self.stop_button.setEnabled(False)
        self.build_button.clicked.connect(lambda: self.build_asked.emit(self.options()))
        self.stop_button.clicked.connect(self.stop_asked.emit)
        close.clicked.connect(self.close)
        buttons = QHBoxLayout()
        buttons.addStretch(1)
        for b in (self.build_button, self.stop_button, close):
            buttons.addWidget(b)
        box = QVBoxLayout(self)
        box.addLayout(form)
        box.addWidget(self.progress)
        box.addWidget(self.said)
        box.addLayout(buttons)
        self.resize(620, self.sizeHint().height())

    def options(self) -> dict:
        corpus = self.corpus_edit.text().strip()
        docs = self.docs_box.value()
        return dict(corpus=corpus or None, length=self.length_box.value(), docs=docs or None,
                    top=self.top_box.value(), out=self.out_edit.text().strip())

    # ---- the pass, as the actions report it --------------------------------------------------
    def running(self, on: bool) -> None:
        self.build_button.setEnabled(not on)
        self.stop_button.setEnabled(on)
        if on:
            self.progress.setRange(0, 0)          # busy until the first document is done
            self.said.setText("Reading the corpus…")

    def show_progress(self, done: int, asked: int | None) -> None:
        if asked:
            self.progress.setRange(0, asked)
            self.progress.setValue(min(done, asked))
            self.said.setText(f"{done:,} of {asked:,} documents")
        else:
            self.said.setText(f"{done:,} documents (the whole corpus)")

    def finished_with(self, sentence: str) -> None:
        self.running(False)
        self.progress.setRange(0, 1)
        self.progress.setValue(1 if sentence.startswith("Built") else 0)
        self.said.setText(sentence)

    # ---- file pickers --------------------------------------------------------------------------
    def _pick_corpus_file(self) -> None:
        path, _ = QFileDialog.getOpenFileName(self, "Corpus", str(Path.home()),
                                              "Text (*.txt *.txt.gz *.jsonl *.jsonl.gz);;All files (*)")
        if path:
            self.corpus_edit.setText(path)

    def _pick_corpus_folder(self) -> None:
        path = QFileDialog.getExistingDirectory(self, "Corpus folder (its .txt files)", str(Path.home()))
        if path:
            self.corpus_edit.setText(path)

    def _pick_out(self) -> None:
        path, _ = QFileDialog.getSaveFileName(self, "Atlas file", self.out_edit.text(), ATLAS_FILTER)
        if path:
            self.out_edit.setText(path if path.endswith(".safetensors") else path + ".safetensors")
