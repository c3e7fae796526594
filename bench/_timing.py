"""The timing rules every bench shares.

- Baseline and candidate run in one loop, alternating (the order rotates each round), so
  both see the same machine: a load that comes and goes moves both, not one.
- A figure is the median of the repetitions, with its spread (min, max, and the
  interquartile range as a percentage of the median), never the best run: the best run is
  the one a user rarely gets, and it hides how noisy the figure is.
- A figure in milliseconds spreads its repetitions over at least ``SPREAD_S`` seconds (the
  figure's ``Pacer`` idles between them): the machines this project runs on share their
  cores with other tenants, and a small forward's median taken within 5-15 s moved by
  20-40 % from one window to the next (MiniLM-sized and translator forwards, measured
  here), while over a minute it moved by about 5 %. Ratios need no spreading: both sides
  of the ratio see the same windows.
- One untimed warm-up round first (first-call costs: lazy imports, allocator, caches),
  unless the first call is what is measured (cold start, timed in child processes).
- Model work runs where the app runs it: on the app's one model thread (gui.worker's MODEL
  lane), through ``on_worker``, loading included. torch gives each thread that runs it a
  team of helper threads; a second such thread in the process (a bench's own worker, or the
  main thread loading a model) makes every helper sleep between operations, and the small
  models' forward took twice as long (gui/worker.py's docstring has the figures). A bench's
  ``main`` that needs no window runs whole on that thread (``run_main``).
- malloc keeps freed memory as the app's ``main`` makes it (engine.runtime.memory), set here, when a
  bench imports this module, before it starts a thread.
"""
from __future__ import annotations

import os
import statistics
import tempfile
import time
from pathlib import Path
from typing import Callable

from attnscope.engine.runtime.memory import keep_freed_memory

keep_freed_memory()

SPREAD_S = float(os.environ.get("ATTNSCOPE_BENCH_SPREAD_S", "40"))   # see the module's docstring


def scratch_dir(prefix: str) -> Path:
    """A temporary folder for a bench's files (settings, model folders), removed when the
    bench's process ends."""
    folder = tempfile.TemporaryDirectory(prefix=prefix)
    _SCRATCH.append(folder)   # kept alive until exit, when its finalizer removes it
    return Path(folder.name)


_SCRATCH: list[tempfile.TemporaryDirectory] = []


def on_worker(fn: Callable[[], object]) -> Callable[[], object]:
    """``fn`` made to run on the app's model thread (gui.worker.call_on_lane); the caller
    waits for it (a call made on that thread itself runs at once)."""
    from attnscope.gui.worker import MODEL, call_on_lane

    return lambda: call_on_lane(MODEL, fn)


def run_main(main: Callable[[], None]) -> None:
    """A bench without a window: its whole ``main`` on the model thread (see above)."""
    on_worker(main)()


def summary(values: list[float], digits: int = 1) -> dict:
    """Median, min, max, interquartile range in % of the median, and n of ``values``."""
    med = statistics.median(values)
    if len(values) >= 4:
        q1, _, q3 = statistics.quantiles(values, n=4, method="inclusive")
    else:
        q1, q3 = min(values), max(values)
    return {"median": round(med, digits), "min": round(min(values), digits), "max": round(max(values), digits),
            "iqr_pct": round(100 * (q3 - q1) / med, 1) if med else 0.0, "n": len(values)}


class Pacer:
    """Spreads ``repeats`` repetitions over at least ``span_s`` seconds (``SPREAD_S``): ``wait()`` before
    each one idles until its turn (``idle(seconds)``: a sleep, or for a window an event loop
    that keeps running). A repetition that takes longer than its share is never cut short."""

    def __init__(self, repeats: int, idle: Callable[[float], None] = time.sleep, span_s: float | None = None):
        self.step = (SPREAD_S if span_s is None else span_s) / max(1, repeats)
        self.idle = idle
        self.due: float | None = None

    def wait(self) -> None:
        now = time.monotonic()
        if self.due is not None and now < self.due:
            self.idle(self.due - now)
            now = time.monotonic()
        self.due = now + self.step


