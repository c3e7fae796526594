"""SVG heatmaps stay sharp: small maps as one rectangle per run of equal cells, larger ones
as a PNG of one pixel per cell marked pixelated (Qt wrote optimizeSpeed, which browsers and
librsvg smooth into blurred blobs)."""
from __future__ import annotations

import base64
import re

import numpy as np
from PySide6.QtCore import QBuffer, QByteArray, QIODevice
from PySide6.QtGui import QImage

from attnscope.gui.widgets.svg_cells import VECTOR_CELLS, sharpen
from attnscope.cli.entry import main


def png_of(rgb: np.ndarray) -> str:
    h, w = rgb.shape[:2]
    image = QImage(np.ascontiguousarray(rgb, dtype=np.uint8).tobytes(), w, h, 3 * w, QImage.Format.Format_RGB888)
    data = QByteArray()
    buffer = QBuffer(data)
    buffer.open(QIODevice.OpenModeFlag.WriteOnly)
    image.save(buffer, "PNG")
    return base64.b64encode(bytes(data)).decode()


def svg_with(rgb: np.ndarray, width: int, height: int) -> str:
    return (f'<svg><g stroke="#000000" transform="matrix(2,0,0,3,10,20)"><image x="0" y="0" width="{width}" '
            f'height="{height}" preserveAspectRatio="none" image-rendering="optimizeSpeed" '
            f'xlink:href="data:image/png;base64,{png_of(rgb)}" /></g></svg>')


def test_a_small_map_becomes_exact_rectangles():
    rgb = np.zeros((2, 3, 3), dtype=np.uint8)
    rgb[0] = (255, 0, 0)                  # one run of three red cells
    rgb[1, 0], rgb[1, 1], rgb[1, 2] = (0, 0, 255), (0, 255, 0), (0, 255, 0)
    out = sharpen(svg_with(rgb, 30, 20))
    rects = re.findall(r'<rect x="([\d.]+)" y="([\d.]+)" width="([\d.]+)" height="([\d.]+)" fill="(#\w+)"', out)
    assert rects == [("0", "0", "30", "10", "#ff0000"), ("0", "10", "10", "10", "#0000ff"),
                     ("10", "10", "20", "10", "#00ff00")]
    assert "<image" not in out and 'stroke="none"' in out      # no black outlines from Qt's group


def test_a_large_map_stays_one_pixel_per_cell_and_is_drawn_pixelated():
    side = int(np.sqrt(VECTOR_CELLS)) + 1
    rgb = np.random.default_rng(0).integers(0, 255, (side, side, 3))
    out = sharpen(svg_with(rgb, 400, 400))
    assert "<rect" not in out and "optimizeSpeed" not in out
    assert out.count('image-rendering="pixelated"') == 1 and "crisp-edges" in out
    href = re.search(r'base64,([^"]+)"', out).group(1)
    assert QImage.fromData(QByteArray(base64.b64decode(href)), "PNG").size().toTuple() == (side, side)


def test_cli_svg_of_a_head_has_no_smoothed_images(tmp_path, capsys, qapp):
    code = main(["export", "random-translator", "--text", "the big dog sees the cat .", "--out", str(tmp_path),
                 "--view", "head", "--format", "svg", "--kind", "cross", "--size", "500x400"])
    assert code == 0, capsys.readouterr()
    svg = (tmp_path / "head.svg").read_text()
    assert "optimizeSpeed" not in svg and svg.count("<rect") > 8
