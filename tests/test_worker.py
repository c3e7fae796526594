"""Jobs: results arrive on the GUI thread, a new job drops the old one's results, errors surface."""
from PySide6.QtCore import QThread, QThreadPool

from gui.worker import Jobs, shutdown_all


def _count(n):
    for i in range(n):
        yield i
    return "done"


def _endless():
    i = 0
    while True:
        i += 1
        yield i


def _fail():
    raise ValueError("bad input, clearly explained")


def test_generator_yields_and_returns_on_gui_thread(qtbot):
    jobs = Jobs()
    got, threads, returned = [], [], []
    jobs.start(_count, 5, on_yielded=lambda v: (got.append(v), threads.append(QThread.currentThread())),
               on_returned=returned.append)
    qtbot.waitUntil(lambda: returned == ["done"])
    assert got == [0, 1, 2, 3, 4]
    assert all(t is QThread.currentThread() for t in threads)
    qtbot.waitUntil(lambda: not jobs.busy)


def test_new_job_cancels_old_and_drops_its_results(qtbot):
    jobs = Jobs()
    old, new = [], []
    jobs.start(_endless, on_yielded=old.append)
    qtbot.waitUntil(lambda: len(old) > 0)
    jobs.start(_count, 3, on_returned=new.append)
    n_old = len(old)
    qtbot.waitUntil(lambda: new == ["done"])
    qtbot.waitUntil(lambda: not jobs.busy)
    assert len(old) <= n_old + 1  # at most one value was already queued when we switched
    assert jobs.shutdown()


def test_error_reaches_on_error(qtbot):
    jobs = Jobs()
    errors = []
    jobs.start(_fail, on_error=errors.append)
    qtbot.waitUntil(lambda: len(errors) == 1)
    assert isinstance(errors[0], ValueError) and "clearly explained" in str(errors[0])


def test_shutdown_all_stops_endless_generator(qtbot):
    jobs = Jobs()
    seen = []
    jobs.start(_endless, on_yielded=seen.append)
    qtbot.waitUntil(lambda: len(seen) > 2)
    assert shutdown_all(timeout_s=10)
    assert QThreadPool.globalInstance().activeThreadCount() == 0
    assert not jobs.busy
