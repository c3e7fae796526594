"""A view's options as one small state object: bound to its widgets by name, kept in the
settings, reset by View > Reset Layout (Orange's ``Setting`` in spirit).

A view declares its options as a dataclass of ``ViewOptions``: each field's default is the
option's default and ``option(default, "widget")`` names the view's attribute that shows it
(a check box, a spin box, a combo box, a slider). ``bind_options(view, HeadGridOptions)`` at the
end of the view's ``__init__`` shows the saved options (settings "<PREFIX>/<field>") on those
widgets and saves each change as it is made; ``view.options`` is then what the widgets show.
``reset_view_options(views, settings)`` puts every bound view back to its defaults, and forgets
the options of views not built yet (the settings list every prefix saved, under KEPT).
"""
from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Any, ClassVar

from PySide6.QtCore import QSettings
from PySide6.QtWidgets import QAbstractButton, QAbstractSlider, QAbstractSpinBox, QComboBox, QWidget


KEPT = "view_options/prefixes"   # the settings' list of every prefix options were saved under


def kept_prefixes(settings: QSettings) -> list[str]:
    value = settings.value(KEPT, [])
    return [value] if isinstance(value, str) else [str(v) for v in (value or [])]


def option(default: Any, widget: str) -> Any:
    """A field of a ViewOptions dataclass: its default, and the name of the view's widget that shows it."""
    return field(default=default, metadata={"widget": widget})


def widget_value(widget: QWidget) -> Any:
    """What ``widget`` shows: a button's check state, a spin box's or slider's value, a combo's item
    data where its items carry some (a key behind a label), else its text."""
    if isinstance(widget, QComboBox):
        data = widget.currentData()
        return data if data is not None else widget.currentText()
    if isinstance(widget, QAbstractButton):
        return widget.isChecked()
    return widget.value()          # QSpinBox, QDoubleSpinBox, QSlider


def show_value(widget: QWidget, value: Any) -> None:
    """Show ``value`` on ``widget`` (a combo item it does not list is left as it is)."""
    if isinstance(widget, QComboBox):
        index = widget.findData(value)
        index = index if index >= 0 else widget.findText(value)
        if index >= 0:
            widget.setCurrentIndex(index)
    elif isinstance(widget, QAbstractButton):
        widget.setChecked(bool(value))
    else:
        widget.setValue(value)


def changed_signal(widget: QWidget):
    if isinstance(widget, QComboBox):
        return widget.currentIndexChanged
    if isinstance(widget, QAbstractButton):
        return widget.toggled
    if isinstance(widget, (QAbstractSpinBox, QAbstractSlider)):
        return widget.valueChanged
    raise TypeError(f"no option can be bound to a {type(widget).__name__}")


def _typed(text: Any, default: Any) -> Any:
    """A value read from the settings (an .ini file gives strings) as the type of ``default``;
    ValueError when it is not one."""
    if isinstance(default, bool):
        if str(text).lower() not in ("true", "false"):
            raise ValueError(text)
        return str(text).lower() == "true"
    return type(default)(text)


@dataclass(frozen=True)
class ViewOptions:
    """Base of a view's options: subclasses are frozen dataclasses of ``option`` fields and name
    their ``PREFIX`` in the settings."""
    PREFIX: ClassVar[str] = ""

    @classmethod
    def widget_names(cls) -> dict[str, str]:
        """field -> the view's attribute (widget) that shows it."""
        return {f.name: f.metadata["widget"] for f in fields(cls)}

    def valid(self) -> bool:
        """Whether these options can be shown as they are (a subclass checks its choices)."""
        return True

    @classmethod
    def restore(cls, settings: QSettings) -> "ViewOptions":
        """The options saved under PREFIX; a field missing or unreadable keeps its default, and
        options that are not ``valid`` together are the defaults."""
        default, read = cls(), {}
        for name in cls.widget_names():
            saved = settings.value(f"{cls.PREFIX}/{name}")
            if saved is None:
                continue
            try:
                read[name] = _typed(saved, getattr(default, name))
            except (TypeError, ValueError):
                pass
        restored = cls(**read)
        return restored if restored.valid() else default

    def save(self, settings: QSettings) -> None:
        for name in self.widget_names():
            settings.setValue(f"{self.PREFIX}/{name}", getattr(self, name))
        prefixes = kept_prefixes(settings)
        if self.PREFIX not in prefixes:
            settings.setValue(KEPT, prefixes + [self.PREFIX])

    @classmethod
    def read(cls, view: QWidget) -> "ViewOptions":
        """The options ``view``'s widgets show now."""
        return cls(**{name: widget_value(getattr(view, widget)) for name, widget in cls.widget_names().items()})

    def show(self, view: QWidget) -> None:
        """Show these options on ``view``'s widgets (each widget's own signal redraws the view)."""
        for name, widget in self.widget_names().items():
            show_value(getattr(view, widget), getattr(self, name))


class OptionsBinding:
    """One view's options kept in step with its widgets and the settings."""

    def __init__(self, view: QWidget, cls: type[ViewOptions], settings: QSettings):
        self.view, self.cls, self.settings = view, cls, settings
        view.option_binding = self          # before the saved options show: a redraw they start reads them here
        cls.restore(settings).show(view)
        for widget in cls.widget_names().values():
            changed_signal(getattr(view, widget)).connect(self._changed)

    @property
    def options(self) -> ViewOptions:
        return self.cls.read(self.view)

    def _changed(self, *_args) -> None:
        self.options.save(self.settings)

    def reset(self) -> None:
        """Defaults on the widgets and in the settings."""
        self.cls().show(self.view)
        self.settings.remove(self.cls.PREFIX)     # what the widgets' signals saved meanwhile: defaults all


def bind_options(view: QWidget, cls: type[ViewOptions], settings: QSettings | None = None) -> OptionsBinding:
    """Bind ``cls`` to ``view``'s widgets (``view.option_binding``), the saved options shown."""
    from attnscope.gui.settings import app_settings

    return OptionsBinding(view, cls, settings if settings is not None else app_settings())   # view.option_binding


def reset_view_options(views, settings: QSettings | None = None) -> None:
    """View > Reset Layout: every view of ``views`` (widgets) that binds options back to its
    defaults, and the options saved for views not built yet forgotten (built, they show defaults)."""
    from attnscope.gui.settings import app_settings

    settings = settings if settings is not None else app_settings()
    for view in views:
        binding = getattr(view, "option_binding", None)
        if binding is not None:
            binding.settings = settings
            binding.reset()
    for prefix in kept_prefixes(settings):
        settings.remove(prefix)
    settings.remove(KEPT)
