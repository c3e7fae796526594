"""`attnscope export --format png/svg` writes what File > Export View writes: the view's plot
with its titles and colorbar, in the light theme unless --theme dark; never the view's
combo boxes, spin boxes and hints, never pyqtgraph's default black."""
from __future__ import annotations

import json

import pytest
from PySide6.QtGui import QPalette
from PySide6.QtWidgets import QApplication

from attnscope.cli.entry import main
from tests.helpers.images import pixels, share


@pytest.mark.parametrize("view", ["grid", "head", "lines"])
def test_cli_png_is_the_plot_on_white_without_controls(tmp_path, capsys, qapp, view):
    code = main(["export", "random-translator", "--text", "the big dog sees the cat .", "--out", str(tmp_path),
                 "--view", view, "--format", "png", "--kind", "cross", "--size", "700x420"])
    assert code == 0, capsys.readouterr()
    image = pixels(tmp_path / f"{view}.png")
    assert image.shape[:2] == (420, 700)
    assert share(image, (255, 255, 255)) > 0.2          # the light theme's plot background
    assert share(image, (0, 0, 0)) < 0.02               # not pyqtgraph's default black
    # A control (combo box, spin box, the hint line) sits on the window colour; the plot has none.
    window = QApplication.palette().color(QPalette.ColorRole.Window).getRgb()[:3]
    assert share(image, window) < 0.002


def test_cli_dark_theme_and_the_process_theme_kept(tmp_path, capsys, qapp):
    import pyqtgraph as pg

    before = pg.getConfigOption("background"), QApplication.palette().color(QPalette.ColorRole.Window)
    code = main(["export", "random-translator", "--text", "the big dog", "--out", str(tmp_path), "--view", "head",
                 "--format", "png", "--theme", "dark", "--size", "400x300"])
    assert code == 0 and json.loads(capsys.readouterr().out)["view"] == "head"
    assert share(pixels(tmp_path / "head.png"), (0, 0, 0)) > 0.2
    assert (pg.getConfigOption("background"), QApplication.palette().color(QPalette.ColorRole.Window)) == before
