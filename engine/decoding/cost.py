"""What a decoding session's cache will need, known before its first step: refused with the numbers.

The cache holds the keys and values of every layer for the prompt and every token that may be
added, per beam; the bytes per token are read off the adapter's tiny recorded forward
(``Adapter.cache_sizes``), as a Run's estimate reads them (engine.traces.estimate).
"""
from __future__ import annotations

from attnscope.engine.runtime.free_memory import MEMORY_SHARE, RunTooLarge, available_memory, gib


def check_decoding(adapter, prompt_tokens: int, new_tokens: int, beams: int, name: str) -> int:
    """Bytes a decoding session's cache will reach (keys and values of every layer for the
    prompt and every token it may add, per beam, plus one prefill's working memory);
    RunTooLarge naming the numbers when that does not fit."""
    keys, width = adapter.cache_sizes()
    total = prompt_tokens + new_tokens
    cache = 2 * keys * total * max(1, beams)
    need = cache + 16 * width * prompt_tokens * 4
    free = available_memory()
    if need > MEMORY_SHARE * free:
        raise RunTooLarge(f"Decoding {name} from a {prompt_tokens:,}-token prompt for up to {new_tokens:,} tokens "
                          f"({max(1, beams)} beam(s)) would need about {gib(need)} (its cache {gib(cache)}), and "
                          f"{gib(free)} is free. Shorten the text or ask for fewer tokens or beams.")
    return need