def interleaved(fns: dict[str, Callable[[], object]], repeats: int, warmup: int = 1,
                pacer: Pacer | None = None) -> dict[str, list[float]]:
    """Milliseconds of each call of each of ``fns``: ``repeats`` rounds, each calling every
    function once, the order rotating from round to round; ``warmup`` untimed rounds first.
    Wrap a function in ``on_worker`` to run it where the app runs model work. With a
    ``pacer`` (figures in ms), the rounds are spread in time; a ratio needs none."""
    names = list(fns)
    for _ in range(warmup):
        for name in names:
            fns[name]()
    times: dict[str, list[float]] = {name: [] for name in names}
    for r in range(repeats):
        if pacer is not None:
            pacer.wait()
        k = r % len(names)
        for name in names[k:] + names[:k]:
            start = time.perf_counter()
            fns[name]()
            times[name].append((time.perf_counter() - start) * 1e3)
    return times


def round_robin(tasks: dict[str, Callable[[bool], None]], rounds: int, idle: Callable[[float], None] = time.sleep,
                span_s: float | None = None) -> list[float]:
    """Call every task once per round, the order rotating from round to round, the rounds
    paced over ``span_s`` seconds (default: ``SPREAD_S`` per task). Each task takes
    ``timed``: one round with ``timed=False`` comes first (first-call costs), and the task
    records its repetitions only when timed.

    Why: figures taken one after another each see their own minute of the host, and on a
    shared host the minutes differ (the host probe read 3.4 to 8.3 ms within one run);
    taken in turns, every figure sees every part of the run. Returns the host probe taken
    at the end of each round (for ``machine``)."""
    names = list(tasks)
    for name in names:
        tasks[name](False)
    pacer = Pacer(rounds, idle=idle, span_s=SPREAD_S * len(names) if span_s is None else span_s)
    probes: list[float] = []
    for r in range(rounds):
        pacer.wait()
        k = r % len(names)
        for name in names[k:] + names[:k]:
            tasks[name](True)
        probes.append(host_probe_ms())
    return probes


def ratio(candidate: list[float], baseline: list[float], digits: int = 3) -> float:
    """Median of the candidate over median of the baseline."""
    return round(statistics.median(candidate) / statistics.median(baseline), digits)


def host_probe_ms(repeats: int = 5) -> float:
    """Median ms of a fixed piece of torch work shaped like a small model's feed-forward (20
    products of 512 x 384 by 384 x 1536), on the model thread with torch's threads: how fast
    this host ran a forward's kind of work at that moment. Two runs whose probes differ by
    more than ~10 % ran on a host in another mood (other tenants on the same cores), and
    their millisecond figures differ with it.

    Why this work: sampled every few seconds for 150 s beside MiniLM's forward at 128
    tokens, it read 64-67 ms while the forward took 28 ms, and 78-91 ms while it took 32-39
    ms; a probe of 300 small 64 x 64 products read 3.5-8.4 ms with no relation to either."""
    import torch

    g = torch.Generator().manual_seed(0)
    a, b = torch.randn(512, 384, generator=g), torch.randn(384, 1536, generator=g)

    def work() -> None:
        for _ in range(20):
            a @ b

    # Everything on the model thread, the warm-up included: torch on a second thread (the
    # GUI bench's main thread, say) makes torch keep a second team of helpers for the rest
    # of the process, and every small operation slows.
    probe = on_worker(torch.no_grad()(work))
    return round(statistics.median(interleaved({"probe": probe}, repeats, warmup=1)["probe"]), 2)


def machine(probes: list[float] | None = None) -> dict:
    """The machine a figure was taken on: cores, the load average when it was printed
    (above ~0.5 per core, something else was running: the figures are noisier), and the
    host probe (``host_probe_ms``): the median of ``probes`` taken during the bench (one per
    round of ``round_robin``), else one taken now."""
    import platform

    probes = probes or [host_probe_ms()]
    return {"cores": os.cpu_count(), "cpu": platform.processor() or platform.machine(),
            "loadavg_1m_5m": [round(x, 2) for x in os.getloadavg()[:2]],
            "host_probe_ms": round(statistics.median(probes), 2),
            "host_probe_range_ms": [min(probes), max(probes)], "host_probe_samples": len(probes)}
