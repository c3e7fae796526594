"""The timing rules every bench shares.

- Baseline and candidate run in one loop, alternating (the order rotates each round), so
  both see the same machine: a load that comes and goes moves both, not one.
- A figure is the median of the repetitions, with its spread (min, max, and the
  interquartile range as a percentage of the median), never the best run: the best run is
  the one a user rarely gets, and it hides how noisy the figure is.
- One untimed warm-up round first (first-call costs: lazy imports, allocator, caches),
  unless the first call is what is measured (cold start, timed in child processes).
- Model work runs on a worker thread (``on_worker``), as the app runs it (gui/worker.py):
  with the CPU shared, torch on the main thread ran MiniLM's 137-token forward in 1.7 s
  against 0.07 s on a worker thread of the same process (2 cores, two nice-10 trainings).
"""
from __future__ import annotations

import statistics
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Callable

_WORKER = ThreadPoolExecutor(max_workers=1, thread_name_prefix="bench-worker")


def on_worker(fn: Callable[[], object]) -> Callable[[], object]:
    """``fn`` made to run on the one long-lived worker thread; the caller waits for it."""
    return lambda: _WORKER.submit(fn).result()


def summary(values: list[float], digits: int = 1) -> dict:
    """Median, min, max, interquartile range in % of the median, and n of ``values``."""
    med = statistics.median(values)
    if len(values) >= 4:
        q1, _, q3 = statistics.quantiles(values, n=4, method="inclusive")
    else:
        q1, q3 = min(values), max(values)
    return {"median": round(med, digits), "min": round(min(values), digits), "max": round(max(values), digits),
            "iqr_pct": round(100 * (q3 - q1) / med, 1) if med else 0.0, "n": len(values)}


def interleaved(fns: dict[str, Callable[[], object]], repeats: int, warmup: int = 1) -> dict[str, list[float]]:
    """Milliseconds of each call of each of ``fns``: ``repeats`` rounds, each calling every
    function once, the order rotating from round to round; ``warmup`` untimed rounds first.
    Wrap a function in ``on_worker`` to run it where the app runs model work."""
    names = list(fns)
    for _ in range(warmup):
        for name in names:
            fns[name]()
    times: dict[str, list[float]] = {name: [] for name in names}
    for r in range(repeats):
        k = r % len(names)
        for name in names[k:] + names[:k]:
            start = time.perf_counter()
            fns[name]()
            times[name].append((time.perf_counter() - start) * 1e3)
    return times


def ratio(candidate: list[float], baseline: list[float], digits: int = 3) -> float:
    """Median of the candidate over median of the baseline."""
    return round(statistics.median(candidate) / statistics.median(baseline), digits)


def machine() -> dict:
    """The machine a figure was taken on: cores, and the load average when it was printed
    (above ~0.5 per core, something else was running: the figures are noisier)."""
    import os
    import platform

    return {"cores": os.cpu_count(), "cpu": platform.processor() or platform.machine(),
            "loadavg_1m_5m": [round(x, 2) for x in os.getloadavg()[:2]]}
