"""engine.memory: freed weights stay mapped for the next Run (glibc only).

The allocation pattern is a Run's at 512 tokens: six 12 MB blocks alive at once on a worker
thread, then freed. Each check runs in a fresh interpreter, since malloc's settings are for
the whole process and this one has long allocated on many threads.
"""
import subprocess
import sys
from pathlib import Path

import pytest

import main
from engine import memory

ROOT = Path(__file__).resolve().parents[1]
glibc_only = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="mallopt is glibc's")

RUNS_ON_A_THREAD = """
import resource, sys, threading
import numpy as np
{setup}
faults = []
def runs():
    for run in range(4):
        before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
        weights = [np.ones((12, 512, 512), np.float32) for _ in range(6)]   # (L) x (H, T, T)
        del weights
        faults.append(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before)
t = threading.Thread(target=runs); t.start(); t.join()
print(max(faults[1:]))
"""


def faults_per_later_run(setup: str) -> int:
    out = subprocess.run([sys.executable, "-c", RUNS_ON_A_THREAD.format(setup=setup)], cwd=ROOT,
                         capture_output=True, text=True, check=True)
    return int(out.stdout.strip().splitlines()[-1])


@glibc_only
def test_a_second_run_reuses_the_memory_the_first_freed():
    pages = 6 * 12 * 512 * 512 * 4 // 4096          # 18,432 pages of 4 KiB
    kept = faults_per_later_run("from engine.memory import keep_freed_memory\nassert keep_freed_memory()")
    assert kept < pages // 20


def test_it_is_set_once_and_says_whether_it_took(monkeypatch):
    monkeypatch.setattr(memory, "_applied", True)
    assert memory.keep_freed_memory() is True          # settled: not applied again


def test_main_sets_it_before_anything_else(monkeypatch):
    calls = []
    monkeypatch.setattr(memory, "keep_freed_memory", lambda: calls.append("kept") or True)
    monkeypatch.setattr(main, "build_parser", lambda: calls.append("parser") or _Stop())
    with pytest.raises(SystemExit):
        main.main(["--help"])
    assert calls[:2] == ["kept", "parser"]


class _Stop:
    def parse_args(self, argv):
        raise SystemExit(0)
