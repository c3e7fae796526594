"""A new role detector is one entry of the one statistics list (engine/inspection/statistics.py):
appended, it is a column of Head statistics (with its tip), a key of `attnscope heads --json`
and a metric of the atlas; and the help page lists every entry with its definition."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from attnscope.engine.inspection import statistics
from attnscope.engine.inspection.statistics import STATISTICS
from attnscope.engine.loading.demo import random_model
from attnscope.engine.traces.tracing import trace_text
from attnscope.gui.state import AppState
from attnscope.engine.traces import reading

TEXT = "the cat sat on the mat and the dog sat on the log and the cat sat"


def focus(w, rows):
    """A new role detector: the largest weight of each row."""
    return w.max(-1).values, None


NEW = statistics.Statistic("focus", "max_j a_ij: the largest weight of a row", "the strongest key's weight",
                           focus, lambda n: 1.0, "a test's own")


def test_a_new_role_detector_is_one_entry(monkeypatch, tmp_path, capsys, qtbot, drawn):
    """Appending one entry to the list shows it in Head statistics' columns (with its tip), in
    `attnscope heads --json` (its values and definition) and in the atlas (its mean per head)."""
    from attnscope.cli.entry import main
    from attnscope.engine.atlas import atlas_summary, build_atlas
    from attnscope.engine.loading.catalog import open_model
    from attnscope.gui.views.head_stats import HeadStats, columns, stats_drawing

    monkeypatch.setattr(statistics, "STATISTICS", [*STATISTICS, NEW])
    loaded = random_model("gpt")
    trace = trace_text(loaded, TEXT)
    kind = trace.kinds[0]
    made = stats_drawing(trace, kind)
    assert "focus" in [c.name for c in columns()] and "focus" not in made.hidden
    np.testing.assert_allclose(made.stats["focus"], reading.weights(trace, kind).max(-1).mean(-1), atol=1e-6)
    state = AppState()
    state.set_model(loaded)
    state.set_trace(trace)
    view = HeadStats(state)
    qtbot.addWidget(view)
    drawn(view)
    header = [view.table.horizontalHeaderItem(c).text() for c in range(view.table.columnCount())]
    c = header.index("focus")
    assert NEW.tip in view.table.horizontalHeaderItem(c).toolTip() and not view.table.isColumnHidden(c)

    assert main(["heads", "random-gpt", "--json"]) == 0
    printed = json.loads(capsys.readouterr().out)
    assert "focus" in printed["statistics"][kind] and printed["definitions"]["focus"]["definition"] == NEW.definition

    corpus = tmp_path / "corpus.txt"
    corpus.write_text((TEXT + "\n") * 3, encoding="utf-8")
    gpt = Path(__file__).resolve().parents[2] / "resources" / "checkpoints" / "gpt.safetensors"
    summary = atlas_summary(build_atlas(open_model(str(gpt)), tmp_path / "a.safetensors", corpus, length=16, docs=2,
                                        top=2, samples=8))
    assert "focus" in summary["definitions"] and "focus" in summary["heads"][0]


def test_the_help_page_lists_every_entry():
    from html import escape

    from attnscope.gui.window.help import PAGES

    page = PAGES["Head statistics"]
    assert [s.name for s in STATISTICS if f"<b>{s.name}</b>: {escape(s.definition)}" not in page] == []
