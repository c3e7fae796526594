"""AppState: the one object every view observes (napari-style model/view split).

The main window owns the state; views get it in their constructor, read what is there and
connect to its signals. Nothing here computes: the state only says what is current.

What is selected, (kind, layer, head), lives here and nowhere else: a view's kind box,
layer and head spin boxes write to the state and redraw when it says so, so every view
shows the same head and none keeps a copy that can go stale. A new trace keeps the
selection where the trace has it and clamps it where it does not.

What the model reads is here too, once: ``text`` is the words of the Run on screen and
``chat``/``system`` how they were read (an instruction-tuned model's chat template, or plain);
``prompt`` is what every engine call and every staleness check uses, so a chat toggled or a
system turn edited is a new prompt exactly as an edited text is.
"""
from __future__ import annotations

from PySide6.QtCore import QObject, Signal

from attnscope.engine.adapters import reads_chat
from attnscope.engine.inputs import Chat, Prompt
from attnscope.engine.interventions import Interventions
from attnscope.engine.loading import LoadedModel
from attnscope.engine.traces import AttentionTrace


def prompt_of(text: str, chat: bool = False, system: str = "") -> str | Chat:
    """``text`` as the engine reads it: with ``chat``, the user's turn of an engine.inputs.Chat
    after the ``system`` turn (none when blank); else the text itself."""
    return Chat.of(text, system if system.strip() else None) if chat else text


