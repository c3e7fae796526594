"""The main window's menu bar: File, Model, View and Help, built once from the window's parts.

Kept out of gui.window.main_window so that the frame reads as its wiring; every action calls the
part that does the job (gui.window.model_opening, gui.window.recordings, gui.window.input_bar,
gui.window.dock_layout), and the window keeps the actions other code reaches (open_action, ...).
"""
from __future__ import annotations

from PySide6.QtGui import QActionGroup, QKeySequence

from attnscope.gui.colormaps import COLORMAPS
from attnscope.gui.window.atlas_actions import add_atlas_actions
from attnscope.gui.window.help_menu import show_about, show_shortcuts


def build_menus(window) -> None:
    """The window's menus; the actions kept on the window are the ones its settings and tests read."""
    bar = window.menuBar()
    opening, recordings = window.opening, window.recordings
    file = bar.addMenu("&File")
    window.open_action = file.addAction("&Open Checkpoint…", opening.open_checkpoint_dialog,
                                        QKeySequence.StandardKey.Open)
    window.open_hf_action = file.addAction("Open &Hugging Face Model Folder…", opening.open_hf_dialog,
                                           QKeySequence("Ctrl+Shift+O"))
    window.open_hf_cache_action = file.addAction("Open from Hugging Face &Cache…", opening.open_hf_cache_dialog)
    window.open_remote_action = file.addAction("Open Remote Model (&NDIF)…", opening.open_remote_dialog)
    window.api_key_action = file.addAction("NDIF API &Key…", opening.api_key_dialog)
    window.recent_menu = file.addMenu("Open &Recent")
    file.addSeparator()
    file.addAction("&Export View…", window.export_view_dialog, QKeySequence("Ctrl+E"))
    file.addAction("Export &Trace (NPZ/CSV)…", window.export_trace_dialog, QKeySequence("Ctrl+Shift+E"))
    file.addAction("&Save Recording…", recordings.save_dialog, QKeySequence("Ctrl+Shift+S"))
    file.addAction("Open Recordin&g…", recordings.open_dialog, QKeySequence("Ctrl+Shift+R"))
    file.addAction("Open Te&xt File…", window.input_bar.open_text_dialog, QKeySequence("Ctrl+Shift+T"))
    add_atlas_actions(window, file)          # Open Atlas…, Build Atlas… (gui.window.atlas_actions)
    file.addSeparator()
    file.addAction("&Quit", window.close, QKeySequence.StandardKey.Quit)

    window.model_menu = bar.addMenu("&Model")
    window.model_menu.aboutToShow.connect(opening.fill_model_menu)
    opening.fill_model_menu()

    view = bar.addMenu("&View")
    cmap_menu = view.addMenu("&Colormap")
    group = QActionGroup(window)
    for name in COLORMAPS:
        act = cmap_menu.addAction(name)
        act.setCheckable(True)
        act.setChecked(name == window.state.colormap)
        act.triggered.connect(lambda _=False, n=name: window.set_colormap(n))
        group.addAction(act)
    window.dark_action = view.addAction("&Dark Theme")
    window.dark_action.setCheckable(True)
    window.dark_action.setChecked(str(window.settings.value("dark", "false")) == "true")
    window.dark_action.toggled.connect(window.set_dark)
    presentation = window.presentation_action = view.addAction("&Presentation Mode")
    presentation.setShortcut(QKeySequence("F5"))
    presentation.setToolTip("Large fonts and thick lines, for a projector")
    presentation.setCheckable(True)
    presentation.setChecked(str(window.settings.value("presentation", "false")) == "true")
    presentation.toggled.connect(window.set_presentation)
    view.addAction("&Reset Layout", window.dock_layout.reset)
    view.addSeparator()
    for dock in window.docks.values():
        view.addAction(dock.toggleViewAction())

    help_ = bar.addMenu("&Help")
    window.help_action = help_.addAction("&What Am I Looking At?",
                                         lambda: window.show_help(window.focused_view()[0]), QKeySequence("F1"))
    help_.addAction("&Keyboard Shortcuts", lambda: show_shortcuts(window), QKeySequence("Ctrl+/"))
    help_.addAction("&About attnscope", lambda: show_about(window))
    opening.fill_recent_menu()
