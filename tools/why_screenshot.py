"""The Why panel seen on a real screen, as a user reaches it (issue 48), and the README picture.

    xvfb-run -a -s "-screen 0 1600x1000x24" .venv/bin/python tools/why_screenshot.py --out DIR

The bundled GPT, a text repeated twice, Head detail of the induction head (layer 3, head 3), a
right-click on the cell where a token of the second copy attends to the token after its first
copy, the menu's "Why does query i attend to key j?", the panel, then a click on the source
head's name (L2.H1, the previous-token head) on the map's key axis. Each step is a picture of
the whole screen (``import -window root``) in DIR: 1_menu.png, 2_why.png, 3_source_head.png;
the window's own grab after step 2 is docs/images/why_induction.png. Mouse events go through
Qt's test functions to the real widgets; the window's own workers compute everything.
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("QT_QPA_PLATFORM", "xcb")      # a real screen (Xvfb's): before tools.screenshots sets offscreen

from tools.screenshots import GPT, _run, _save, _wait, _window  # noqa: E402  (settings: a throwaway file)

TEXT = "the cat sat on the mat . the cat sat on the mat ."
QUERY, KEY = 12, 2          # the second "c" -> the "##at" after the first one: the induction head's 0.83
PICTURE = ROOT / "docs/images/why_induction.png"


def _pause(ms: int = 400) -> None:
    """Let the window paint what it has (the shot is of the screen, not of Qt's buffers)."""
    from PySide6.QtCore import QElapsedTimer

    clock = QElapsedTimer()
    clock.start()
    _wait(lambda: clock.elapsed() > ms, "painting", 10)


def _screen(path: Path) -> None:
    _pause()
    subprocess.run(["import", "-window", "root", str(path)], check=True)
    print("wrote", path)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path("/work/scratch/why_shots"))
    parser.add_argument("--picture", type=Path, default=PICTURE)
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)

    import pyqtgraph as pg
    from PySide6.QtCore import Qt
    from PySide6.QtTest import QTest
    from PySide6.QtWidgets import QApplication

    app = QApplication.instance() or QApplication(sys.argv[:1])     # as gui.app.run_app makes it
    app.setStyle("Fusion")
    pg.setConfigOptions(antialias=True)
    w = _window(GPT)
    w.move(0, 0)
    _run(w, TEXT)
    grid = w.grid                                    # a click on the overview's tile L3 H3 opens it
    tile = grid.plot.mapFromScene(grid.scene_pos_of(3, 3, 4, 4))
    QTest.mouseClick(grid.plot.viewport(), Qt.MouseButton.LeftButton, Qt.KeyboardModifier.NoModifier, tile)
    detail = w.dock_layout.view("Head detail")
    _wait(lambda: detail.drawing is not None and (detail.drawing.layer, detail.drawing.head) == (3, 3)
          and not detail.draw_jobs.busy, "Head detail of 3.3")
    w.resizeDocks([w.docks["Why"]], [600], Qt.Orientation.Vertical)
    _pause()

    cell = detail.plot.mapFromScene(detail.item.vb.mapViewToScene(pg.Point(KEY + 0.5, QUERY + 0.5)))
    QTest.mouseMove(detail.plot.viewport(), cell)
    QTest.mouseClick(detail.plot.viewport(), Qt.MouseButton.RightButton, Qt.KeyboardModifier.NoModifier, cell)
    _wait(lambda: QApplication.activePopupWidget() is not None, "the cell's menu", 10)
    _screen(args.out / "1_menu.png")
    menu = QApplication.activePopupWidget()
    action = menu.actions()[0]
    print("menu:", action.text())
    QTest.mouseClick(menu, Qt.MouseButton.LeftButton, Qt.KeyboardModifier.NoModifier,
                     menu.actionGeometry(action).center())
    panel = w.views["Why"]
    _wait(lambda: panel.result is not None and not panel.jobs.busy, "the split")
    _screen(args.out / "2_why.png")
    args.picture.parent.mkdir(parents=True, exist_ok=True)
    _save(w, args.picture)
    t = panel.shown()
    print("title:", panel.title.text())
    print("rows:", t.rows, "\ncols:", t.cols, "\nkey bars:", t.key_bars[0][:4])

    column = t.cols.index("L2.H1")
    x = panel.map.vb.mapViewToScene(pg.Point(column + 0.5, 0)).x()
    label = panel.plots.mapFromScene(pg.Point(x, panel.key_axis.sceneBoundingRect().bottom() - 10))
    QTest.mouseClick(panel.plots.viewport(), Qt.MouseButton.LeftButton, Qt.KeyboardModifier.NoModifier, label)
    _wait(lambda: detail.drawing is not None and (detail.drawing.layer, detail.drawing.head) == (2, 1)
          and not detail.draw_jobs.busy, "Head detail of 2.1")
    _screen(args.out / "3_source_head.png")
    print("selected:", w.state.kind, w.state.layer, w.state.head)
    w.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
