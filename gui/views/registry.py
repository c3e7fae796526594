"""VIEWS: every dockable view of the main window, one line each.

A factory takes the AppState and returns the widget; the widget connects itself to the
state's signals. Add a view by appending a ViewSpec here.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from PySide6.QtWidgets import QWidget


@dataclass(frozen=True)
class ViewSpec:
    title: str
    factory: Callable[..., QWidget]      # factory(state: AppState) -> QWidget
    area: str = "right"                  # "left" | "right" | "bottom"


def _head_detail(state):
    from gui.views.head_detail import HeadDetail
    return HeadDetail(state)


def _decoding(state):
    from gui.views.decoding import DecodingPanel
    return DecodingPanel(state)


def _training(state):
    from gui.views.training import TrainingPanel
    return TrainingPanel(state)


def _positional(state):
    from gui.views.positional import PositionalLab
    return PositionalLab(state)


def _head_lines(state):
    from gui.views.head_lines import HeadLines
    return HeadLines(state)


def _head_stats(state):
    from gui.views.head_stats import HeadStats
    return HeadStats(state)


def _rollout(state):
    from gui.views.rollout import RolloutView
    return RolloutView(state)


def _compare(state):
    from gui.views.compare import CompareView
    return CompareView(state)


def _neuron(state):
    from gui.views.neuron import NeuronView
    return NeuronView(state)


VIEWS: list[ViewSpec] = [
    ViewSpec("Head detail", _head_detail, "right"),
    ViewSpec("Head lines", _head_lines, "right"),
    ViewSpec("Head statistics", _head_stats, "bottom"),
    ViewSpec("Rollout", _rollout, "right"),
    ViewSpec("Neurons", _neuron, "bottom"),
    ViewSpec("Decoding", _decoding, "bottom"),
    ViewSpec("Training", _training, "bottom"),
    ViewSpec("Positions", _positional, "bottom"),
    ViewSpec("Compare", _compare, "bottom"),
]
