"""VIEWS: every dockable view of the main window, one line each.

A factory takes the AppState and returns the widget; the widget connects itself to the
state's signals. Add a view by appending a ViewSpec here. Views are imported when the
window builds them, so importing this list stays cheap.
"""
from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import Callable

from PySide6.QtWidgets import QWidget


@dataclass(frozen=True)
class ViewSpec:
    title: str
    factory: Callable[..., QWidget]      # factory(state: AppState) -> QWidget
    area: str = "right"                  # "left" | "right" | "bottom"


def lazy(module: str, cls: str) -> Callable[..., QWidget]:
    """A factory that imports ``gui.views.<module>`` only when the view is built."""
    def factory(state):
        return getattr(importlib.import_module(f"attnscope.gui.views.{module}"), cls)(state)
    return factory


VIEWS: list[ViewSpec] = [
    ViewSpec("Head detail", lazy("head_detail", "HeadDetail"), "right"),
    ViewSpec("Head lines", lazy("head_lines", "HeadLines"), "right"),
    ViewSpec("Rollout", lazy("rollout", "RolloutView"), "right"),
    ViewSpec("Head statistics", lazy("head_stats", "HeadStats"), "bottom"),
    ViewSpec("Neurons", lazy("neuron", "NeuronView"), "bottom"),
    ViewSpec("Decoding", lazy("decoding", "DecodingPanel"), "bottom"),
    ViewSpec("Training", lazy("training", "TrainingPanel"), "bottom"),
    ViewSpec("Positions", lazy("positional", "PositionalLab"), "bottom"),
    ViewSpec("Compare", lazy("compare", "CompareView"), "bottom"),
    ViewSpec("Interventions", lazy("interventions", "InterventionsPanel"), "right"),
    ViewSpec("Lens", lazy("lens", "LensView"), "bottom"),
    ViewSpec("Patching", lazy("patching", "PatchingPanel"), "bottom"),
    ViewSpec("Why", lazy("why_panel", "WhyPanel"), "bottom"),
    ViewSpec("Atlas", lazy("atlas", "AtlasView"), "bottom"),
]
