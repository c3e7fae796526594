"""A package's public face, without importing its modules (or torch) before a name is used.

Each engine package lists in its ``__init__`` what gui/ and cli/ may import from it (``__all__``)
and the module each name lives in; ``lazy(package, names)`` gives the package the module
``__getattr__`` (PEP 562) that imports that module on first use. So ``from attnscope.engine.traces import
trace_text`` works, and the window still starts before torch is imported.

Tools read no ``__getattr__``: each face also imports the same names for real under ``if
TYPE_CHECKING:`` (never true at run time), so pyright types them and "go to definition" lands
in their module. tests/gui/test_layering.py holds the block, the table and ``__all__`` to one list.
"""
from __future__ import annotations

import sys
from collections.abc import Callable
from importlib import import_module
from typing import Any


def lazy(package: str, names: dict[str, str]) -> Callable[[str], Any]:
    """The ``__getattr__`` of ``package`` whose public ``names`` (name -> module in the package)
    are imported on first use and kept on the package."""

    def __getattr__(name: str) -> Any:
        if name not in names:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        module = import_module(f"{package}.{names[name]}")
        value = module if names[name] == name else getattr(module, name)   # a module lent as itself (traces.reading)
        setattr(sys.modules[package], name, value)
        return value

    return __getattr__
