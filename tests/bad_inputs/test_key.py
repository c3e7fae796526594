"""Issue 58 item 1: the NDIF API key kept like a secret. It was written to a 0644 settings file,
and a key with a newline (put into the websocket handshake as is: a stand-in host logged an
injected header line), a 1 MB key or a key of spaces was accepted. Now the settings file holding a
key is 0600, and such keys are refused in one sentence before anything is kept, used or sent."""
from __future__ import annotations

import os

import pytest

from attnscope.engine.errors import RemoteJobError
from attnscope.engine.inputs import InputError
from attnscope.engine.loading.ndif_key import checked_key, key_may_go
from attnscope.engine.loading.remote_source import api_key, use_api_key

BAD_KEYS = {
    "newline": "abc123\nX-Injected: yes",
    "crlf": "abc123\r\nX-Injected: yes",
    "tab inside": "abc\t123",
    "nul": "abc\x00123",
    "unicode": "clé-123",
    "a megabyte": "k" * (1 << 20),
}


@pytest.mark.parametrize("name", sorted(BAD_KEYS))
def test_a_key_no_key_can_be_is_one_sentence_never_quoting_it(name):
    with pytest.raises(InputError) as err:
        use_api_key(BAD_KEYS[name])
    said = str(err.value)
    assert "\n" not in said and "NDIF API key" in said and "X-Injected" not in said and len(said) < 300
    assert api_key() is None or api_key() != BAD_KEYS[name]


@pytest.mark.parametrize("blank", ["", "   ", " \t "])
def test_a_key_of_blanks_is_no_key(blank, monkeypatch):
    monkeypatch.setenv("NDIF_API_KEY", blank)
    use_api_key(blank)
    assert api_key() is None and checked_key(blank) is None


def test_the_variable_is_checked_too(monkeypatch):
    use_api_key(None)
    monkeypatch.setenv("NDIF_API_KEY", "abc\r\nX-Injected: yes")
    with pytest.raises(InputError, match="NDIF_API_KEY variable"):
        api_key()


def test_the_key_goes_over_https_or_to_the_host_the_user_named(monkeypatch):
    monkeypatch.delenv("NDIF_HOST", raising=False)
    key_may_go("https://api.ndif.us")
    with pytest.raises(RemoteJobError, match="not https"):
        key_may_go("http://api.ndif.us")
    monkeypatch.setenv("NDIF_HOST", "http://localhost:5001")
    key_may_go("http://localhost:5001")
    with pytest.raises(RemoteJobError, match="not https"):
        key_may_go("http://elsewhere:5001")


def _typed(window, text):
    from PySide6.QtWidgets import QInputDialog

    window.api_key_action.trigger()
    dialog = next(d for d in window.findChildren(QInputDialog) if d.isVisible())
    dialog.setTextValue(text)
    dialog.accept()


def test_the_settings_file_holding_a_key_is_private(window, qtbot, monkeypatch):
    monkeypatch.delenv("NDIF_API_KEY", raising=False)
    path = window.settings.fileName()
    try:
        _typed(window, "secret-key-123")
        assert window.settings.value("ndif/api_key") == "secret-key-123"
        assert os.stat(path).st_mode & 0o077 == 0
        window.settings.setValue("colormap", "magma")      # another write: QSettings rewrites the whole file
        window.settings.sync()
        assert os.stat(path).st_mode & 0o077 == 0
    finally:
        use_api_key(None)


@pytest.mark.parametrize("typed", ["abc\r\nX-Injected: yes", "    ", "ключ"])
def test_the_dialog_refuses_a_bad_key_and_keeps_the_old(window, qtbot, monkeypatch, typed):
    monkeypatch.delenv("NDIF_API_KEY", raising=False)
    try:
        _typed(window, "old-key-456")
        _typed(window, typed)
        assert window.settings.value("ndif/api_key") == "old-key-456" and api_key() == "old-key-456"
        said = window.last_error
        assert "NDIF API key" in said and "\n" not in said and "X-Injected" not in said
    finally:
        use_api_key(None)
