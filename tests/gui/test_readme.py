"""The README's set-up says what a new user meets: the two commands, that the `attnscope`
command lands in .venv/bin (not on the PATH), that the first `make` takes minutes, and where
the settings live and how to reset them, as the code has it."""
from __future__ import annotations

import os
import re
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
README = (ROOT / "README.md").read_text()


def test_the_first_commands_are_make_run_and_make_test():
    first_block = re.search(r"```bash\n(.*?)```", README, re.S).group(1).splitlines()
    assert [line.split("#")[0].strip() for line in first_block] == ["make run", "make test"]


def test_it_says_where_the_command_is_and_that_the_first_make_takes_minutes():
    venv = re.search(r"^VENV\s*\?=\s*(\S+)", (ROOT / "Makefile").read_text(), re.M).group(1)
    scripts = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["scripts"]
    assert "attnscope" in scripts
    assert f"{venv}/bin/attnscope" in README and "not on your PATH" in README
    assert "first one takes a few minutes" in README


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the README names the Linux file")
def test_it_names_the_settings_file_the_window_uses_and_how_to_reset_it(monkeypatch):
    from attnscope.gui.settings import app_settings

    monkeypatch.delenv("ATTNSCOPE_SETTINGS", raising=False)
    if not os.environ.get("XDG_CONFIG_HOME"):
        assert app_settings().fileName() == os.path.expanduser("~/.config/attnscope/attnscope.conf")
    assert "`~/.config/attnscope/attnscope.conf`" in README
    monkeypatch.setenv("ATTNSCOPE_SETTINGS", "/tmp/elsewhere.ini")
    assert app_settings().fileName() == "/tmp/elsewhere.ini"
    assert "ATTNSCOPE_SETTINGS=" in README
    assert '"&Reset Layout"' in (ROOT / "gui" / "window" / "menus.py").read_text() and "View > Reset Layout" in README
