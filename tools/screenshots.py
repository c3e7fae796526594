"""The README's pictures, made from the real application, offscreen, so they can be made again
whenever the window changes and stay true to it.

    .venv/bin/python tools/screenshots.py            # writes docs/images/*.png
    .venv/bin/python tools/screenshots.py --out DIR

Each picture is the window (or one of its views) as a user gets it: the bundled models, a
sentence typed, the window's own workers, nothing drawn by this script. Settings are a
throwaway file, so the user's own are never read or changed. About a minute on a laptop CPU.
"""
from __future__ import annotations

import argparse
import gzip
import os
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
_SETTINGS = tempfile.TemporaryDirectory(prefix="attnscope-shots-")
os.environ["ATTNSCOPE_SETTINGS"] = str(Path(_SETTINGS.name) / "settings.ini")

TRANSLATOR = str(ROOT / "resources/checkpoints/translator.safetensors")
GPT = str(ROOT / "resources/checkpoints/gpt.safetensors")
SENTENCE = "The woman helps the man who cannot work."
SIZE = (1600, 1000)
LONG_TOKENS_SHOWN = 128   # Head detail's long-text mode from this many tokens (the app's own: 1,024)


def _wait(until, what: str, timeout_s: float = 120.0) -> None:
    from attnscope.gui.worker import process_events_until

    if not process_events_until(until, timeout_s):
        raise TimeoutError(f"the window did not finish {what} in time")


def _settled(w) -> bool:
    jobs = [w.run_jobs, w.output_jobs, w.model_jobs]
    jobs += [v.draw_jobs for v in w.views.values() if hasattr(v, "draw_jobs")]
    return not any(j.busy for j in jobs)


def _window(source: str):
    from attnscope.gui.window.main_window import MainWindow

    w = MainWindow(source=source, device="cpu")
    w.resize(*SIZE)
    w.show()
    w.tip_row.dismiss()
    _wait(lambda: w.state.trace is not None and _settled(w), "opening the model")
    return w


def _run(w, text: str) -> None:
    old = w.state.trace
    w.input_bar.text_edit.setText(text)
    w.run()
    _wait(lambda: w.state.trace is not old and bool(w.state.output) and _settled(w), "the run")


def _show(w, title: str):
    w.docks[title].show()
    w.docks[title].raise_()
    view = w.dock_layout.view(title)
    _wait(lambda: _settled(w), f"drawing {title}")
    return view


def _save(widget, path: Path) -> None:
    from PySide6.QtWidgets import QApplication

    for _ in range(5):
        QApplication.processEvents()
    if not widget.grab().save(str(path)):
        raise OSError(f"could not write {path}")
    print(path)


def main_window(out: Path) -> None:
    """The window on the bundled translator: every head of every layer, one open large."""
    from attnscope.engine.kinds import CROSS

    w = _window(TRANSLATOR)
    _run(w, SENTENCE)
    w.state.select(CROSS, 1, 1)
    _show(w, "Head detail")
    _save(w, out / "main_window.png")
    w.close()


def interventions(out: Path) -> None:
    """One cross-attention head switched off: its tile marked, the translation changed."""
    from attnscope.engine.interventions import HeadRef
    from attnscope.engine.kinds import CROSS

    w = _window(TRANSLATOR)
    _run(w, SENTENCE)
    w.state.select(CROSS, 1, 1)
    old = w.state.trace
    w.state.set_interventions(w.state.interventions.ablate([HeadRef(CROSS, 1, 1)]))
    _wait(lambda: w.state.trace is not old and _settled(w), "the run with the head off")
    panel = _show(w, "Interventions")
    panel._on_trace(w.state.trace)
    _wait(lambda: "KL" in panel.effect.text() and _settled(w), "the effect")
    _save(w, out / "interventions.png")
    w.close()


def long_head_detail(out: Path) -> None:
    """Head detail on the bundled GPT's longest text (256 tokens of Shakespeare), in the mode
    the app uses past 1,024 tokens (here from 128, so the bundled model shows it): the map
    pooled to the screen's pixels, the minimap, exact cells computed for the part zoomed in."""
    import attnscope.gui.views.head_detail as detail

    detail.DETAIL_EXACT = LONG_TOKENS_SHOWN
    text = gzip.open(ROOT / "resources/corpora/shakespeare.txt.gz", "rt", encoding="utf-8").read(20_000)
    text = " ".join(text[5000:].split())[:1500]
    w = _window(GPT)
    _run(w, text)
    w.state.select(w.state.kind, 3, 1)
    view = _show(w, "Head detail")
    dock = w.docks["Head detail"]
    dock.setFloating(True)
    dock.resize(900, 860)
    _wait(lambda: _settled(w), "the floating view")
    t = view.drawing.long[0] if view.drawing and view.drawing.long else None
    if t:
        view.item.setRange(xRange=(0.6 * t, 0.85 * t), yRange=(0.6 * t, 0.85 * t), padding=0)
        _wait(lambda: view.zoom_block is not None and not view.zoom_jobs.busy and _settled(w), "the zoomed block")
    _save(dock, out / "head_detail_long.png")
    w.close()


def positional_lab(out: Path) -> None:
    """The positional lab: sinusoidal encodings as clocks, the table, rotary offsets."""
    w = _window(TRANSLATOR)
    _run(w, SENTENCE)
    lab = _show(w, "Positions")
    dock = w.docks["Positions"]
    dock.setFloating(True)
    dock.resize(1400, 760)
    lab.tabs.setCurrentIndex(1)                 # the clocks: each pair of dimensions a point turning with position
    lab.position.setValue(17)
    _wait(lambda: _settled(w), "the clocks")
    _save(dock, out / "positional_lab.png")
    w.close()


SHOTS = {"main_window": main_window, "interventions": interventions, "head_detail_long": long_head_detail,
         "positional_lab": positional_lab}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "images")
    parser.add_argument("--only", choices=sorted(SHOTS), action="append")
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)

    import pyqtgraph as pg
    from PySide6.QtWidgets import QApplication

    app = QApplication.instance() or QApplication([])
    app.setApplicationName("attnscope")
    app.setOrganizationName("attnscope")
    app.setStyle("Fusion")
    pg.setConfigOptions(antialias=True)
    for name in args.only or SHOTS:
        SHOTS[name](args.out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
