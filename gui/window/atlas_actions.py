"""The window's atlas work: File > Open Atlas… and File > Build Atlas…, and a kept context opened
as a Run ("a context is a door").

- Open Atlas reads the file in the Atlas view (gui.views.atlas), shown in front.
- Build Atlas builds one from the open model (gui.window.atlas_build_dialog for its options):
  the pass runs on the model thread (gui.worker's MODEL lane, as a Run or a load does), its
  ("atlas", done, asked) records shown in the dialog and the status bar; Stop ends it after
  the document it is on, the file keeping every document done (the same options resume it).
  When it is built, the Atlas view opens the file.
- A context clicked in the Atlas view (its ``door_asked``): the document is read again from the
  corpus on the model thread, its text put in the text box and Run, then Head detail shows that
  head with the context's query row framed (HeadDetail.go_to) once it has drawn it.

The engine calls here take plain values and return plain data, as gui.window.engine_calls's do.
"""
from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import QObject
from PySide6.QtGui import QKeySequence
from PySide6.QtWidgets import QFileDialog

from attnscope.gui.settings import remember_folder, start_folder
from attnscope.gui.window.atlas_build_dialog import ATLAS_FILTER, BuildAtlasDialog
from attnscope.gui.worker import MODEL, Jobs

ATLAS_VIEW = "Atlas"
LEAD = 4         # tokens at the start of a document whose framing a Run of its text may read otherwise


# ---- engine calls (the model thread) -------------------------------------------------------------
def build_atlas_file(loaded, out: str, corpus=None, length=None, docs=None, top=32, report=None, stop=None) -> dict:
    """Build or resume the atlas of ``loaded`` into ``out``: {"path", "documents"}, or with Stop
    {"path", "stopped": the engine's sentence} (what is done is in the file)."""
    from attnscope.engine.atlas import build_atlas
    from attnscope.engine.traces import RunCancelled

    try:
        state = build_atlas(loaded, out, corpus, length, docs, top, report=report, stop=stop)
    except RunCancelled as exc:
        return {"path": str(out), "stopped": str(exc)}
    return {"path": str(out), "documents": state.docs_done}


def aligned_row(atlas_ids: list[int], run_ids: list[int], position: int) -> int | None:
    """The row of a Run of the document's text that is the atlas's query ``position``: the two
    framings may differ by a few tokens at the start (the atlas frames ids with the model's
    BOS/EOS; a Run frames the text as a prompt), so the sequences are lined up past their first
    LEAD tokens. Where that row holds another token (a tokenizer whose decode is not its encode's
    inverse, or a query among the first tokens), the query with the three tokens before it is
    looked for, nearest the position. None when the Run's text does not hold the query."""
    row = None
    for shift in sorted(range(-LEAD, LEAD + 1), key=abs):
        pairs = [(i, i - shift) for i in range(LEAD, len(atlas_ids)) if LEAD <= i - shift < len(run_ids)]
        if pairs and len(pairs) >= min(len(atlas_ids), len(run_ids)) - 2 * LEAD and all(
                atlas_ids[i] == run_ids[j] for i, j in pairs):
            row = position - shift if 0 <= position - shift < len(run_ids) else None
            break
    if row is not None and run_ids[row] == atlas_ids[position]:
        return row
    tail = atlas_ids[max(0, position - 3):position + 1]
    n = len(tail)
    found = [j + n - 1 for j in range(len(run_ids) - n + 1) if run_ids[j:j + n] == tail]
    return min(found, key=lambda r: abs(r - position)) if found else row


def context_door(loaded, meta: dict, document: int, position: int) -> dict:
    """The atlas's ``document`` read again from its corpus as text, and where ``position`` falls in
    a Run of that text: {"text", "row" (None: not in the text)}."""
    from attnscope.engine.adapters import adapter_for
    from attnscope.engine.atlas import documents
    from attnscope.engine.inputs import InputError
    from attnscope.engine.kinds import QUERY_SIDE

    adapter = adapter_for(loaded)
    found = None
    for index, ids in enumerate(documents(adapter, meta["corpus"], meta["length"] - meta["framing"])):
        if index == document:
            found = ids
            break
    if found is None:
        raise InputError(f"The corpus {meta['corpus']} has no document {document} now: it changed since the atlas "
                         "was built.")
    text = loaded.tokenizer.decode(found)
    side = "source_ids" if QUERY_SIDE[meta["kind"]] == "source" else "target_ids"
    framed, _ = adapter.frame_ids(found)
    run = adapter.frame(text)
    return {"text": text, "row": aligned_row(getattr(framed, side), getattr(run, side), position)}


