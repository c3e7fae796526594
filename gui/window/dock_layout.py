"""The main window's docks: one per view (gui.views.registry), each view built the first time
its dock shows, their first sizes, Reset Layout, and two repairs Qt needs.

- Qt 6.11 leaves a second tab bar behind when docks are tabified, or a layout restored, before
  the window is shown (``drop_stray_tab_bars``, once at the first show and after a reset).
- Qt keeps a bottom dock's height when the window shrinks or the fonts grow, and the heads
  overview took what was left (``room_for_overview``, whenever the central part's layout asks).
"""
from __future__ import annotations

from PySide6.QtCore import QEvent, QObject, Qt, QTimer
from PySide6.QtWidgets import QDockWidget, QFrame, QLabel, QMainWindow, QScrollArea, QTabBar, QWidget

from attnscope.gui.window.help import HelpButton
from attnscope.gui.theme import restyle_plots
from attnscope.gui.widgets.tooltips import apply_tooltips
from attnscope.gui.view_options import reset_view_options
from attnscope.gui.views.registry import VIEWS

BOTTOM_SHARE = 0.38     # of the window's height, the bottom docks' at the first start and after a reset
RIGHT_SHARE = 0.32      # of the window's width, the right docks' (1600 px: ~510, as Qt's first start gave)
RIGHT_SHARE_LARGE = 0.4  # in presentation mode: Head detail's controls take 1.5x the room (1280 px: 512)


