"""Heatmaps in an SVG that stay sharp in every viewer.

Qt's SVG generator embeds a heatmap as a PNG of one pixel per cell, stretched to the plot's
size, marked image-rendering="optimizeSpeed": a hint browsers and librsvg read as "smooth
it", so a 9 x 65 map printed as blurred blobs. Here each such image is rewritten: a small map
(up to VECTOR_CELLS cells) becomes one rectangle per run of equal cells, exact at any zoom;
a larger one keeps its PNG, marked to be drawn pixelated (and crisp-edges, for viewers that
know only that name).
"""
from __future__ import annotations

import base64
import re

import numpy as np
from PySide6.QtCore import QByteArray
from PySide6.QtGui import QImage

VECTOR_CELLS = 4096              # 64 x 64: one rect per run at most this many cells
CRISP = 'image-rendering="pixelated" style="image-rendering:pixelated;image-rendering:crisp-edges"'
_IMAGE = re.compile(r'<image\b([^>]*?)xlink:href="data:image/png;base64,([A-Za-z0-9+/=\s]+)"([^>/]*)/?>(?:</image>)?')
_ATTR = re.compile(r'\b(x|y|width|height)="([-0-9.eE]+)"')


def sharpen(svg: str, background: tuple[int, int] | None = None) -> str:
    """``svg`` with every embedded PNG drawn crisp; small ones as vector cells.
    ``background``: the (width, height) of the page's own backdrop, left as it is."""
    return _IMAGE.sub(lambda m: _rewrite(m, background), svg)


def _rewrite(match: re.Match, background) -> str:
    head, data, tail = match.groups()
    attrs = {k: float(v) for k, v in _ATTR.findall(head + tail)}
    rgba = _decode(data)
    if rgba is None:
        return match.group(0)
    rows, cols = rgba.shape[:2]
    if rows * cols <= VECTOR_CELLS and (cols, rows) != background:
        return _rects(rgba, attrs.get("x", 0.0), attrs.get("y", 0.0), attrs.get("width", cols),
                      attrs.get("height", rows))
    rest = re.sub(r'\s*image-rendering="[^"]*"', "", head + tail)
    return f'<image{rest} {CRISP} xlink:href="data:image/png;base64,{data}"/>'


def _decode(data: str) -> np.ndarray | None:
    image = QImage.fromData(QByteArray(base64.b64decode(data)), "PNG")
    if image.isNull():
        return None
    image = image.convertToFormat(QImage.Format.Format_RGBA8888)
    w, h = image.width(), image.height()
    raw = np.frombuffer(image.constBits(), dtype=np.uint8, count=image.bytesPerLine() * h)
    return raw.reshape(h, image.bytesPerLine())[:, : w * 4].reshape(h, w, 4).copy()


def _rects(rgba: np.ndarray, x0: float, y0: float, width: float, height: float) -> str:
    """One <rect> per horizontal run of equal colour; transparent cells left out."""
    rows, cols = rgba.shape[:2]
    cw, ch = width / cols, height / rows
    out = ['<g shape-rendering="crispEdges" stroke="none">']   # the group Qt wrote strokes in black
    for r in range(rows):
        c = 0
        while c < cols:
            end = c + 1
            while end < cols and np.array_equal(rgba[r, end], rgba[r, c]):
                end += 1
            red, green, blue, alpha = (int(v) for v in rgba[r, c])
            if alpha:
                opacity = "" if alpha == 255 else f' fill-opacity="{alpha / 255:.3g}"'
                out.append(f'<rect x="{x0 + c * cw:.4g}" y="{y0 + r * ch:.4g}" width="{(end - c) * cw:.4g}" '
                           f'height="{ch:.4g}" fill="#{red:02x}{green:02x}{blue:02x}"{opacity}/>')
            c = end
    out.append("</g>")
    return "".join(out)
