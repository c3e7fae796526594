"""The main window as the Qt tests drive it: its views shown and raised, each built where it
lives (the window's dock layout, gui/window/dock_layout.py)."""
from __future__ import annotations


def open_views(window, *titles) -> list:
    """The views called ``titles``, each dock shown and raised (built the first time)."""
    for title in titles:
        window.docks[title].show()
        window.docks[title].raise_()
        window.dock_layout.view(title)
    return [window.views[t] for t in titles]
