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


def start_folder(settings: QSettings, purpose: str) -> str:
    """Where a file dialog for ``purpose`` ("models", "recordings", "texts", "exports") opens:
    the folder last used for that purpose, else the home folder. One folder for every dialog
    opened Open Recording among the bundled checkpoints after a bundled model was loaded."""
    folder = str(settings.value(f"folder/{purpose}", "") or "")
    return folder if folder and os.path.isdir(folder) else os.path.expanduser("~")


def remember_folder(settings: QSettings, purpose: str, path: str) -> None:
    """Remember the folder of ``path`` (a file, or a folder chosen as such) for ``purpose``."""
    folder = path if os.path.isdir(path) and purpose == "models" else os.path.dirname(os.path.abspath(path))
    settings.setValue(f"folder/{purpose}", folder)
