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


def _fails_after_one():
    yield 1
    raise RuntimeError("element 0 of tensors does not require grad")


def test_a_runtime_error_in_a_generator_reaches_on_error_and_the_dialog_signal(qtbot):
    from gui.worker import job_failures

    jobs = Jobs(title="Training failed")
    errors, announced, finished = [], [], []
    job_failures().failed.connect(lambda title, message: announced.append((title, message)))
    jobs.start(_fails_after_one, on_error=errors.append, on_finished=lambda: finished.append(True))
    qtbot.waitUntil(lambda: bool(errors and finished))
    assert isinstance(errors[0], RuntimeError)
    assert announced == [("Training failed", "RuntimeError: element 0 of tensors does not require grad")]
    assert not jobs.busy


def test_quick_requests_supersede_the_ones_still_waiting(qtbot):
    """Ten quick requests while one runs: the running one ends (cancelled, results dropped),
    the eight in between never run, and only the newest is delivered."""
    import threading

    gate, ran, got = threading.Event(), [], []

    def job(i):
        ran.append(i)
        if i == 0:
            gate.wait(5)
        return i

    jobs = Jobs()
    for i in range(10):
        jobs.start(job, i, on_returned=got.append)
        if i == 0:
            qtbot.waitUntil(lambda: ran == [0])
    gate.set()
    qtbot.waitUntil(lambda: got == [9])
    qtbot.waitUntil(lambda: not jobs.busy)
    assert ran == [0, 9]


def test_stop_keeps_the_result_and_reaches_the_job(qtbot):
    def until_stopped(stop):
        n = 0
        while not stop():
            n += 1
            yield n
        return "kept"

    jobs, seen, returned = Jobs(), [], []
    jobs.start(until_stopped, on_yielded=seen.append, on_returned=returned.append)
    qtbot.waitUntil(lambda: len(seen) > 2)
    jobs.stop()
    qtbot.waitUntil(lambda: returned == ["kept"])