class AppState(QObject):
    model_changed = Signal(object)           # LoadedModel
    trace_changed = Signal(object)           # AttentionTrace (or None: nothing to show)
    selection_changed = Signal(str, int, int)  # kind, layer, head: what every view shows
    head_selected = Signal(str, int, int)    # a head was picked to be looked at (opens Head detail)
    colormap_changed = Signal(str)
    theme_changed = Signal(bool)             # dark
    output_changed = Signal(str)
    interventions_changed = Signal(object)   # engine.interventions.Interventions: what is switched off
    measure_changed = Signal(bool)           # value-weighted attention (True) or the weights
    presentation_changed = Signal(bool)      # large fonts and thick marks, for a projector
    request_started = Signal()               # a newer request (Run, model, recording) supersedes all work on the old
    request_ended = Signal()                 # no request in flight: what was cancelled for it may be asked again
    run_requested = Signal(str)              # a view asks the window to Run this text (Patching: a head on the clean text)
    why_requested = Signal(str, int, int, int, int)   # kind, layer, head, query, key: split that score (the Why panel)

    def __init__(self, parent: QObject | None = None):
        super().__init__(parent)
        self.loaded: LoadedModel | None = None
        self.trace: AttentionTrace | None = None
        self.text: str = ""
        self.target: str = ""                # translator: optional target prefix
        self.pair: str = ""                  # BERT: optional segment B
        self.chat: bool = False              # the text is a user's turn, read through the model's chat template
        self.system: str = ""                # with chat: the system turn before it ("": none)
        self.typed: Prompt | None = None     # the Prompt the Run on screen read (set_prompt), all of the above
        self.device: str = "auto"
        self.colormap: str = "viridis"
        self.dark: bool = False
        self.kind: str | None = None
        self.layer: int = 0
        self.head: int = 0
        self.output: str = ""                # the model's own output (translation, continuation) for the text
        self.output_for: int = -1            # the trace_id it was written for (-1: none)
        self.presentation: bool = False
        self.interventions = Interventions()  # heads ablated, edges knocked out: every Run and step uses them
        self.value_weighted = False           # views draw alpha_ij ||f(x_j)|| instead of the weights
        self.recording: str | None = None     # the file the trace on screen was opened from: no model behind it
        self.trace_id = 0                     # counts traces set: a result computed for one says which (never
                                              # the trace itself, which would be kept alive)
        self.pending = False                  # a request is in flight: what is on screen is about to be replaced

    def as_prompt(self, text: str) -> str | Chat:
        """``text`` in the chat form of the Run on screen (a Patching pair's texts read the same way)."""
        return prompt_of(text, self.chat, self.system)

    @property
    def prompt(self) -> str | Chat:
        """What the model reads for the Run on screen (engine.inputs.Chat or str): every view
        hands this to the engine and compares it with what its result was computed for."""
        return self.as_prompt(self.text)

    def set_prompt(self, prompt: Prompt | None) -> None:
        """The Prompt a Run read (the input bar's, checked once) becomes the state's, and with it
        the words, target, pair and chat form every view derives its request from (None: no
        text); the chat form only for a model that reads chats (engine.adapters.chat.reads_chat)."""
        self.typed = prompt
        if prompt is None:
            self.text, self.target, self.pair, self.chat, self.system = "", "", "", False, ""
            return
        chat = isinstance(prompt.text, Chat)     # Prompt.chat's own test, read here: no trip back to the engine
        turns = dict(prompt.text.turns) if chat else {"user": prompt.text}
        self.chat = chat and reads_chat(self.loaded)
        self.text, self.system = turns["user"], (turns.get("system", "") if self.chat else "")
        self.target, self.pair = prompt.target or "", prompt.pair or ""

    def set_model(self, loaded: LoadedModel) -> None:
        self.loaded = loaded
        if self.chat and not reads_chat(loaded):   # a model without a template reads the words as plain text
            self.chat, self.system = False, ""
        if not self.interventions.empty:     # another model's heads and positions
            self.set_interventions(Interventions())
        self.trace, self.recording = None, None
        self.trace_id += 1
        self.model_changed.emit(loaded)
        self.trace_changed.emit(None)        # the old model's readouts are gone everywhere
        self.set_output("")

    @property
    def trace_model(self) -> LoadedModel | None:
        """The model behind the trace on screen: None for a recording (drawn with no model) or no trace.
        Whatever needs a forward (lens, continuation, interventions) asks this, not ``loaded``."""
        return self.loaded if self.trace is not None and self.recording is None else None

    def set_output(self, text: str, trace_id: int | None = None) -> None:
        """What the model writes for the current text: from a Run (``trace_id``: the trace it was
        written for), or the decoding steps so far (the current trace's)."""
        written_for = self.trace_id if trace_id is None else trace_id
        if (text, written_for) != (self.output, self.output_for):
            self.output, self.output_for = text, written_for
            self.output_changed.emit(text)

    def set_trace(self, trace: AttentionTrace | None, recording: str | None = None) -> None:
        """The trace every view draws; ``recording``: the file it was opened from (no model behind it)."""
        self.trace, self.recording = trace, (recording if trace is not None else None)
        self.trace_id += 1
        self._clamp()
        self.trace_changed.emit(trace)

    def begin_request(self) -> None:
        """A newer request (a Run, a model, a recording) is on its way: every job still working
        for what is on screen is superseded (they listen to request_started and cancel), and
        results shown until the new ones come are marked as the old request's."""
        self.pending = True
        self.request_started.emit()

    def end_request(self) -> None:
        """The request is over (its trace is in, or it stopped or failed): views whose work was
        cancelled for it and still show the trace on screen ask for it again."""
        if self.pending:
            self.pending = False
            self.request_ended.emit()

    def _clamp(self) -> bool:
        """Fit the selection to the trace; True when it changed."""
        before = (self.kind, self.layer, self.head)
        trace = self.trace
        if trace is not None and trace.kinds:
            if self.kind not in trace.kinds:
                self.kind = trace.kinds[-1]       # cross attention first, where there is some
            n_layers, n_heads = trace.shape(self.kind)[:2]
            self.layer = min(max(self.layer, 0), n_layers - 1)
            self.head = min(max(self.head, 0), n_heads - 1)
        return (self.kind, self.layer, self.head) != before

    def select(self, kind: str | None = None, layer: int | None = None, head: int | None = None) -> None:
        """Change what is selected (None: keep that part); views follow selection_changed."""
        before = (self.kind, self.layer, self.head)
        if kind:
            self.kind = kind
        if layer is not None:
            self.layer = int(layer)
        if head is not None:
            self.head = int(head)
        self._clamp()
        if (self.kind, self.layer, self.head) != before:
            self.selection_changed.emit(self.kind or "", self.layer, self.head)

    def select_head(self, kind: str, layer: int, head: int) -> None:
        """Select a head and ask for it to be shown (a click in the grid or statistics)."""
        self.select(kind, layer, head)
        self.head_selected.emit(self.kind or "", self.layer, self.head)

    def ask_why(self, kind: str, layer: int, head: int, query: int, key: int) -> None:
        """Ask why that head's query attends to that key, on the Run on screen (the window opens Why)."""
        self.why_requested.emit(kind, int(layer), int(head), int(query), int(key))

    def request_run(self, text: str) -> None:
        """Ask the window to Run ``text`` (it becomes the window's text), as the Run button does."""
        self.run_requested.emit(text)

    def set_interventions(self, spec: Interventions) -> None:
        """Change what is switched off; the window re-runs and every view follows."""
        if spec != self.interventions:
            self.interventions = spec
            self.interventions_changed.emit(spec)

    def set_value_weighted(self, on: bool) -> None:
        """Weights or value-weighted attention in every view; the window re-runs."""
        if on != self.value_weighted:
            self.value_weighted = on
            self.measure_changed.emit(on)

    def set_colormap(self, name: str) -> None:
        if name != self.colormap:
            self.colormap = name
            self.colormap_changed.emit(name)

    def set_presentation(self, on: bool) -> None:
        if on != self.presentation:
            self.presentation = on
            self.presentation_changed.emit(on)

    def set_dark(self, dark: bool) -> None:
        if dark != self.dark:
            self.dark = dark
            self.theme_changed.emit(dark)
