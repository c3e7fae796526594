"""The Patching panel's two answer boxes: offered from each run's likeliest next tokens, or typed.

An offered answer reads 'id:N  ▸ ␣honour  37%': its id (what the engine is given, so picking
it is exactly that token), its text with every space shown as ␣ (the leading space a typed
answer needs too: ' honour' starts a word, 'honour' may be another token), and its probability.

The user's choice holds (issue 45: a third offer picked reverted silently to the first after a
character was typed and deleted in the clean text, and a Patch would have answered another
question): each box keeps what the user chose; when new offers arrive an offered id is
selected again by its id (offered with its new probability even when it is no longer among
the likeliest: the offers are asked for it), and a typed answer stays as typed. Only a box
whose user chose nothing follows the likeliest token.
"""
from __future__ import annotations

from PySide6.QtWidgets import QComboBox

ANSWER_SEP = "  ▸ "       # an offered answer reads 'id:N  ▸ token  p'
SHOWN = {" ": "␣", "\n": "↵", "\t": "⇥"}


def answer_spec(text: str) -> str:
    """What an answer box's text is as the engine reads it: an offered 'id:N  ▸ token' is id:N;
    anything typed is itself (a leading space kept: ' Mary')."""
    return text.split(ANSWER_SEP)[0]


def spec_id(spec: str | None) -> int | None:
    """N of an answer 'id:N', else None."""
    if spec is None or not spec.strip().startswith("id:"):
        return None
    n = spec.strip()[3:]
    return int(n) if n.isdigit() else None


def shown_token(text: str) -> str:
    """A token's text with its spaces, line breaks and tabs visible (' honour' -> '␣honour')."""
    return "".join(SHOWN.get(ch, ch) for ch in text) or "(empty)"


def offer_text(token_id: int, text: str, p: float) -> str:
    chance = f"{p:.0%}" if p >= 0.01 else f"{p:.1%}" if p >= 0.001 else "<0.1%"
    return f"id:{token_id}{ANSWER_SEP}{shown_token(text)}  {chance}"


class AnswerBox(QComboBox):
    """One answer: offered or typed; the user's choice (``chosen``) holds across offers."""

    def __init__(self, tip: str):
        super().__init__()
        self.setEditable(True)
        self.setMinimumContentsLength(20)
        self.setToolTip(tip + ". An offered answer is exactly its token (id:N); ␣ is a space, which a typed answer "
                              "needs too (' honour' starts a word)")
        self.chosen: str | None = None     # the user's answer (id:N or typed); None: the likeliest is offered
        self._filling = False
        self.currentTextChanged.connect(self._choose)

    def spec(self) -> str:
        return answer_spec(self.currentText())

    def kept_id(self) -> int | None:
        """The id the user chose, to be offered again whatever its rank."""
        return spec_id(self.chosen)

    def _choose(self, text: str) -> None:
        if not self._filling:
            self.chosen = answer_spec(text) if text.strip() else None

    def forget(self, ids_too: bool) -> None:
        """Drop the offers; with ``ids_too`` (another model: another vocabulary) an id chosen too."""
        self._filling = True
        self.clear()
        self._filling = False
        if ids_too and self.kept_id() is not None:
            self.chosen = None

    def offer(self, top: list[tuple[int, str, float]], avoid: str | None = None) -> None:
        """Offer ``top`` [(id, text, probability)] and show the user's choice: an id among them is
        selected, anything else is kept as typed; no choice: the likeliest not ``avoid``."""
        shown = self.currentText()
        self._filling = True
        try:
            self.clear()
            self.addItems([offer_text(i, text, p) for i, text, p in top])
            ids = [i for i, _, _ in top]
            if self.chosen is None:
                if ids:
                    self.setCurrentIndex(next((k for k in range(len(ids)) if f"id:{ids[k]}" != avoid), 0))
            elif self.kept_id() in ids:
                self.setCurrentIndex(ids.index(self.kept_id()))
            else:
                self.setEditText(shown if answer_spec(shown) == self.chosen else self.chosen)
        finally:
            self._filling = False
