"""attnscope's engine: transformers that return their attention, and everything around them.

Pure PyTorch + tokenizers + safetensors. Nothing here imports Qt: the GUI observes the
engine, never the reverse (tests/test_layering.py checks it).
"""
"""attnscope's engine: models, tracing, decoding, training; pure PyTorch, never Qt."""


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