class DockLayout(QObject):
    """``window``'s docks (into ``window.docks``) and views (into ``window.views``, built by ``view``)."""

    def __init__(self, window: QMainWindow):
        super().__init__(window)
        self.window = window
        self.tab_bars_settled = False     # Qt's stray tab bars dropped at the first show
        areas = {"left": Qt.DockWidgetArea.LeftDockWidgetArea, "right": Qt.DockWidgetArea.RightDockWidgetArea,
                 "bottom": Qt.DockWidgetArea.BottomDockWidgetArea}
        first_in_area: dict[str, QDockWidget] = {}
        self.factories = {spec.title: spec.factory for spec in VIEWS}
        for spec in VIEWS:
            dock = QDockWidget(spec.title, window)
            dock.setObjectName(f"dock:{spec.title}")
            dock.setWidget(QWidget())  # replaced by the view the first time the dock shows
            dock.visibilityChanged.connect(lambda visible, title=spec.title: visible and self.view(title))
            window.addDockWidget(areas.get(spec.area, areas["right"]), dock)
            if spec.area in first_in_area:  # views of one area share it as tabs
                window.tabifyDockWidget(first_in_area[spec.area], dock)
            else:
                first_in_area[spec.area] = dock
            window.docks[spec.title] = dock
        for dock in first_in_area.values():
            dock.raise_()
        window.state.presentation_changed.connect(lambda _on: QTimer.singleShot(0, self, self.widen_right))

    def view(self, title: str) -> QWidget:
        """The view called ``title``, built the first time it is needed: views hidden behind
        other tabs cost nothing at start-up."""
        w = self.window
        if title not in w.views:
            try:
                widget = self.factories[title](w.state)
            except Exception as exc:  # a broken view must not take the window down
                widget = QLabel(f"This view could not start: {exc}")
            w.views[title] = widget
            # In a scroll area: a view whose controls are wider than its dock (large fonts on a
            # small screen) scrolls sideways instead of widening the window past the screen.
            scroll = QScrollArea()
            scroll.setWidgetResizable(True)
            scroll.setFrameShape(QFrame.Shape.NoFrame)
            scroll.setWidget(widget)
            w.docks[title].setWidget(scroll)
            HelpButton(widget, title, w.show_help)
            apply_tooltips(title, widget)
            restyle_plots(widget, w.state.dark, w.state.presentation)
        return w.views[title]

    def built(self, overview) -> None:
        """The window is built: its layout now is what Reset Layout restores; ``overview`` (the
        heads overview, the central part's last row) gets the room it asks for from now on."""
        self.overview = overview
        self.default_state = self.window.saveState()
        self.central = self.window.centralWidget()
        self.central.installEventFilter(self)

    def _bottom_docks(self) -> list:
        w = self.window
        return [d for d in w.docks.values() if w.dockWidgetArea(d) == Qt.DockWidgetArea.BottomDockWidgetArea]

    def default_sizes(self) -> None:
        """The first start's sizes, and Reset Layout's (restoreState alone brought the right dock
        back at ~250 px where the first start gave ~500, Head detail's tabs elided to "Hea…")."""
        bottom = self._bottom_docks()
        if bottom:
            self.window.resizeDocks(bottom[:1], [int(self.window.height() * BOTTOM_SHARE)], Qt.Orientation.Vertical)
        self.widen_right(exact=True)
        self.readable_tabs()

    def widen_right(self, exact: bool = False) -> None:
        """The right docks RIGHT_SHARE of the window's width (RIGHT_SHARE_LARGE in presentation
        mode, where Head detail at 1280x800 was left a 75 x 18 px plot under its wrapped
        controls); a wider dock the user made is kept unless ``exact``."""
        w = self.window
        right = [d for d in w.docks.values()
                 if w.dockWidgetArea(d) == Qt.DockWidgetArea.RightDockWidgetArea and not d.isFloating()]
        if not right:
            return
        want = int(w.width() * (RIGHT_SHARE_LARGE if w.state.presentation else RIGHT_SHARE))
        if exact or max(d.width() for d in right) < want:
            w.resizeDocks(right[:1], [want], Qt.Orientation.Horizontal)

    def readable_tabs(self) -> None:
        """The docks' tab bars show whole titles and scroll, never elide ("Hea… He… R…")."""
        for bar in self.window.findChildren(QTabBar):
            if bar.parent() is self.window:
                bar.setElideMode(Qt.TextElideMode.ElideNone)
                bar.setUsesScrollButtons(True)

    def reset(self) -> None:
        """View > Reset Layout: every dock where it was at the first start, shown, docked, and
        every view's options (gui.view_options) back to their defaults."""
        self.window.restoreState(self.default_state)
        for dock in self.window.docks.values():
            dock.setFloating(False)
            dock.show()
        self.default_sizes()
        self.drop_stray_tab_bars()
        reset_view_options(self.window.views.values(), self.window.settings)

    def shown(self) -> None:
        """The window is shown: the stray tab bars go once the first start's dock sizes are in."""
        if not self.tab_bars_settled:
            QTimer.singleShot(0, self.drop_stray_tab_bars)

    def drop_stray_tab_bars(self) -> None:
        """Qt 6.11 leaves a second tab bar behind when docks are tabified, or a layout restored,
        before the window is shown: the bottom views' first two tabs ("Head statistics",
        "Neurons") stayed drawn over the bottom dock's title. Every tab bar is hidden, then the
        layout laid out again, which shows again only the bars it uses."""
        w = self.window
        for bar in w.findChildren(QTabBar):
            if bar.parent() is w:
                bar.hide()
        w.restoreState(w.saveState())
        self.readable_tabs()
        self.tab_bars_settled = True

    def eventFilter(self, watched, event) -> bool:
        if event.type() == QEvent.Type.LayoutRequest and watched is self.central:
            QTimer.singleShot(0, self, self.room_for_overview)   # once the layout has settled
        return False

    def room_for_overview(self) -> None:
        """The central part (text, output, notes and the heads overview) gets at least the
        height it asks for (presentation mode at 1280x800, with the Patching panel open and a
        two-line note, drew ~25 px a layer and dropped its labels). The bottom dock is
        shortened, down to its own minimum, never the other way."""
        w = self.window
        central = w.centralWidget()
        # The overview is the central part's last row: from where it starts, its own minimum (the
        # layout's minimumSizeHint leaves out the height a wrapped line takes at this width).
        bottom_margin = central.layout().contentsMargins().bottom()
        short = (self.overview.geometry().top() + self.overview.minimumSizeHint().height() + bottom_margin
                 - central.height())
        bottom = [d for d in self._bottom_docks() if d.isVisible() and not d.isFloating()]
        if short > 0 and bottom:
            dock = bottom[0]
            w.resizeDocks([dock], [max(dock.minimumSizeHint().height(), dock.height() - short)],
                          Qt.Orientation.Vertical)
