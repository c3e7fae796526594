"""attnscope.engine.runtime.memory: freed weights stay mapped for the next Run (glibc only).

The allocation pattern is a Run's at 512 tokens on a worker thread: six 12 MB blocks alive at
once (the layers' weights), copied into one 75 MB array (the trace), then all freed. Each
check runs in a fresh interpreter, since malloc's settings are for the whole process and
this one has long allocated on many threads.
"""
import subprocess
import sys
from pathlib import Path

import pytest

import attnscope.cli.entry as main
import attnscope.engine.runtime as runtime
from attnscope.engine.runtime import memory

ROOT = Path(__file__).resolve().parents[2]
glibc_only = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="mallopt is glibc's")

RUNS_ON_A_THREAD = """
import resource, sys, threading
import numpy as np
np._core.multiarray._set_madvise_hugepage(False)   # so a fault is one 4 KiB page, counted alike
{setup}
faults = []
def runs():
    for run in range(6):
        before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
        weights = [np.ones((12, 512, 512), np.float32) for _ in range(6)]   # (L) x (H, T, T)
        trace = np.empty((6, 12, 512, 512), np.float32)                      # (L, H, T, T)
        for layer, w in enumerate(weights):
            trace[layer] = w
        del weights, trace
        faults.append(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before)
t = threading.Thread(target=runs); t.start(); t.join()
print(faults[-1])   # once the heap has settled
"""


def faults_in_a_later_run(setup: str) -> int:
    out = subprocess.run([sys.executable, "-c", RUNS_ON_A_THREAD.format(setup=setup)], cwd=ROOT,
                         capture_output=True, text=True, check=True)
    return int(out.stdout.strip().splitlines()[-1])


@glibc_only
def test_a_later_run_reuses_the_memory_the_first_freed():
    pages = 2 * 6 * 12 * 512 * 512 * 4 // 4096      # 36,864 pages of 4 KiB: the weights and the trace
    kept = faults_in_a_later_run("from attnscope.engine.runtime.memory import keep_freed_memory\nassert keep_freed_memory()")
    assert kept < pages // 20


def test_it_is_set_once_and_says_whether_it_took(monkeypatch):
    monkeypatch.setattr(memory, "_applied", True)
    assert memory.keep_freed_memory() is True          # settled: not applied again


def test_main_sets_it_before_anything_else(monkeypatch):
    calls = []
    monkeypatch.setattr(memory, "keep_freed_memory", lambda: calls.append("kept") or True)
    monkeypatch.setattr(runtime, "keep_freed_memory", memory.keep_freed_memory)   # main asks the package's face
    monkeypatch.setattr(main, "build_parser", lambda: calls.append("parser") or _Stop())
    with pytest.raises(SystemExit):
        main.main(["--help"])
    assert calls[:2] == ["kept", "parser"]


class _Stop:
    def parse_args(self, argv):
        raise SystemExit(0)
