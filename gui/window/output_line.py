"""What the window's output line says the model wrote for a text.

Why not the decoded text alone: a model that ends at once (the bundled GPT after
"...they sleep.", a BART) writes "", and a blank line read as a broken window. Then the
line says so, with the probability it gave the end token.
"""
from __future__ import annotations


def ended_at_once(token: str, probability: float) -> str:
    return f"the model ended immediately ({token} p = {probability:.3f})"


def output_line(loaded, text, interventions=None) -> str:
    """The model's own greedy output for ``text`` (worker thread: it runs the model), changed
    by ``interventions`` (engine.interventions) when given."""
    from attnscope.engine.decoding import DecodeSettings
    from attnscope.engine.decoding import decode_all, model_output

    written = model_output(loaded, text, interventions=interventions)
    if written.strip() or not loaded.generates:
        return written
    first = decode_all(loaded, text, DecodeSettings(max_new_tokens=1), interventions).steps   # what it ended with, and how sure
    return ended_at_once(first[0].token, first[0].probability) if first else written


def shown_output(decoded: str, token: str, probability: float, finished: bool, step: int) -> str:
    """The output line while the Decoding panel steps: its text, or that it ended at once."""
    return ended_at_once(token, probability) if finished and step == 0 and not decoded.strip() else decoded
