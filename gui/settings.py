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


def keep_private(settings: QSettings) -> None:
    """The settings file readable by its owner alone (0600), made so before a secret is written:
    QSettings writes the whole file (through a temp file that keeps the mode), and an NDIF API key
    in a 0644 file could be read by every local user (issue 58). Not a file (the registry): nothing."""
    path = settings.fileName()
    if not path or not os.path.isabs(path):
        return
    try:
        os.makedirs(os.path.dirname(path), mode=0o700, exist_ok=True)
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT, 0o600))    # created private, never world-readable
        os.chmod(path, 0o600)
    except OSError:
        pass


def keep_secret(settings: QSettings, name: str, value: str | None) -> None:
    """``value`` kept under ``name`` in a private settings file (keep_private), written now; None
    removes it. (The system keyring, where one exists, would be another home: the ``keyring``
    package is not a dependency, so the 0600 file is the one place.)"""
    keep_private(settings)
    if value is None:
        settings.remove(name)
    else:
        settings.setValue(name, value)
    settings.sync()
    keep_private(settings)
