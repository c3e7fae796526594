"""Persistent settings (QSettings). Tests point ATTNSCOPE_SETTINGS at a temp .ini file."""
from __future__ import annotations

import os

from PySide6.QtCore import QSettings


def app_settings() -> QSettings:
    path = os.environ.get("ATTNSCOPE_SETTINGS")
    if path:
        return QSettings(path, QSettings.Format.IniFormat)
    return QSettings("attnscope", "attnscope")


def recent_files(settings: QSettings) -> list[str]:
    value = settings.value("recent_files", [])
    if isinstance(value, str):
        value = [value]
    return [str(v) for v in (value or [])]


def push_recent(settings: QSettings, path: str, limit: int = 10) -> list[str]:
    files = [path] + [p for p in recent_files(settings) if p != path]
    settings.setValue("recent_files", files[:limit])
    return files[:limit]
