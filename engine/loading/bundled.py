"""The models shipped with attnscope and the short names a user may give them ("gpt", "minilm",
"random-gpt"): the one resolver of a model's name, for the window and every command.

Apart from attnscope.engine.loading.catalog (which opens a model) so that a lower stage that only needs the
names (engine.loading.remote_config refuses ``ndif:gpt``) asks them without an import circle.
"""
from __future__ import annotations

from pathlib import Path

from attnscope.engine.resources import resource

RESOURCES = resource()
CHECKPOINTS = RESOURCES / "checkpoints"
# The window opens on the first of these that exists.
DEFAULT_ORDER = ("translator.safetensors", "gpt.safetensors")
RANDOM_SOURCES = ("random-translator", "random-gpt", "random-bert")
MINILM = "minilm"


def bundled_checkpoints() -> list[Path]:
    """The trained checkpoints shipped in resources/checkpoints, default first."""
    found = sorted(CHECKPOINTS.glob("*.safetensors"))
    order = {name: i for i, name in enumerate(DEFAULT_ORDER)}
    return sorted(found, key=lambda p: (order.get(p.name, len(order)), p.name))


def bundled_names() -> dict[str, Path]:
    """The names the window's Model menu gives the bundled models ("gpt (bundled)"), without
    the mark: {"translator": .../translator.safetensors, "gpt": .../gpt.safetensors}."""
    return {p.stem: p for p in bundled_checkpoints()}


def named_models() -> list[str]:
    """Every model a user may name by a word instead of a path, in the order --help lists them."""
    return [*bundled_names(), MINILM, *RANDOM_SOURCES]


def models_help() -> str:
    """One line for --help: the names ``resolve_name`` understands."""
    bundled = ", ".join(bundled_names()) or "none installed"
    return (f"A MODEL may also be named: {bundled} (the bundled trained models, as the window's Model menu "
            f"names them), {MINILM} (all-MiniLM-L6-v2), {', '.join(RANDOM_SOURCES)} (untrained toys).")
