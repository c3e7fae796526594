"""`attnscope export REC --view grid --format png` of a 32k recording was refused by default,
estimated over 60 s: a command-line user waits a few minutes with a progress bar. Only a
drawing estimated past an hour (cli.export.MAX_DRAW_SECONDS) is refused, with its numbers."""
import json

import attnscope.cli.export as export


def _estimated(monkeypatch, seconds: float) -> None:
    import attnscope.engine.traces as traces

    real = traces.estimate_drawing

    def fixed(*args, **kwargs):
        est = real(*args, **kwargs)
        est.seconds = seconds
        return est
    monkeypatch.setattr(traces, "estimate_drawing", fixed)     # the CLI asks the package's face


def test_the_limit_is_an_hour():
    assert export.MAX_DRAW_SECONDS == 3600


def test_a_drawing_of_some_minutes_is_drawn_saying_how_long(tmp_path, monkeypatch, capsys):
    from attnscope.cli.entry import main
    from tests.bad_inputs.cases import synthetic_recording

    path = synthetic_recording(tmp_path / "r.safetensors", 64)
    _estimated(monkeypatch, 546.0)                    # a 60,000-position grid on a CPU: 9.1 min
    assert main(["export", str(path), "--out", str(tmp_path / "o"), "--view", "grid", "--size", "320x240"]) == 0
    out, err = capsys.readouterr()
    assert "about 9.1 min" in err                     # one line first, then the bar on a terminal
    assert (tmp_path / "o" / "grid.png").stat().st_size > 0 and json.loads(out)["written"]


def test_a_drawing_of_hours_is_refused_with_its_numbers(tmp_path, monkeypatch, capsys):
    from attnscope.cli.entry import main
    from tests.bad_inputs.cases import synthetic_recording

    path = synthetic_recording(tmp_path / "r.safetensors", 64)
    _estimated(monkeypatch, 3 * 3600.0)
    assert main(["export", str(path), "--out", str(tmp_path / "o"), "--view", "grid"]) == 2
    err = capsys.readouterr().err
    assert "about 3.0 h" in err and "3,600 s allowed (--max-seconds)" in err and err.count("\n") == 1
    assert not (tmp_path / "o").exists() or not list((tmp_path / "o").iterdir())


def test_the_progress_bar_is_tqdm_on_a_terminal_only(monkeypatch, capsys):
    import sys

    monkeypatch.setattr(sys.stderr, "isatty", lambda: True, raising=False)
    bar = export._ProgressBar("drawing the grid view")
    bar(("pool", 1, 4))
    assert bar.bar is not None and not bar.bar.disable and bar.bar.total == 4
    bar.close()
