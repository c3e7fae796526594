"""The Atlas view's one head: its metric histograms as small bar plots, its metrics, its most
similar heads (links), its top contexts and decile samples (links: a context is a door).

The histograms are the atlas's own fixed bins (engine.atlas.state.BINS over [0, the statistic's
top]), read in the worker with the head's detail (engine.atlas.head_detail); the GUI thread only
hands the arrays to the bar items. Each context is one line: the query in [brackets], its
strongest keys in <angles>, clicked to Run its document and open Head detail at that row.
"""
from __future__ import annotations

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QUrl, Signal
from PySide6.QtWidgets import QSplitter, QTextBrowser, QWidget
from PySide6.QtCore import Qt

from attnscope.engine.atlas import head_detail
from attnscope.engine.inspection import statistics

COLUMNS = 3          # histograms per row


def head_panel(state, layer: int, head: int) -> dict:
    """The worker's half of a click: ``head_detail`` and each statistic's histogram, as
    {"histograms": {name: (left edges (BINS,), width, shares (BINS,))}}."""
    detail = head_detail(state, layer, head)
    hists = {}
    for s in statistics.atlas_statistics():
        counts = state.arrays[f"stat.{s.name}.hist"][layer, head].astype(np.float64)     # (BINS,)
        top = s.upper(state.meta["length"])
        total = counts.sum()
        hists[s.name] = (np.linspace(0.0, top, len(counts) + 1)[:-1], top / len(counts),
                         counts / total if total > 0 else counts)
    detail["histograms"] = hists
    return detail


def _pieces(tokens: list[str]) -> list[tuple[bool, str]]:
    """Each token as (glued to the one before, its text): WordPiece's "##", GPT-2's "Ġ" and
    SentencePiece's "▁" read as the tokenizer meant them, a newline byte as ¶."""
    wordpiece = any(t.startswith("##") for t in tokens)
    marked = any(t[:1] in ("Ġ", "▁") for t in tokens)
    out = []
    for t in tokens:
        t = t.replace("<0x0A>", "¶").replace("Ċ", "¶")
        if wordpiece:
            out.append((t.startswith("##"), t[2:] if t.startswith("##") else t))
        elif marked:
            out.append((t[:1] not in ("Ġ", "▁"), t[1:] if t[:1] in ("Ġ", "▁") else t))
        else:
            out.append((False, t))
    return out


def context_line(ctx: dict) -> str:
    """One kept context as text: the query in [brackets], its strongest keys in <angles>, the
    tokens joined as the text reads (pieces of a word glued)."""
    start, text = ctx["window_start"], ""
    strong = set(ctx["keys"][:3])
    for i, (glued, piece) in enumerate(_pieces(ctx["window"])):
        pos = start + i
        piece = f"[{piece}]" if pos == ctx["position"] else f"<{piece}>" if pos in strong else piece
        text += piece if glued or not text else " " + piece
    keys = ", ".join(f"{k} ({w:.2f})" for k, w in zip(ctx["keys"][:3], ctx["weights"][:3]))
    return f"doc {ctx['document']} @ {ctx['position']}  act {ctx['activation']:.3f}  keys {keys}:  {text}"


def escape(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


class HeadPanel(QSplitter):
    """``door(context)``: a context clicked; ``head_asked(layer, head)``: a similar head clicked."""
    door = Signal(dict)
    head_asked = Signal(int, int)

    def __init__(self, parent: QWidget | None = None):
        super().__init__(Qt.Orientation.Vertical, parent)
        self.detail: dict | None = None
        self.histograms = pg.GraphicsLayoutWidget()
        self.bars: dict[str, pg.BarGraphItem] = {}
        for i, s in enumerate(statistics.atlas_statistics()):
            plot = self.histograms.addPlot(row=i // COLUMNS, col=i % COLUMNS, title=s.name)
            plot.hideAxis("left")
            plot.setMouseEnabled(False, False)
            plot.getAxis("bottom").setStyle(tickTextOffset=2)
            plot.setToolTip(s.tip)
            bars = pg.BarGraphItem(x0=[], height=[], width=1.0, brush=pg.mkBrush(70, 130, 200), pen=None)
            plot.addItem(bars)
            self.bars[s.name] = bars
            self.bars[s.name].plot = plot
        self.text = QTextBrowser()
        self.text.setOpenLinks(False)
        self.text.anchorClicked.connect(self._link)
        self.text.setPlaceholderText("Click a head in the scatter or the list: its histograms, similar heads and "
                                     "contexts (click a context to Run its document).")
        self.addWidget(self.histograms)
        self.addWidget(self.text)

    def clear(self) -> None:
        self.detail = None
        self.text.clear()
        for bars in self.bars.values():
            bars.setOpts(x0=[], height=[])

    def show_head(self, detail: dict) -> None:
        self.detail = detail
        for name, (left, width, shares) in detail["histograms"].items():
            bars = self.bars[name]
            bars.setOpts(x0=left, height=shares, width=width)
            mean = detail[name]["mean"]
            bars.plot.setTitle(f"{name}  mean {mean:.3g}" if mean is not None else f"{name}  -")
            bars.plot.enableAutoRange()
        lines = [f"<b>{detail['name']}</b>  activation {_num(detail['activation'])}"]
        lines.append("  ".join(f"{s.name} {_num(detail[s.name]['mean'])}" for s in statistics.atlas_statistics()))
        similar = ", ".join(f"<a href='head:{s['head']}'>{s['head']}</a> ({s['cosine']:.2f})"
                            for s in detail["similar"])
        lines.append(f"most similar: {similar}")
        lines.append("<b>top contexts</b> (click one: its document is Run, and Head detail opens at that row)")
        lines += [f"<a href='top:{i}'>{escape(context_line(c))}</a>" for i, c in enumerate(detail["top"])]
        lines.append("<b>decile samples</b>")
        for d, samples in enumerate(detail["decile_samples"]):
            lines += [f"decile {d + 1}: <a href='decile:{d}:{i}'>{escape(context_line(c))}</a>"
                      for i, c in enumerate(samples)]
        self.text.setHtml("<br>".join(lines))

    def context(self, link: str) -> dict | None:
        """The context a link names ("top:3", "decile:4:1")."""
        if self.detail is None:
            return None
        parts = link.split(":")
        if parts[0] == "top":
            return self.detail["top"][int(parts[1])]
        if parts[0] == "decile":
            return self.detail["decile_samples"][int(parts[1])][int(parts[2])]
        return None

    def _link(self, url: QUrl) -> None:
        link = url.toString()
        if link.startswith("head:"):
            layer, head = link[len("head:L"):].split(".H")
            self.head_asked.emit(int(layer), int(head))
            return
        ctx = self.context(link)
        if ctx is not None:
            self.door.emit(ctx)


def _num(x) -> str:
    return "-" if x is None else f"{x:.4g}"
