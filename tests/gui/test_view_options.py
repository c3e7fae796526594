"""A view's options are one state object bound to its widgets by name (gui/view_options.py):
they survive a restart (the view built again reads the same settings file) and View > Reset
Layout's reset_view_options puts them back to their defaults."""
import importlib

import pytest

from attnscope.gui.settings import app_settings
from attnscope.gui.state import AppState
from attnscope.gui.view_options import reset_view_options, show_value, widget_value

# (module, view class, options class, options to set that differ from the defaults)
BOUND = [
    ("head_grid", "HeadGrid", "OverviewOptions", dict(threshold=0.3, log_colour=True)),
    ("head_detail", "HeadDetail", "HeadDetailOptions",
     dict(how="max of heads", threshold=0.1, normalise=True, hide_special=True, log_colour=True)),
    ("head_lines", "HeadLines", "HeadLinesOptions",
     dict(threshold=0.2, normalise=True, hide_special=True, pair_filter="A -> B", keys_per_query=9)),
    ("rollout", "RolloutView", "RolloutOptions", dict(mode="max of heads")),
    ("decoding", "DecodingPanel", "DecodingOptions",
     dict(strategy="sample", beam_width=6, length_penalty=0.5, temperature=2.0, top_k=40, top_p=0.9, seed=7,
          speed=11)),
    ("patching", "PatchingPanel", "PatchingOptions", dict(method="attribution", point="heads-by-pos", metric="logprob",
                                                          noising=True)),
    ("positional", "PositionalLab", "PositionalOptions", dict(d_model=32, n_positions=50, base=500.0, k=5, depth=2,
                                                              use_model=True)),
    ("training", "TrainingPanel", "TrainingOptions", dict(family="gpt", size="small", steps=900, lr=0.002,
                                                          probe_every=25)),
]


def build(qtbot, module: str, cls: str):
    view = getattr(importlib.import_module(f"attnscope.gui.views.{module}"), cls)(AppState())
    qtbot.addWidget(view)
    return view


def shown(view, options_cls) -> dict:
    return {name: widget_value(getattr(view, widget)) for name, widget in options_cls.widget_names().items()}


@pytest.mark.parametrize("module, cls, options_name, chosen", BOUND, ids=[b[1] for b in BOUND])
def test_options_survive_a_restart_and_reset_returns_the_defaults(qtbot, module, cls, options_name, chosen):
    options_cls = getattr(importlib.import_module(f"attnscope.gui.views.{module}"), options_name)
    defaults = vars(options_cls())
    assert all(defaults[name] != value for name, value in chosen.items())      # each a real change
    first = build(qtbot, module, cls)
    assert shown(first, options_cls) == pytest.approx(defaults)
    for name, value in chosen.items():                                         # as a user would: the widgets
        show_value(getattr(first, options_cls.widget_names()[name]), value)
    assert first.option_binding.options == options_cls(**chosen)
    first.close()

    again = build(qtbot, module, cls)                                          # a restart: same settings file
    assert shown(again, options_cls) == pytest.approx({**defaults, **chosen})

    reset_view_options([again, AppState()], app_settings())                    # a widget without options is skipped
    assert shown(again, options_cls) == pytest.approx(defaults)
    again.close()
    assert shown(build(qtbot, module, cls), options_cls) == pytest.approx(defaults)   # and the reset is kept


def test_reset_forgets_the_options_of_views_not_built(qtbot):
    """Reset Layout with Head lines never opened this session: its saved options go too."""
    from attnscope.gui.views.head_lines import HeadLinesOptions

    settings = app_settings()
    HeadLinesOptions(threshold=0.5, hide_special=True).save(settings)
    assert HeadLinesOptions.restore(settings) == HeadLinesOptions(threshold=0.5, hide_special=True)
    reset_view_options([], settings)
    assert HeadLinesOptions.restore(settings) == HeadLinesOptions()
    assert shown(build(qtbot, "head_lines", "HeadLines"), HeadLinesOptions) == pytest.approx(vars(HeadLinesOptions()))


def test_an_unreadable_saved_option_keeps_its_default(qtbot):
    from attnscope.gui.views.head_grid import OverviewOptions

    settings = app_settings()
    settings.setValue("overview/threshold", "lots")
    settings.setValue("overview/log_colour", "maybe")
    assert OverviewOptions.restore(settings) == OverviewOptions()


def test_view_reset_layout_in_the_window_puts_the_options_back(window):
    """The menu's Reset Layout (the window's DockLayout.reset) resets the options of the views
    open in it, not only their docks."""
    from attnscope.gui.views.head_detail import HeadDetailOptions

    detail = window.dock_layout.view("Head detail")
    show_value(detail.log_box, True)
    show_value(detail.threshold, 0.25)
    assert shown(detail, HeadDetailOptions)["log_colour"] is True
    next(a for a in window.findChildren(type(window.dark_action)) if a.text() == "&Reset Layout").trigger()
    defaults = {f: getattr(HeadDetailOptions(), f) for f in HeadDetailOptions.widget_names()}
    assert shown(detail, HeadDetailOptions) == pytest.approx(defaults)
