"""Every text the window shows stays readable through theme switches: measured on the
pixels the window draws, not on the palette it claims to use (a style sheet froze a label's
colours at the theme it was polished in: #DCDCDC on #EFEFEF after light -> dark -> light)."""
from __future__ import annotations

import numpy as np
import pytest
from PySide6.QtGui import QPalette
from PySide6.QtWidgets import QAbstractButton, QLabel

from attnscope.gui.theme import ACCENTS, theme_palette

VIEWS = ("Head detail", "Head lines", "Rollout", "Decoding", "Training", "Compare", "Head statistics")


def luminance(rgb) -> float:
    """WCAG 2 relative luminance of an sRGB colour (0..255 channels)."""
    c = np.asarray(rgb, dtype=float) / 255.0
    c = np.where(c <= 0.03928, c / 12.92, ((c + 0.055) / 1.055) ** 2.4)
    return float(0.2126 * c[..., 0] + 0.7152 * c[..., 1] + 0.0722 * c[..., 2])


def contrast(a, b) -> float:
    la, lb = sorted((luminance(a), luminance(b)), reverse=True)
    return (la + 0.05) / (lb + 0.05)


def drawn_contrast(pixels: np.ndarray) -> float:
    """The contrast of a text's strongest pixel against its background (the commonest colour)."""
    flat = pixels.reshape(-1, 3)
    colours, counts = np.unique(flat, axis=0, return_counts=True)
    background = colours[counts.argmax()]
    lum = np.array([luminance(c) for c in colours])
    lb = luminance(background)
    ratios = (np.maximum(lum, lb) + 0.05) / (np.minimum(lum, lb) + 0.05)
    return float(ratios.max())


def window_pixels(window) -> np.ndarray:
    image = window.grab().toImage().convertToFormat(window.grab().toImage().Format.Format_RGB888)
    w, h = image.width(), image.height()
    data = np.frombuffer(image.constBits(), dtype=np.uint8, count=image.bytesPerLine() * h)
    return data.reshape(h, image.bytesPerLine())[:, : w * 3].reshape(h, w, 3).copy()


def texts_on_screen(window):
    """Every visible label and button with text, with its rectangle in the window."""
    for widget in window.findChildren(QLabel) + window.findChildren(QAbstractButton):
        if not widget.isVisible() or not widget.text().strip() or widget.width() < 4:
            continue
        rect = widget.rect().translated(widget.mapTo(window, widget.rect().topLeft()))
        if isinstance(widget, QAbstractButton) and widget.isEnabled() is False:
            continue   # disabled controls are exempt (WCAG); they are checked below to look disabled
        yield widget, rect


def low_contrast(window) -> list[str]:
    pixels = window_pixels(window)
    bad = []
    for widget, rect in texts_on_screen(window):
        crop = pixels[max(0, rect.top()): rect.bottom() + 1, max(0, rect.left()): rect.right() + 1]
        if crop.size == 0:
            continue
        ratio = drawn_contrast(crop)
        if ratio < 4.5:
            bad.append(f"{type(widget).__name__} {widget.text()[:40]!r}: {ratio:.2f}")
    return bad


def _show_views(window):
    for title in VIEWS:
        window.docks[title].show()
        window.docks[title].raise_()
        window.dock_layout.view(title)


@pytest.mark.parametrize("first", [False, True])
def test_every_label_reads_at_aa_contrast_through_two_theme_switches(window, qtbot, first):
    _show_views(window)
    window.banner.setText("Not in this model's vocabulary: zzz")
    window.banner.setVisible(True)
    window.state.set_output("der hund")
    checked = []
    try:
        for dark in (first, not first, first):
            window.set_dark(dark)
            for title in ("Decoding", "Training", "Compare"):     # each bottom tab in front once
                window.docks[title].raise_()
                qtbot.wait(1)
                assert low_contrast(window) == [], f"dark={dark}, {title} in front"
            checked.append(len(list(texts_on_screen(window))))
    finally:
        window.set_dark(False)
    assert min(checked) > 20      # the test saw the window's texts, not an empty window


@pytest.mark.parametrize("dark", [False, True])
def test_disabled_controls_and_placeholders_read_as_such(qapp, dark):
    pal = theme_palette(dark)
    background = pal.color(QPalette.ColorRole.Button).getRgb()[:3]
    enabled = pal.color(QPalette.ColorGroup.Active, QPalette.ColorRole.ButtonText).getRgb()[:3]
    disabled = pal.color(QPalette.ColorGroup.Disabled, QPalette.ColorRole.ButtonText).getRgb()[:3]
    assert contrast(enabled, background) >= 4.5
    assert contrast(disabled, background) < contrast(enabled, background) / 2   # visibly greyed out
    placeholder = pal.color(QPalette.ColorGroup.Active, QPalette.ColorRole.PlaceholderText).getRgb()[:3]
    assert contrast(placeholder, pal.color(QPalette.ColorRole.Base).getRgb()[:3]) >= 4.5


@pytest.mark.parametrize("dark", [False, True])
def test_accents_read_on_their_theme(qapp, dark):
    window_colour = theme_palette(dark).color(QPalette.ColorRole.Window).getRgb()[:3]
    for name, colours in ACCENTS.items():
        from PySide6.QtGui import QColor
        assert contrast(QColor(colours[dark]).getRgb()[:3], window_colour) >= 4.5, name


