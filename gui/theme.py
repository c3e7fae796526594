"""Light and dark: the Qt palette, the few accent colours, and every pyqtgraph plot's
background, axes, titles and legends.

Why every colour is looked up here, each time the theme changes: a colour fixed when a
widget is built is right for one theme only. Qt style sheets are the worst of it: a widget
with one (even only "font-size: 14pt") keeps the palette it had when it was polished, so
after light -> dark -> light its text was #DCDCDC on #EFEFEF. So no widget here carries a
style sheet for colour or font; a widget that needs an accent (a warning, a tip) or a
larger or italic font asks ``tint`` / ``emphasise``, and ``apply_theme`` / ``apply_font``
set them again for the new theme.

Why a walk over the plots: pyqtgraph takes its colours from global options when an item is
made, so plots built before a theme switch keep the old ones (black labels on a black
background). ``restyle_plots`` recolours every plot under a widget; views built later take
the new global options.
"""
from __future__ import annotations

import pyqtgraph as pg
from PySide6.QtCore import QRectF, Qt
from PySide6.QtGui import QColor, QFont, QPainter, QPalette, QPen
from PySide6.QtWidgets import QApplication, QProxyStyle, QStyle, QStyleFactory, QToolTip, QWidget

BACKGROUND = {False: "w", True: "k"}
FOREGROUND = {False: (30, 30, 30), True: (220, 220, 220)}
# Text colours with a meaning, each at least 4.5:1 (WCAG AA) on its theme's window colour.
ACCENTS = {
    "warning": {False: "#8a5200", True: "#f0b45a"},   # notes about the input (a text cut, unknown words)
    "info": {False: "#1f5f9f", True: "#8cc4ff"},      # the first-start tip
    "muted": {False: "#595959", True: "#b0b0b0"},     # secondary text (pruned beams, hints)
}
_ACCENT, _FONT_SCALE, _ITALIC = "attnscope_accent", "attnscope_font_scale", "attnscope_italic"
_CURRENT = {"dark": False}

R, G = QPalette.ColorRole, QPalette.ColorGroup
_DARK = {R.Window: (45, 45, 48), R.WindowText: (220, 220, 220), R.Base: (37, 37, 38),
         R.AlternateBase: (55, 55, 58), R.Text: (220, 220, 220), R.Button: (55, 55, 58),
         R.ButtonText: (220, 220, 220), R.BrightText: (255, 255, 255), R.Highlight: (38, 110, 190),
         R.HighlightedText: (255, 255, 255), R.ToolTipBase: (37, 37, 38), R.ToolTipText: (220, 220, 220),
         R.PlaceholderText: (160, 160, 160), R.Link: (140, 196, 255), R.Light: (75, 75, 78),
         R.Midlight: (62, 62, 65), R.Mid: (40, 40, 42), R.Dark: (25, 25, 26), R.Shadow: (0, 0, 0)}
_DARK_DISABLED = {R.WindowText: (125, 125, 128), R.Text: (125, 125, 128), R.ButtonText: (125, 125, 128),
                  R.Button: (48, 48, 50), R.Base: (42, 42, 44), R.Highlight: (70, 70, 74),
                  R.HighlightedText: (160, 160, 160), R.PlaceholderText: (105, 105, 108)}
# Fusion's light placeholder is Text at half opacity (about 4:1 on white): darker, to read.
_LIGHT_PLACEHOLDER = (112, 112, 112)


# Why check boxes and radio buttons get an outline of their own, drawn by a proxy over Fusion:
# Fusion draws the indicator from two palette roles only, its fill from Base and its outline from
# Window made 40 % darker. On the dark window that was a #222 square on #2d2d2d (1.1:1): unseen.
# - The palette cannot fix it: the outline is always darker than the window by the same ratio
#   (1.1:1 whatever the dark Window), and a Base light enough for the fill to read at 3:1 (WCAG's
#   minimum for a control) puts the theme's text at 3.3:1 in every text box, table and list.
# - A palette of the check boxes' own (fa2388a, QApplication.setPalette(pal, "QCheckBox")) changes
#   every check box's palette on each theme switch; a CI run crashed in apply_theme right after it
#   (reverted in c42272a, never understood). A style sheet rule (QCheckBox::indicator) puts a style
#   sheet style over every widget (which froze palettes before: see above) and draws the whole
#   indicator itself, check mark included, in colours fixed when it was set.
# - So the style draws Fusion's indicator, then its outline again in a colour taken from the
#   palette of the moment (half-way between the window and its text: 3.7:1 on the dark window,
#   3.8:1 on the light one). Nothing is walked or set per widget; the style is set once per
#   application, wrapping the Fusion it had, which is therefore not deleted while widgets use it.
class OutlinedIndicators(QProxyStyle):
    """Fusion, with each check box's square and radio button's circle outlined so it is seen."""

    def drawPrimitive(self, element, option, painter, widget=None) -> None:
        super().drawPrimitive(element, option, painter, widget)
        shape = _INDICATORS.get(element)
        focus = QStyle.StateFlag.State_HasFocus | QStyle.StateFlag.State_KeyboardFocusChange
        if shape is None or (option.state & focus) == focus:       # Fusion's focus outline stays
            return
        painter.save()
        painter.setRenderHint(QPainter.RenderHint.Antialiasing, True)
        painter.setPen(QPen(indicator_outline(option.palette), 1))
        painter.setBrush(Qt.BrushStyle.NoBrush)
        edge = QRectF(option.rect).adjusted(0.5, 0.5, -0.5, -0.5)   # on Fusion's own 1 px outline
        (painter.drawRect if shape == "square" else painter.drawEllipse)(edge)
        painter.restore()


