"""A package's public face, without importing its modules (or torch) before a name is used.

Each engine package lists in its ``__init__`` what gui/ and cli/ may import from it (``__all__``)
and the module each name lives in; ``lazy(package, names)`` gives the package the module
``__getattr__`` (PEP 562) that imports that module on first use. So ``from engine.traces import
trace_text`` works, and the window still starts before torch is imported.
"""
from __future__ import annotations

import sys
from importlib import import_module


def lazy(package: str, names: dict[str, str]):
    """The ``__getattr__`` of ``package`` whose public ``names`` (name -> module in the package)
    are imported on first use and kept on the package."""

    def __getattr__(name: str):
        if name not in names:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(import_module(f"{package}.{names[name]}"), name)
        setattr(sys.modules[package], name, value)
        return value

    return __getattr__
