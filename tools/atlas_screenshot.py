"""The Atlas view seen on a real screen, as a user reaches it (issue 56), and the README picture.

    xvfb-run -a -s "-screen 0 1600x1000x24" .venv/bin/python tools/atlas_screenshot.py --out DIR

The bundled GPT; File > Build Atlas… over the bundled Shakespeare (DOCS documents of its whole
context), built on the model thread and opened in the Atlas view; the head finder set to the heads
of high induction mass; a click on the induction head (layer 3, head 3) in the scatter; then a
click on its first top context, which Runs that document and opens Head detail at its row. Each
step is a picture of the whole screen (``import -window root``) in DIR: 1_build.png, 2_atlas.png,
3_door.png; the Atlas dock after step 2 is docs/images/atlas.png. Mouse events go through Qt's
test functions to the real widgets; the window's own workers compute everything.
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

from tools.screenshots import GPT, _wait, _window  # noqa: E402  (settings: a throwaway file)
from tools.why_screenshot import _pause, _screen  # noqa: E402

DOCS = 48
PICTURE = ROOT / "docs/images/atlas.png"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path("/work/scratch/atlas_shots"))
    parser.add_argument("--docs", type=int, default=DOCS, help="documents of the atlas built")
    parser.add_argument("--picture", type=Path, default=PICTURE)
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    atlas = args.out / "gpt-atlas.safetensors"
    atlas.unlink(missing_ok=True)

    import pyqtgraph as pg
    from PySide6.QtCore import Qt, QUrl
    from PySide6.QtTest import QTest
    from PySide6.QtWidgets import QApplication

    app = QApplication.instance() or QApplication(sys.argv[:1])     # as gui.app.run_app makes it
    app.setStyle("Fusion")
    pg.setConfigOptions(antialias=True)
    w = _window(GPT)
    w.move(0, 0)

    w.build_atlas_action.trigger()                                  # File > Build Atlas…
    dialog = w.atlas_actions.dialog
    dialog.docs_box.setValue(args.docs)
    dialog.top_box.setValue(8)
    dialog.out_edit.setText(str(atlas))
    dialog.move(500, 300)
    QTest.mouseClick(dialog.build_button, Qt.MouseButton.LeftButton)
    _wait(lambda: dialog.said.text().startswith(("1", "2", "3")), "the first documents", 120)
    _screen(args.out / "1_build.png")
    view_open = lambda: "Atlas" in w.views and w.views["Atlas"].atlas is not None  # noqa: E731
    _wait(view_open, "building the atlas", 600)
    print("built:", dialog.said.text())
    dialog.close()

    view = w.views["Atlas"]
    w.resizeDocks([w.docks["Atlas"]], [680], Qt.Orientation.Vertical)
    view.x_box.setCurrentText("previous")
    view.y_box.setCurrentText("induction")
    view.colour_box.setCurrentText("entropy")
    view.y_min.setValue(0.1)
    _pause()
    heads = view.atlas["summary"]["heads"]
    i = next(i for i, h in enumerate(heads) if (h["layer"], h["head"]) == (3, 3))
    x, y = view.values("previous")[i], view.values("induction")[i]
    spot = view.plot.mapFromScene(view.plot.getPlotItem().vb.mapViewToScene(pg.Point(x, y)))
    QTest.mouseClick(view.plot.viewport(), Qt.MouseButton.LeftButton, Qt.KeyboardModifier.NoModifier, spot)
    _wait(lambda: view.detail is not None and not view.jobs.busy, "the head's detail")
    print("clicked:", view.detail["name"], "found:", view.finder.count.text())
    _screen(args.out / "2_atlas.png")
    args.picture.parent.mkdir(parents=True, exist_ok=True)
    dock = w.docks["Atlas"]                   # the README's picture: the Atlas dock, cut from the screen
    top_left = dock.mapToGlobal(dock.rect().topLeft())
    crop = f"{dock.width()}x{dock.height()}+{top_left.x()}+{top_left.y()}"
    subprocess.run(["convert", str(args.out / "2_atlas.png"), "-crop", crop, "+repage", str(args.picture)], check=True)
    print("wrote", args.picture, crop)

    w.resizeDocks([w.docks["Atlas"]], [420], Qt.Orientation.Vertical)     # Head detail gets the room
    view.panel.text.anchorClicked.emit(QUrl("top:0"))                         # the first top context
    _wait(lambda: w.atlas_actions.landed is not None, "the context's Run and Head detail", 120)
    detail = w.views["Head detail"]
    _wait(lambda: not detail.draw_jobs.busy, "Head detail")
    print("door:", view.door_note.text(), "|", detail.readout.text())
    _screen(args.out / "3_door.png")
    w.discard_and_stop()
    w.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
