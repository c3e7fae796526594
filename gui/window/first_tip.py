"""The first start's tip above the heads: where to begin, until "Got it" hides it for good."""
from __future__ import annotations

from PySide6.QtWidgets import QHBoxLayout, QLabel, QPushButton, QWidget

from attnscope.gui.theme import tint


class FirstTip(QWidget):
    def __init__(self, settings, parent: QWidget | None = None):
        super().__init__(parent)
        self.settings = settings
        layout = QHBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        tip = QLabel("Tip: type a sentence above and every head of every layer appears below. Click a head to open "
                     "it large; F1 (Help > What am I looking at) explains each view.")
        tip.setWordWrap(True)
        tint(tip, "info")
        close = QPushButton("Got it")
        close.setToolTip("Hide this tip for good")
        close.clicked.connect(self.dismiss)
        layout.addWidget(tip, 1)
        layout.addWidget(close)
        if str(settings.value("tip_dismissed", "false")) == "true":
            self.setHidden(True)

    def dismiss(self) -> None:
        self.setVisible(False)
        self.settings.setValue("tip_dismissed", "true")
