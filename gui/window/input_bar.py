"""The input bar above the heads: the text, a target or a pair, the chat form, Run, live, device.

It says what is asked (``prompt``: one engine.inputs.Prompt, checked once) and when to run (``run_asked``: Enter, the Run button, a
changed chat form or word merging, and ``LIVE_DELAY_MS`` after an edit while "live" is on);
the window decides what a Run is. Which fields show follows the model (``fit_to``): a target
for an encoder-decoder, a pair and word merging for BERT-like encoders, the chat form for a
decoder whose tokenizer has a chat template.
"""
from __future__ import annotations

from PySide6.QtCore import QTimer, Signal
from PySide6.QtWidgets import (QCheckBox, QComboBox, QFileDialog, QHBoxLayout, QLabel, QLineEdit, QPushButton,
                               QVBoxLayout, QWidget)

from attnscope.engine.adapters import reads_chat
from attnscope.engine.inputs import Chat, Prompt
from attnscope.gui.settings import remember_folder, start_folder
from attnscope.gui.widgets.text_box import TextBox
from attnscope.gui.worker import error_message

LIVE_DELAY_MS = 350
DEFAULT_TEXT = {   # by family, then by role for the rest (Hugging Face models)
    "translator": "the big dog sees the small cat .",
    "gpt": "HAMLET. To be, or not to be, that is the question:",
    "encoder": "time flies like an arrow .",
    "decoder": "The quick brown fox jumps over the lazy dog because",
    "encoder-decoder": "translate English to German: The house is wonderful.",
}


