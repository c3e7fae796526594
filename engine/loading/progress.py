"""How far a load has come, and how it is stopped: what the window's bar and the CLI's tqdm show.

Why: a 15 GB model takes a minute to read from a disk, and a load that says nothing looks
hung. The loader calls a ``progress`` callable with ``LoadProgress`` records (how much of
the whole is done, in words with the numbers: tensors built, bytes read) and asks a
``stop`` callable between tensors; once it answers True the load ends with
``LoadCancelled`` and everything built so far is dropped: nothing is half-loaded.
Records come at most every ``MIN_STEP`` of the whole, so a GUI is not flooded.
"""
from __future__ import annotations

import contextlib
import threading
from dataclasses import dataclass
from typing import Callable

from attnscope.engine.errors import ModelLoadError
from attnscope.engine.runtime.free_memory import gib

MIN_STEP = 0.005          # report when the bar would move by at least half a percent
BUILD_SHARE = 0.3         # building the model (tensors handed over) is the first 30 % of the bar
DOWNLOAD_SHARE = 0.6      # a model fetched from the hub first: the download is the first 60 %


@dataclass(frozen=True)
class LoadProgress:
    fraction: float       # 0 .. 1 of the whole load
    text: str             # what is being done, with its numbers


class LoadCancelled(ModelLoadError):
    """The user stopped the load; nothing of it was kept."""


class Reporter:
    """Turns the loader's steps into throttled LoadProgress records and checks for a stop.
    The fraction never goes back; a download's threads may report at once (a lock)."""

    def __init__(self, name: str, progress: Callable[[LoadProgress], None] | None = None,
                 stop: Callable[[], bool] | None = None):
        self.name, self.progress, self.stop = name, progress, stop
        self._last = -1.0
        self._start = 0.0             # where building starts: after a download, DOWNLOAD_SHARE
        self._lock = threading.Lock()

    def check(self) -> None:
        if self.stop is not None and self.stop():
            raise LoadCancelled(f"Loading {self.name} was cancelled.")

    def report(self, fraction: float, text: str, force: bool = False) -> None:
        self.check()
        if self.progress is None:
            return
        fraction = min(1.0, max(0.0, fraction))
        with self._lock:
            if not (force or fraction - self._last >= MIN_STEP or fraction >= 1.0 > self._last):
                return
            fraction = self._last = max(self._last, fraction)     # said anew (force), never lower
        self.progress(LoadProgress(fraction, text))

    def downloading(self, fraction: float, said: str, force: bool = False) -> None:
        """Fetched from the hub: ``fraction`` of the download, ``said`` in words (bytes, files);
        the rest of the bar (building, reading) follows the download."""
        self._start = DOWNLOAD_SHARE
        self.report(DOWNLOAD_SHARE * fraction, f"downloading {self.name}: {said}", force)

    def building(self, done: int, total: int) -> None:
        """The model's tensors handed over by transformers, ``done`` of ``total``."""
        if total:
            self.report(self._start + (1 - self._start) * BUILD_SHARE * done / total,
                        f"building {self.name}: tensor {done:,} of {total:,}")

    def reading(self, done: int, total: int) -> None:
        """The weights read and checked, ``done`` of ``total`` bytes."""
        if total:
            self.report(self._start + (1 - self._start) * (BUILD_SHARE + (1 - BUILD_SHARE) * done / total),
                        f"reading {self.name}: {size_of(done)} of {size_of(total)}")


def size_of(n: int) -> str:
    return gib(n) if n >= 1 << 20 else f"{n / 1024:,.0f} KiB"       # a small file's bytes read, in KiB


@contextlib.contextmanager
def counting_tensors(reporter: Reporter):
    """Report each tensor transformers hands to the model, and stop between two when asked.
    transformers' loader walks its tensors through ``tqdm`` in core_model_loading; for the
    load, that name is a counting iterator (a transformers without it: no counts, no harm)."""
    try:
        from transformers import core_model_loading as loading
    except ImportError:
        yield
        return
    original = getattr(loading, "tqdm", None)
    if original is None:
        yield
        return

    def counted(iterable=None, *args, **kwargs):
        total = len(iterable) if hasattr(iterable, "__len__") else int(kwargs.get("total") or 0)
        for i, item in enumerate(iterable):
            reporter.building(i, total)
            yield item
        reporter.building(total, total)

    loading.tqdm = counted   # pyright: ignore[reportPrivateImportUsage]  (transformers' own bar, swapped)
    try:
        yield
    finally:
        loading.tqdm = original   # pyright: ignore[reportPrivateImportUsage]
