"""Jobs: results arrive on the GUI thread, a new job drops the old one's results, errors surface."""
import gc
import threading
import time
import weakref

import pytest
from PySide6.QtCore import QThread

from attnscope.gui.worker import MODEL, TRAINING, Jobs, active_threads, lane_pool, process_events_until, shutdown_all


def _count(n):
    for i in range(n):
        yield i
    return "done"


def _endless():
    """Yields until stopped, a few thousand a second and never past 100,000: one that is not
    stopped (a failing test) must not fill the GUI thread's queue until the machine runs out of
    memory (seen under load: a 22 GB process killed, and the suite with it)."""
    for i in range(1, 100_001):
        time.sleep(0.0002)     # the job's own pace, in its worker thread; the test never sleeps
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
    assert shutdown_all(timeout_s=60)       # a bound for a loaded machine, not a time asserted
    assert active_threads() == 0
    assert not jobs.busy


def _fails_after_one():
    yield 1
    raise RuntimeError("element 0 of tensors does not require grad")


def test_a_runtime_error_in_a_generator_reaches_on_error_and_the_dialog_signal(qtbot):
    from attnscope.gui.worker import job_failures

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


# ---- lanes: one thread for all model work, its own thread for training ----------------------
def _thread_id():
    return threading.get_ident()


def test_model_jobs_of_different_owners_share_one_thread(qtbot):
    """torch gives each thread that runs it a team of helpers; one model thread keeps one team."""
    a, b = Jobs(lane=MODEL), Jobs(lane=MODEL)
    seen = []
    for jobs in (a, b, a, b):
        jobs.start(_thread_id, on_returned=seen.append)
        qtbot.waitUntil(lambda: not jobs.busy)
    assert len(seen) == 4 and len(set(seen)) == 1
    assert seen[0] != threading.get_ident()          # not the GUI thread
    assert lane_pool(MODEL).maxThreadCount() == 1 and lane_pool(MODEL).expiryTimeout() == -1


def test_a_model_job_waits_its_turn_and_a_waiting_one_can_be_cancelled(qtbot):
    gate = threading.Event()
    holder, waiter, late = Jobs(lane=MODEL), Jobs(lane=MODEL), Jobs(lane=MODEL)
    held, got, dropped = [], [], []
    holder.start(lambda: (held.append(1), gate.wait(10)), on_returned=lambda _v: None)
    qtbot.waitUntil(lambda: held == [1])
    waiter.start(_count, 2, on_returned=got.append)
    late.start(_count, 2, on_returned=dropped.append)
    late.cancel()                                     # still queued: taken off the lane
    assert not late.busy and not late.running
    gate.set()
    qtbot.waitUntil(lambda: got == ["done"] and not holder.busy and not waiter.busy)
    assert dropped == []


def test_training_does_not_hold_up_model_work(qtbot):
    gate = threading.Event()
    training, model = Jobs(lane=TRAINING), Jobs(lane=MODEL)
    started, got = [], []
    training.start(lambda: (started.append(_thread_id()), gate.wait(10)))
    qtbot.waitUntil(lambda: len(started) == 1)
    model.start(_thread_id, on_returned=got.append)
    qtbot.waitUntil(lambda: len(got) == 1)             # while training still runs
    assert training.running and got[0] != started[0]
    gate.set()
    qtbot.waitUntil(lambda: not training.busy)
    assert training.shutdown()


def test_an_unknown_lane_is_refused():
    with pytest.raises(ValueError, match="no lane"):
        Jobs(lane="fast")


def test_call_on_lane_runs_there_and_hands_back_value_and_error(qtbot):
    """A drawing worker that needs a forward hands it to the model thread and waits."""
    from attnscope.gui.worker import SHARED, call_on_lane

    model_thread = call_on_lane(MODEL, _thread_id)
    seen = []

    def drawing():
        inner = call_on_lane(MODEL, lambda: call_on_lane(MODEL, _thread_id))   # nested: runs at once
        return threading.get_ident(), call_on_lane(MODEL, _thread_id), inner

    def failing():
        raise ValueError("no forward for you")

    jobs = Jobs(lane=SHARED)
    jobs.start(drawing, on_returned=seen.append)
    qtbot.waitUntil(lambda: len(seen) == 1)
    drawer, ran_on, nested = seen[0]
    assert ran_on == nested == model_thread != drawer and model_thread != threading.get_ident()
    with pytest.raises(ValueError, match="no forward"):
        call_on_lane(MODEL, failing)


