"""attnscope: look inside transformers, in a window or from Python.

Installed, this package holds everything: attnscope.engine (the models, the seam, traces and
experiments; no Qt), attnscope.gui (the window), attnscope.cli (the commands) and
attnscope.resources (the bundled models and corpora). In a checkout those folders stand at the
repository's top level (the project's layout) and this folder links to them (attnscope/engine ->
../engine, ...), so the code, pyright and "go to definition" all read one name; where links are
not kept (a checkout on a file system without them) this package's path reaches them instead.
"""
from __future__ import annotations

from pathlib import Path as _Path

_HERE = _Path(__file__).resolve().parent
if not (_HERE / "engine").is_dir():     # a checkout: engine/, gui/, cli/, resources/ are the repository's folders
    __path__.append(str(_HERE.parent))  # noqa: F821 - a package's own __path__

from attnscope.engine import version as _version  # noqa: E402 - after the path that finds it

__version__: str = _version()
__all__ = ["__version__", "load", "trace", "show", "Trace", "results"]

_API = {"load", "trace", "show", "Trace"}


def __getattr__(name: str):
    """attnscope.load, .trace, .Trace from attnscope.api (and attnscope.results), imported when first asked: ``import
    attnscope`` stays cheap (no torch) until a function is used."""
    if name in _API:
        from attnscope import api

        return getattr(api, name)
    if name in ("engine", "gui", "cli", "resources", "results"):   # results: the experiments' typed answers;
        from importlib import import_module              # the others: a subpackage whose attribute something
                                                         # removed (nnsight's local mode hides modules while it reads)

        return import_module(f"{__name__}.{name}")
    raise AttributeError(f"module 'attnscope' has no attribute {name!r}")
