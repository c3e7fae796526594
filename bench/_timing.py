"""The one timing rule the benches share: the best of several runs after a warm-up."""
from __future__ import annotations

import time
from typing import Callable


def best_time(fn: Callable[[], object], repeats: int = 15) -> float:
    """Seconds of the fastest of ``repeats`` calls, after one untimed call."""
    fn()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)
