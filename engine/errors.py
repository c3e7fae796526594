"""The loader's own error types: a model or file that cannot be opened, said in one sentence.

Below every package (it imports nothing), so the file and memory checks of engine.runtime
and every loading stage refuse with the same types; the CLI prints the message as one line
and the window shows it in a dialog. What users type is refused with engine.inputs.InputError.
"""
from __future__ import annotations


class OneLine:
    """A mixin for the project's errors: the message as one line, whatever was quoted in it (a
    tensor's repr spans lines: 'not tensor([[0, 0, 0],\n [0, 0, 0]])' broke the one sentence)."""

    def __str__(self) -> str:
        return " ".join(line.strip() for line in super().__str__().splitlines() if line.strip())


class ModelLoadError(OneLine, ValueError):
    """A model that cannot be opened, with a message for the user that names the file."""


class HFModelError(ModelLoadError):
    """A Hugging Face model that cannot be opened, with a message for the user."""


def first_line(exc: BaseException, limit: int = 300) -> str:
    """The first line of an exception's message (a library's own words), for one sentence."""
    return (str(exc).strip().splitlines() or [type(exc).__name__])[0][:limit]


class RemoteJobError(ValueError):
    """A job for a model run elsewhere (NDIF, engine.remote) that cannot be sent or did not
    finish: no API key, a model not served, nnsight versions that differ, a time-out, the
    network; said in one sentence, the key never in it."""
