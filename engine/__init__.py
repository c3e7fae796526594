"""attnscope's engine: transformers that return their attention, and everything around them.

Pure PyTorch + tokenizers + safetensors. Nothing here imports Qt: the GUI observes the
engine, never the reverse. Its packages stack in layers, from the bottom up: kinds, errors,
inputs < roles, runtime < seam, corpora < models < loading < adapters < decoding <
interventions < traces < inspection, experiments < training. A package imports only the
layers below it, counting imports inside functions (tests/gui/test_layering.py holds it; the why
is in docs/layout.md), and each package's ``__init__`` is its public face for gui/ and cli/.
"""


def version() -> str:
    """The installed version (pyproject's), or the source tree's when run from a checkout."""
    from importlib.metadata import PackageNotFoundError, version as installed
    try:
        return installed("attnscope")
    except PackageNotFoundError:
        import re
        from pathlib import Path
        text = (Path(__file__).resolve().parents[1] / "pyproject.toml").read_text(encoding="utf-8")
        found = re.search(r'^version\s*=\s*"([^"]+)"', text, re.M)
        return found.group(1) if found else "unknown"