def test_waiting_in_place_leaves_the_cores_to_the_workers(qtbot, monkeypatch):
    """Export and the benches wait on the GUI thread for a worker: that wait must sleep, not
    poll, or it takes a core from the worker (a 512-token forward ran 3-5x slower on 2 cores).
    It sleeps when every turn of its loop asks Qt to wait for more events, through the
    overload without a time (``processEvents(flags, ms)`` drops WaitForMoreEvents)."""
    from PySide6.QtCore import QCoreApplication, QEventLoop

    import attnscope.gui.worker as worker

    calls = []

    class Recording:
        @staticmethod
        def processEvents(*args):
            calls.append(args)
            QCoreApplication.processEvents(*args)

    monkeypatch.setattr(worker, "QCoreApplication", Recording)
    released = threading.Event()
    jobs = Jobs()
    jobs.start(lambda: released.wait(10.0))
    qtbot.waitUntil(lambda: jobs.running)
    turns = []

    def until():
        turns.append(1)
        if len(turns) == 3:          # the worker is let go after the loop has turned twice
            released.set()
        return not jobs.busy

    assert worker.process_events_until(until, timeout_s=30)
    assert len(calls) >= 2
    wait = QEventLoop.ProcessEventsFlag.WaitForMoreEvents
    assert all(len(args) == 1 and args[0] & wait for args in calls)


def test_waiting_in_place_gives_up_after_its_timeout(qtbot):
    assert process_events_until(lambda: False, timeout_s=0.05) is False


def test_a_finished_job_lets_go_of_its_inputs(qtbot):
    """Qt's pool keeps every job it ran; a job's inputs (a drawing's trace, 75 MB at 512
    tokens) must not stay alive with it, or every Run's trace lives until the app exits."""
    class Trace:
        pass

    trace = Trace()
    alive = weakref.ref(trace)
    jobs, finished = Jobs(), []
    jobs.start(lambda t: None, trace, on_finished=lambda: finished.append(True))
    del trace
    qtbot.waitUntil(lambda: bool(finished))
    gc.collect()
    assert alive() is None


def test_closing_views_while_their_jobs_deliver_never_crashes(qtbot):
    """A view closed while its job was inside ``emit`` freed the relay under the worker thread: a
    segfault (this loop crashed the process 4 runs in 4 before the relay outlived its Jobs), and
    `make test` crashed with it on CI. Each closed view's job stops quietly, nothing reaches it."""
    from PySide6.QtCore import QCoreApplication, QEvent
    from PySide6.QtWidgets import QWidget

    delivered = []
    for _ in range(300):
        view = QWidget()
        jobs = Jobs(view, announce=False)
        jobs.start(_count, 1000, on_yielded=delivered.append)
        process_events_until(lambda: bool(delivered), 5.0)     # the job is delivering now
        view.deleteLater()
        QCoreApplication.sendPostedEvents(None, QEvent.Type.DeferredDelete.value)
        delivered.clear()
    assert process_events_until(lambda: active_threads() == 0, 60.0)
    assert not delivered


def test_cycles_are_collected_on_the_gui_thread_not_in_a_worker(qtbot):
    """A cycle holding a Qt object, collected by a worker that crossed the allocation threshold,
    was destroyed on that worker under the GUI thread (a segfault in Qt's event loop). Automatic
    collection is off once a Jobs exists, and the cycle ends on the GUI thread."""
    import gc
    from PySide6.QtCore import QObject

    jobs, done = Jobs(announce=False), []
    assert not gc.isenabled()
    ended_on: list[bool] = []

    class Holder:
        pass

    holder = Holder()
    holder.me, holder.qt = holder, QObject()          # a cycle that holds a Qt object
    weakref.finalize(holder, lambda: ended_on.append(threading.current_thread() is threading.main_thread()))
    del holder

    def allocate():                                    # kept: far past gen 0's threshold, on the worker
        return [[i] for i in range(20 * gc.get_threshold()[0])]
    jobs.start(allocate, on_returned=done.append)
    qtbot.waitUntil(lambda: bool(done) and bool(ended_on), timeout=20000)
    assert ended_on == [True]