# ---- the window's part ---------------------------------------------------------------------------
def add_atlas_actions(window, menu) -> None:
    """File > Open Atlas… (Ctrl+Shift+A) and File > Build Atlas…, into ``menu``."""
    window.atlas_actions = actions = AtlasActions(window)
    window.open_atlas_action = menu.addAction("Open &Atlas…", actions.open_dialog, QKeySequence("Ctrl+Shift+A"))
    window.build_atlas_action = menu.addAction("&Build Atlas…", actions.build_dialog)


class AtlasActions(QObject):
    def __init__(self, window):
        super().__init__(window)
        self.window = window
        self.jobs = Jobs(self, "The atlas could not be built", lane=MODEL, announce=False)
        self.door_jobs = Jobs(self, "The context could not be opened", lane=MODEL)
        self.dialog: BuildAtlasDialog | None = None
        self.door: dict | None = None          # the context being opened: kind, layer, head, row, text
        self.landed: dict | None = None        # the last context opened in Head detail
        self._wired = None                     # the Atlas view whose door_asked is connected
        window.state.trace_changed.connect(self._on_trace)
        dock = window.docks.get(ATLAS_VIEW)
        if dock is not None:    # the view is built when its dock first shows (gui.window.dock_layout)
            dock.visibilityChanged.connect(lambda visible: visible and self._wire())

    def atlas_view(self):
        """The Atlas view, built and in front."""
        w = self.window
        view = w.dock_layout.view(ATLAS_VIEW)
        w.docks[ATLAS_VIEW].show()
        w.docks[ATLAS_VIEW].raise_()
        self._wire()
        return view

    def _wire(self) -> None:
        view = self.window.views.get(ATLAS_VIEW)
        if view is not None and view is not self._wired and hasattr(view, "door_asked"):
            view.door_asked.connect(self.open_context)
            self._wired = view

    # ---- Open Atlas ----------------------------------------------------------------------------
    def open_dialog(self) -> None:
        path, _ = QFileDialog.getOpenFileName(self.window, "Open Atlas", start_folder(self.window.settings, "atlases"),
                                              ATLAS_FILTER)
        if path:
            self.open_file(path)

    def open_file(self, path: str) -> None:
        remember_folder(self.window.settings, "atlases", path)
        self.atlas_view().open_atlas(path)

    # ---- Build Atlas ---------------------------------------------------------------------------
    def build_dialog(self) -> BuildAtlasDialog | None:
        w = self.window
        loaded = w.state.loaded
        if loaded is None:
            w.show_error("Build Atlas", "Open a model first: an atlas is built from the model that is open.")
            return None
        if self.dialog is None or self.dialog.model_name != loaded.name:
            if self.dialog is not None:
                self.dialog.close()
            slug = "".join(c if c.isalnum() else "-" for c in loaded.name).strip("-")
            out = str(Path(start_folder(w.settings, "atlases")) / f"{slug}-atlas.safetensors")
            self.dialog = BuildAtlasDialog(w, loaded.name, loaded.max_len, out)
            self.dialog.model_name = loaded.name
            self.dialog.build_asked.connect(self.build)
            self.dialog.stop_asked.connect(self.stop)
        self.dialog.show()
        self.dialog.raise_()
        return self.dialog

    def build(self, options: dict) -> None:
        """Build (or resume) the atlas the dialog asks for, on the model thread."""
        w = self.window
        loaded = w.state.loaded
        if loaded is None or not options.get("out"):
            self.dialog.finished_with("Open a model and name the atlas file first.")
            return
        if loaded.name != self.dialog.model_name:
            self.dialog.finished_with(f"The open model is now {loaded.name}, not {self.dialog.model_name}: "
                                      "close this dialog and open File > Build Atlas… again.")
            return
        remember_folder(w.settings, "atlases", options["out"])
        self.dialog.running(True)
        w.status_line.busy_label.setText("building atlas…")
        self.jobs.start(build_atlas_file, loaded, **options, on_yielded=self._progress, on_returned=self._built,
                        on_error=self._failed)

    def stop(self) -> None:
        """Stop: the pass ends after the document it is on; the file keeps what is done."""
        if self.jobs.busy:
            self.jobs.stop()
            if self.dialog is not None:
                self.dialog.said.setText("Stopping after this document…")

    def _progress(self, record) -> None:
        what, done, asked = record
        if what != "atlas":
            return
        if self.dialog is not None:
            self.dialog.show_progress(done, asked)
        of = f"/{asked:,}" if asked else ""
        self.window.status_line.busy_label.setText(f"building atlas… {done:,}{of} documents")

    def _built(self, result: dict) -> None:
        w = self.window
        w.status_line.busy_label.setText("")
        if "stopped" in result:
            said = f"{result['stopped']} Build again with the same options to resume."
            w.statusBar().showMessage(said, 10000)
        else:
            said = f"Built {result['path']} ({result['documents']:,} documents)."
            w.statusBar().showMessage(said, 6000)
        if self.dialog is not None:
            self.dialog.finished_with(said)
        if "stopped" not in result:
            self.open_file(result["path"])

    def _failed(self, exc) -> None:
        from attnscope.gui.worker import error_message

        self.window.status_line.busy_label.setText("")
        if self.dialog is not None:
            self.dialog.finished_with(error_message(exc))
        self.window.show_error("The atlas could not be built", exc)

    # ---- a context is a door -------------------------------------------------------------------
    def open_context(self, layer: int, head: int, context: dict) -> None:
        """Run the context's document and show ``layer``/``head`` at its query row in Head detail."""
        w = self.window
        view, loaded = self._wired, w.state.loaded
        atlas = view.atlas if view is not None else None
        if atlas is None or loaded is None:
            return
        meta = atlas["state"].meta
        self.door = self.landed = None
        view.say_door(f"Reading document {context['document']} of {Path(meta['corpus']).name}…")
        self.door_jobs.start(context_door, loaded, meta, context["document"], context["position"],
                             on_returned=lambda found: self._run_context(meta["kind"], layer, head, found),
                             on_error=lambda exc: view.say_door(str(exc)))

    def _run_context(self, kind: str, layer: int, head: int, found: dict) -> None:
        w = self.window
        bar = w.input_bar
        if bar.chat_on():         # the atlas read the corpus as plain text: so does this Run
            bar.chat_box.setChecked(False)
        self.door = dict(kind=kind, layer=layer, head=head, row=found["row"], text=found["text"])
        if self._wired is not None:
            where = f"row {found['row']:,}" if found["row"] is not None else "a row the text does not hold (framing)"
            self._wired.say_door(f"Running the document; Head detail will show L{layer}.H{head} at {where}.")
        bar.text_edit.setText(found["text"])
        w.run()

    def _on_trace(self, trace) -> None:
        door, state = self.door, self.window.state
        if door is None or trace is None or state.text != door["text"]:
            return
        state.select_head(door["kind"], door["layer"], door["head"])     # Head detail, in front
        detail = self.window.dock_layout.view("Head detail")
        if not getattr(detail, "_atlas_door_wired", False):
            detail.draw_jobs.busy_changed.connect(lambda busy: busy or self._land())
            detail._atlas_door_wired = True
        self._land()

    def _land(self) -> None:
        """Head detail has drawn the door's head on the door's Run: frame the context's row."""
        door, state = self.door, self.window.state
        if door is None or state.trace is None or state.text != door["text"]:
            return
        detail = self.window.views.get("Head detail")
        d = getattr(detail, "drawing", None)
        if d is None or d.trace is not state.trace or (d.kind, d.layer, d.head) != (door["kind"], door["layer"],
                                                                                    door["head"]):
            return
        self.door, self.landed = None, door
        if door["row"] is not None:
            detail.go_to(str(door["row"]))
        if self._wired is not None:
            self._wired.say_door(f"Head detail shows L{door['layer']}.H{door['head']}"
                                 + (f" at query row {door['row']:,}." if door["row"] is not None else "."))