class InputBar(QWidget):
    run_asked = Signal()
    device_chosen = Signal(str)
    failed = Signal(str, str)      # title, message: a text file that could not be read

    def __init__(self, settings, device: str, parent: QWidget | None = None):
        super().__init__(parent)
        self.settings = settings
        self.loaded = None       # the model the bar is fitted to (fit_to)
        self.text_edit = TextBox()
        self.text_edit.setPlaceholderText("Type a sentence; the heads update as you type (Enter runs now, "
                                          "Shift+Enter breaks the line)")
        self.text_edit.setToolTip("The text the model reads, as it is: line breaks (¶) and tabs (→) included. "
                                  "The heads update as you type; Enter runs now, Shift+Enter breaks the line")
        self.target_edit = QLineEdit()
        self.target_edit.setPlaceholderText("optional output prefix (empty: the model writes its own output)")
        self.target_edit.setToolTip("The start of the output to look at; empty: the model's own greedy output")
        self.pair_edit = QLineEdit()
        self.pair_edit.setPlaceholderText("optional second sentence (segment B)")
        self.pair_edit.setToolTip("A second sentence, read with the first as a pair (BERT's segment B)")
        self.target_label, self.pair_label = QLabel("Target:"), QLabel("Pair:")
        self.merge_box = QCheckBox("merge word pieces")
        self.merge_box.setToolTip("Join ##pieces into words: attention to a word sums over its pieces, "
                                  "attention from a word averages them")
        self.merge_box.toggled.connect(lambda _: self.run_asked.emit())
        self.merge_box.setVisible(False)  # shown for Hugging Face BERT models
        # An instruction-tuned model reads its prompt as a chat: the text is the user's turn, with an
        # optional system turn, through the tokenizer's own template (shown for such models alone).
        self.chat_box = QCheckBox("chat")
        self.chat_box.setToolTip("Read the text as a user's turn of a chat, through this model's own chat template "
                                 "(its turn marks shown as tokens; the continuation stops at the end of the turn)")
        self.chat_box.setChecked(str(settings.value("chat", "false")) == "true")
        self.chat_box.toggled.connect(self._on_chat_toggled)
        self.chat_box.setVisible(False)   # shown for a decoder whose tokenizer has a chat template
        self.system_label = QLabel("System:")
        self.system_edit = QLineEdit(str(settings.value("chat_system", "") or ""))
        self.system_edit.setPlaceholderText("optional system turn (e.g. You are a helpful assistant.)")
        self.system_edit.setToolTip("The chat's system turn, before the user's text (empty: none)")
        self.run_button = QPushButton("Run")
        self.run_button.setToolTip("Run the model on the text (Ctrl+Enter)")
        self.run_button.clicked.connect(self.run_asked)
        self.live_box = QCheckBox("live")
        self.live_box.setToolTip("Run again shortly after each edit")
        self.live_box.setChecked(str(settings.value("live", "true")) == "true")
        self.live_timer = QTimer(self, singleShot=True, interval=LIVE_DELAY_MS)
        self.live_timer.timeout.connect(self.run_asked)
        self.device_box = QComboBox()
        # Until the model's worker has asked torch which devices there are (show_devices):
        # the two every machine has, and the chosen one.
        self.device_box.addItems(list(dict.fromkeys(["auto", "cpu", device])))
        self.device_box.setToolTip("Where the model runs. spread: a Hugging Face model over every GPU, then the RAM, "
                                   "then the disk (accelerate), for a model larger than one device")
        self.device_box.setCurrentText(device)
        self.device_box.setSizeAdjustPolicy(QComboBox.SizeAdjustPolicy.AdjustToContents)   # "spread" whole
        self.device_box.currentTextChanged.connect(self.device_chosen)
        for edit in (self.text_edit, self.target_edit, self.pair_edit, self.system_edit):
            edit.textEdited.connect(self._on_edit)
            edit.returnPressed.connect(self.run_asked)

        row1 = QHBoxLayout()
        row1.addWidget(QLabel("Text:"))
        row1.addWidget(self.text_edit, 1)
        for w in (self.chat_box, self.run_button, self.live_box, QLabel("Device:"), self.device_box):
            row1.addWidget(w)
        row2 = QHBoxLayout()
        for w in (self.target_label, self.target_edit, self.pair_label, self.pair_edit, self.merge_box,
                  self.system_label, self.system_edit):
            row2.addWidget(w)
        box = QVBoxLayout(self)
        box.setContentsMargins(0, 0, 0, 0)
        box.addLayout(row1)
        box.addLayout(row2)

    def _on_edit(self, _text: str) -> None:
        if self.live_box.isChecked():
            self.live_timer.start()

    def chat_on(self) -> bool:
        """The chat form applies: the box is ticked and the model reads chats (another model keeps
        the box's setting, hidden, and reads the words as plain text)."""
        return self.chat_box.isChecked() and reads_chat(self.loaded)

    def _show_chat(self) -> None:
        """The chat toggle for a model that reads chats; the system line while chat is on."""
        self.chat_box.setVisible(reads_chat(self.loaded))
        for w in (self.system_label, self.system_edit):
            w.setVisible(self.chat_on())

    def _on_chat_toggled(self, _on: bool) -> None:
        """Another chat form is another prompt: Run again, as an edit does."""
        self._show_chat()
        self.run_asked.emit()

    def prompt(self) -> Prompt:
        """What the bar asks a Run to read, checked once (engine.inputs.Prompt; InputError in one
        sentence for no text or text that is not valid Unicode): the text (with the chat form on,
        the user's turn after the system turn, none when blank), the target prefix and the pair."""
        text = self.text_edit.text()
        if self.chat_on():
            text = Chat.of(text, self.system_edit.text() if self.system_edit.text().strip() else None)
        return Prompt.of(text, self.target_edit.text(), self.pair_edit.text())

    def fit_to(self, loaded) -> None:
        """The fields ``loaded`` reads: a target (encoder-decoder), a pair (encoder), word merging
        (Hugging Face), the chat form (a model with a chat template); an empty text gets a sentence
        for it."""
        self.loaded = loaded
        self.target_label.setVisible(loaded.role == "encoder-decoder")
        self.target_edit.setVisible(loaded.role == "encoder-decoder")
        self.pair_label.setVisible(loaded.role == "encoder")
        self.pair_edit.setVisible(loaded.role == "encoder")
        self.merge_box.setVisible(loaded.is_hf)
        self._show_chat()
        if not self.text_edit.text().strip():
            self.text_edit.setText(DEFAULT_TEXT.get(loaded.family, DEFAULT_TEXT[loaded.role]))

    def open_text_dialog(self) -> None:
        path, _ = QFileDialog.getOpenFileName(self.window(), "Open Text File", start_folder(self.settings, "texts"),
                                              "Text (*.txt *.md);;All files (*)")
        if path:
            remember_folder(self.settings, "texts", path)
            self.open_text(path)

    def open_text(self, path: str) -> None:
        """A text file as the text, run at once (thousands of tokens: the views pool and zoom); its
        line breaks, tabs and spaces kept, so the Run reads what the command line reads."""
        from attnscope.engine.inputs import InputError, read_utf8

        try:
            body = read_utf8(path)
        except InputError as exc:
            self.failed.emit("Could not open the text", error_message(exc))
            return
        self.text_edit.setText(body)      # as the file has it, as `--text-file` reads it (gui.widgets.text_box)
        self.run_asked.emit()

    def show_devices(self, devices: list[str], chosen: str) -> None:
        """The device chooser lists this machine's devices (``chosen`` one of them, or auto)."""
        self.device_box.blockSignals(True)
        self.device_box.clear()
        self.device_box.addItems(["auto", *devices])
        self.device_box.setCurrentText(chosen)
        self.device_box.blockSignals(False)

    def save_settings(self) -> None:
        self.settings.setValue("live", "true" if self.live_box.isChecked() else "false")
        self.settings.setValue("chat", "true" if self.chat_box.isChecked() else "false")
        self.settings.setValue("chat_system", self.system_edit.text())
