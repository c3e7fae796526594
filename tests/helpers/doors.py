"""The engine's doors: every public function each package's face offers gui/, cli/ and scripts,
walked by the bad-input tests (None for each argument, then wrong values)."""
from __future__ import annotations

import importlib
import inspect

PACKAGES = ["attnscope.engine.runtime", "attnscope.engine.loading", "attnscope.engine.adapters", "attnscope.engine.decoding", "attnscope.engine.interventions",
            "attnscope.engine.traces", "attnscope.engine.inspection", "attnscope.engine.experiments", "attnscope.engine.remote", "attnscope.engine.training",
            "attnscope.engine.corpora"]


def public_functions():
    """``package.name`` of each public function of the engine's faces, in their ``__all__``."""
    for package in PACKAGES:
        face = importlib.import_module(package)
        for name in getattr(face, "__all__", []):
            if inspect.isfunction(getattr(face, name)):
                yield f"{package}.{name}"
