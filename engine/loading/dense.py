"""The dense fallback's words: its note and the one refusal of what needs the seam (torch-free).

A family whose attention never reaches the seam is read again eager at load and drawn from its
own returned weights (engine.loading.dense_eager). What it says of itself lives here, without
torch, because the window shows the note and imports nothing heavy before a model is open.
"""
from __future__ import annotations

from attnscope.engine.inputs import InputError

SAID = "this family is drawn from its own attention weights; long texts need the seam"
DENSE_NOTE = SAID[0].upper() + SAID[1:] + "."      # the loader's note, as the window and the CLI show it


SEAM_TOOLS = "interventions, patching, Why, DLA, the atlas and recordings"   # what the fallback cannot do


def needs_seam(name: str, what: str | None = None) -> InputError:
    """The one sentence a seam-only tool (``what``; else all of them, asked deep inside one) gets
    on a fallback model."""
    said = f"{what} needs" if what else f"{SEAM_TOOLS} need"
    return InputError(f"{name}: {said} attnscope's attention seam, and {SAID.split(';')[0]}, so its heads cannot "
                      "be changed or recorded.")


def check_seam(loaded, what: str) -> None:
    """``what`` refused in one sentence before it runs when ``loaded`` is drawn by the dense fallback.
    Anything else than a model passes: each tool refuses it at its own door, in its own words."""
    if not isinstance(what, str) or not what.strip():
        raise InputError(f"check_seam is given the name of the tool it checks for, not {what!r:.40}.")
    meta = getattr(loaded, "meta", None)      # anything else than a model is refused at its own door
    if isinstance(meta, dict) and meta.get("dense"):
        raise needs_seam(loaded.name, what)