_INDICATORS = {QStyle.PrimitiveElement.PE_IndicatorCheckBox: "square",
               QStyle.PrimitiveElement.PE_IndicatorRadioButton: "circle"}
_STYLE: list[OutlinedIndicators] = []     # the application's style, kept from Python's collector


def indicator_outline(palette: QPalette) -> QColor:
    """Half-way between the window and its text, in the palette's current group (greyer when
    the control is disabled)."""
    window, text = palette.color(R.Window), palette.color(R.WindowText)
    return QColor((window.red() + text.red()) // 2, (window.green() + text.green()) // 2,
                  (window.blue() + text.blue()) // 2)


def _set_style(app: QApplication) -> None:
    """Fusion with outlined indicators, set once per application. Setting a style deletes the
    one before while every widget still holds it: done again on each theme switch (or window),
    that crashed Qt when widgets of a closed window were still around. So the Fusion already set
    (gui.app) is wrapped, and owned by the new style, not deleted."""
    if _STYLE and app.style() is _STYLE[0]:
        return
    current = app.style()
    base = current if current.name().lower() == "fusion" else QStyleFactory.create("Fusion")
    _STYLE[:] = [OutlinedIndicators(base)]
    app.setStyle(_STYLE[0])


def is_dark() -> bool:
    """The theme the application shows now."""
    return _CURRENT["dark"]


def theme_palette(dark: bool) -> QPalette:
    """Fusion's own light palette, or the dark one; disabled text and placeholders included."""
    app = QApplication.instance()
    if not dark:
        pal = app.style().standardPalette()
        for group in (G.Active, G.Inactive):
            pal.setColor(group, R.PlaceholderText, QColor(*_LIGHT_PLACEHOLDER))
        return pal
    pal = QPalette()
    for role, rgb in _DARK.items():
        pal.setColor(role, QColor(*rgb))
    for role, rgb in _DARK_DISABLED.items():
        pal.setColor(G.Disabled, role, QColor(*rgb))
    return pal


def apply_theme(dark: bool) -> None:
    """Fusion style with a dark or light palette; accents follow at once, plots in MainWindow.set_dark."""
    app = QApplication.instance()
    _set_style(app)          # once; the palette carries the theme
    _CURRENT["dark"] = dark
    # Plots made later (views are built when first shown) take their colours from here.
    pg.setConfigOptions(background=BACKGROUND[dark], foreground=FOREGROUND[dark])
    app.setPalette(theme_palette(dark))
    for widget in list(_TINTED.values()):
        _apply_accent(widget)


def accent(name: str, dark: bool | None = None) -> QColor:
    """The colour of accent ``name`` in the theme shown now (or in ``dark``)."""
    return QColor(ACCENTS[name][is_dark() if dark is None else dark])


def luminance(colour: QColor) -> float:
    """WCAG 2 relative luminance (0 black .. 1 white)."""
    def linear(c: float) -> float:
        return c / 12.92 if c <= 0.03928 else ((c + 0.055) / 1.055) ** 2.4
    return 0.2126 * linear(colour.redF()) + 0.7152 * linear(colour.greenF()) + 0.0722 * linear(colour.blueF())


def text_on(colour: QColor) -> QColor:
    """Black or white, whichever reads better on ``colour``."""
    return QColor("black") if luminance(colour) > 0.179 else QColor("white")


# The widgets that asked for an accent or a font of their own, each until Qt destroys it: a theme
# or font change visits these alone. It walked QApplication.allWidgets(), which hands out widgets
# half-way through their destruction (a closed window's, deleted later), and reading one crashed
# the process in apply_theme (clean-clone CI runs, export's render_view; c42272a's crash too).
_TINTED: dict[int, QWidget] = {}
_SCALED: dict[int, QWidget] = {}


def _remember(table: dict[int, QWidget], widget: QWidget) -> None:
    key = id(widget)
    if key not in table:
        table[key] = widget
        widget.destroyed.connect(lambda *_: table.pop(key, None))


def tint(widget: QWidget, name: str) -> None:
    """Draw ``widget``'s text in accent ``name``, now and after every theme change."""
    widget.setProperty(_ACCENT, name)
    _remember(_TINTED, widget)
    _apply_accent(widget)


def _apply_accent(widget: QWidget) -> None:
    pal = QPalette(widget.palette())
    color = accent(widget.property(_ACCENT))
    for group in (G.Active, G.Inactive):
        pal.setColor(group, R.WindowText, color)
        pal.setColor(group, R.Text, color)
    widget.setPalette(pal)


def emphasise(widget: QWidget, scale: float = 1.0, italic: bool = False) -> None:
    """A font ``scale`` times the application's (and italic), kept through presentation mode."""
    widget.setProperty(_FONT_SCALE, float(scale))
    widget.setProperty(_ITALIC, bool(italic))
    _remember(_SCALED, widget)
    _apply_font(widget)


def _apply_font(widget: QWidget) -> None:
    font = QFont(QApplication.font())
    font.setPointSizeF(font.pointSizeF() * float(widget.property(_FONT_SCALE)))
    font.setItalic(bool(widget.property(_ITALIC)))
    widget.setFont(font)


PRESENTATION_SCALE = 1.5     # fonts and marks in presentation mode, for a projector at 1280x720
_BASE_POINT_SIZE: list[float] = []


def normal_point_size() -> float:
    """The application font's size outside presentation mode (the platform's), in points: the
    least a label may shrink to in presentation mode."""
    if not _BASE_POINT_SIZE:
        size = QApplication.instance().font().pointSizeF()
        _BASE_POINT_SIZE.append(size if size > 0 else 9.0)
    return _BASE_POINT_SIZE[0]


def apply_font(large: bool) -> None:
    """The application font: the platform's size, or PRESENTATION_SCALE times it."""
    app = QApplication.instance()
    font = app.font()
    font.setPointSizeF(normal_point_size() * (PRESENTATION_SCALE if large else 1.0))
    app.setFont(font)
    QToolTip.setFont(font)   # hover tips keep their own font otherwise
    for widget in list(_SCALED.values()):
        _apply_font(widget)


def restyle_plots(root: QWidget, dark: bool, large: bool = False) -> None:
    """Recolour every pyqtgraph plot under ``root`` for the theme; in presentation mode
    (``large``) its axis labels, titles and lines grow too."""
    fg = pg.mkColor(FOREGROUND[dark])
    scale = PRESENTATION_SCALE if large else 1.0
    tick_font = QApplication.instance().font()
    views = root.findChildren(pg.GraphicsView) + ([root] if isinstance(root, pg.GraphicsView) else [])
    for view in views:
        view.setBackground(BACKGROUND[dark])
        for item in view.scene().items():
            if isinstance(item, pg.AxisItem):
                item.setPen(pg.mkPen(fg, width=scale))
                item.setTextPen(fg)
                item.setStyle(tickFont=tick_font)
                item.labelStyle = {**item.labelStyle, "font-size": f"{tick_font.pointSizeF():.0f}pt"}  # its title
                item._updateLabel()
            elif isinstance(item, pg.LabelItem):
                item.setText(item.text, color=fg.name(), size=f"{tick_font.pointSizeF():.0f}pt")
            elif isinstance(item, pg.LegendItem):
                item.setLabelTextColor(fg)
            elif isinstance(item, pg.TextItem):   # the grid's L0 / H0, ...
                item.setColor(fg)
                item.setFont(tick_font)
            elif isinstance(item, (pg.PlotCurveItem, pg.ScatterPlotItem)) and not getattr(item, "fixed_width", False):
                _scale_pen(item, scale)


def _scale_pen(item, scale: float) -> None:
    """Lines drawn thicker in presentation mode; their own width is remembered."""
    pen = item.opts.get("pen") if isinstance(item, pg.PlotCurveItem) else None
    if pen is None:
        return
    pen = pg.mkPen(pen)
    base = getattr(item, "_base_width", None)
    if base is None:
        base = item._base_width = pen.widthF() or 1.0
    pen.setWidthF(base * scale)
    item.setPen(pen)