def test_no_widget_carries_a_style_sheet(window):
    """A style sheet freezes a widget's palette at the theme it was polished in."""
    _show_views(window)
    from PySide6.QtWidgets import QWidget
    styled = [type(w).__name__ for w in window.findChildren(QWidget) if w.styleSheet()]
    assert styled == []


def _indicator_edge(qapp, make):
    """The pixels on the edge of a check box's (radio button's) indicator, and the window's
    colour around it, as drawn."""
    from PySide6.QtWidgets import QStyle, QStyleOptionButton, QVBoxLayout, QWidget

    parent = QWidget()
    box = make(parent)
    QVBoxLayout(parent).addWidget(box)
    parent.resize(200, 60)
    parent.show()
    qapp.processEvents()
    option = QStyleOptionButton()
    option.initFrom(box)
    element = (QStyle.SubElement.SE_CheckBoxIndicator if box.metaObject().className() == "QCheckBox"
               else QStyle.SubElement.SE_RadioButtonIndicator)
    square = box.style().subElementRect(element, option, box)
    square.translate(box.mapTo(parent, square.topLeft()) - square.topLeft())
    image = parent.grab().toImage()
    edge = [image.pixelColor(x, y).getRgb()[:3] for x in range(square.left(), square.right() + 1)
            for y in (square.top(), square.bottom())]
    edge += [image.pixelColor(x, y).getRgb()[:3] for y in range(square.top(), square.bottom() + 1)
             for x in (square.left(), square.right())]
    window_colour = image.pixelColor(2, 2).getRgb()[:3]
    parent.close()
    parent.deleteLater()
    return edge, window_colour


@pytest.mark.parametrize("dark", [False, True])
@pytest.mark.parametrize("kind", ["check box", "radio button"])
def test_an_unchecked_indicator_is_seen_on_either_theme(qapp, dark, kind):
    """Walked as a user: on the dark theme an unchecked box ("scale to max", "log colour") was a
    #222 square on the #2d2d2d window, its outline at 1.1:1 (Fusion outlines it in the window's
    colour made darker). Its outline, as drawn in a window, reads at 3:1 against the window
    (WCAG's minimum for a control) on both themes, through a theme switch and back."""
    from PySide6.QtWidgets import QCheckBox, QRadioButton

    from attnscope.gui.theme import apply_theme

    make = (lambda p: QCheckBox("scale to max", p)) if kind == "check box" else (lambda p: QRadioButton("npz", p))
    try:
        for theme in (dark, not dark, dark):
            apply_theme(theme)
            edge, window_colour = _indicator_edge(qapp, make)
            assert window_colour == qapp.palette().color(QPalette.ColorRole.Window).getRgb()[:3]
            assert max(contrast(c, window_colour) for c in edge) >= 3.0, f"dark={theme}"
    finally:
        apply_theme(False)


def test_the_style_is_set_once_and_the_theme_switch_walks_no_widget(qapp, monkeypatch):
    """The indicators' outline comes from the application's style, set once: a theme switch sets
    the palette and touches no style, no class palette and no widget but those with an accent
    (a class palette set on every switch preceded a crash in this walk, c42272a)."""
    from PySide6.QtWidgets import QApplication

    from attnscope.gui import theme

    theme.apply_theme(False)
    style = qapp.style()
    assert isinstance(style, theme.OutlinedIndicators) and style.baseStyle().name().lower() == "fusion"
    palettes = []
    monkeypatch.setattr(QApplication, "setPalette", lambda *args: palettes.append(args[1:]))
    monkeypatch.setattr(QApplication, "setStyle", lambda *args: pytest.fail("the style was set again"))
    theme.apply_theme(True)
    theme.apply_theme(False)
    assert qapp.style() is style
    assert [len(args) for args in palettes] == [1, 1]            # the application's palette, no class's


def test_a_theme_or_font_change_visits_only_the_widgets_that_asked(qtbot, monkeypatch):
    """apply_theme walked QApplication.allWidgets(), which hands out widgets half-way through
    their destruction, and crashed the process (export's render on a clean clone). Now it and
    apply_font visit the widgets that asked for an accent or a font, each until it is destroyed."""
    from PySide6.QtWidgets import QApplication, QLabel

    from attnscope.gui import theme

    def walked():
        raise AssertionError("walked every widget")
    monkeypatch.setattr(QApplication, "allWidgets", staticmethod(walked))
    label = QLabel("note")
    qtbot.addWidget(label)
    theme.tint(label, "warning")
    theme.emphasise(label, 1.5)
    theme.apply_theme(True)
    assert label.palette().color(label.palette().ColorRole.WindowText) == theme.accent("warning", True)
    theme.apply_font(False)
    theme.apply_theme(False)
    key = id(label)
    assert key in theme._TINTED and key in theme._SCALED
    label.deleteLater()
    from PySide6.QtCore import QCoreApplication, QEvent
    QCoreApplication.sendPostedEvents(None, QEvent.Type.DeferredDelete.value)
    assert key not in theme._TINTED and key not in theme._SCALED
