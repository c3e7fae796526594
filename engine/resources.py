"""Where the files shipped with attnscope lie: one function for all of them.

Why importlib.resources: an installed attnscope (a wheel, pipx) keeps its bundled checkpoints and
corpora as package data of ``attnscope.resources``, wherever site-packages is; a checkout keeps them
in the repository's resources/ folder. Asking the import system finds both, where a path counted
from this file found only the checkout.
"""
from __future__ import annotations

from importlib.resources import files
from pathlib import Path


def resource(*parts: str) -> Path:
    """The shipped file or folder at ``parts`` below resources/ (e.g. ``resource("corpora",
    "shakespeare.txt.gz")``). A real path: wheels install unpacked, so every reader can open it."""
    return Path(str(files("attnscope.resources").joinpath(*parts)))
