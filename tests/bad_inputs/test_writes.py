"""Every file attnscope writes goes to a temporary name beside it and is renamed when complete:
a failure half-way leaves the previous file intact and no temporary behind, and the new file
gets the permissions of the user's umask. And a broken time-lapse or trace file is one ValueError."""
import json
import os
import zipfile

import numpy as np
import pytest

from attnscope.engine.loading.demo import random_model
from attnscope.engine.inspection.export import load_npz, save_csv, save_npz
from attnscope.engine.training.timelapse import Probe, load_timelapse, save_timelapse
from attnscope.engine.traces.tracing import trace_text
from attnscope.engine.traces import reading


@pytest.fixture(scope="module")
def trace():
    return trace_text(random_model("translator"), "the big dog", target="der hund")


def _leftovers(folder):
    return sorted(p.name for p in folder.iterdir() if ".part" in p.name)


def _fail_during(monkeypatch, module, name):
    """Make ``module.name`` write half a file and then fail, as a kill or a full disk would."""
    def broken(*a, **k):
        path = next(x for x in (*a, *k.values()) if isinstance(x, (str, os.PathLike)))
        with open(path, "wb") as f:
            f.write(b"half")
        raise OSError(28, "No space left on device")
    monkeypatch.setattr(module, name, broken)


def test_checkpoint_save_failing_half_way_keeps_the_old_file(tmp_path, monkeypatch):
    import safetensors.torch

    from attnscope.engine.loading.checkpoint import load_checkpoint, save_checkpoint
    path = save_checkpoint(random_model("gpt"), tmp_path / "m.safetensors")
    before = path.read_bytes()
    _fail_during(monkeypatch, safetensors.torch, "save_file")
    with pytest.raises(OSError):
        save_checkpoint(random_model("gpt", seed=9), path)
    assert path.read_bytes() == before and _leftovers(tmp_path) == []
    monkeypatch.undo()
    assert load_checkpoint(path).family == "gpt"


@pytest.mark.parametrize("save, name", [(save_npz, "trace.npz"), (save_csv, "trace.csv")])
def test_trace_export_failing_half_way_keeps_the_old_file(tmp_path, monkeypatch, trace, save, name):
    path = save(trace, tmp_path / name)
    before = path.read_bytes()
    tile, calls = reading.tile, []

    def fails_on_the_third_head(t, *args):   # two heads written, then the disk is full
        calls.append(args)
        if len(calls) == 3:
            raise OSError(28, "No space left on device")
        return tile(t, *args)
    monkeypatch.setattr(reading, "tile", fails_on_the_third_head)
    with pytest.raises(OSError):
        save(trace, path)
    assert path.read_bytes() == before and _leftovers(tmp_path) == []


def test_timelapse_save_failing_half_way_keeps_the_old_file(tmp_path, monkeypatch, trace):
    path = save_timelapse(tmp_path / "run.timelapse.npz", [Probe(10, 2.5, trace)])
    before = path.read_bytes()
    _fail_during(monkeypatch, np, "savez_compressed")
    with pytest.raises(OSError):
        save_timelapse(path, [Probe(20, 1.5, trace)])
    assert path.read_bytes() == before and _leftovers(tmp_path) == []


def test_written_files_follow_the_umask(tmp_path, trace):
    from attnscope.engine.loading.checkpoint import save_checkpoint
    old = os.umask(0o027)
    try:
        files = [save_checkpoint(random_model("bert"), tmp_path / "b.safetensors"), save_npz(trace, tmp_path / "t.npz"),
                 save_csv(trace, tmp_path / "t.csv"), save_timelapse(tmp_path / "x.timelapse.npz", [Probe(1, 1.0, trace)])]
    finally:
        os.umask(old)
    assert {oct(f.stat().st_mode & 0o777) for f in files} == {oct(0o640)}


def test_npz_names_get_their_suffix(tmp_path, trace):
    assert save_npz(trace, tmp_path / "plain").name == "plain.npz"
    assert load_npz(tmp_path / "plain.npz").kinds == trace.kinds


def test_a_round_trip_still_works(tmp_path, trace):
    probes = load_timelapse(save_timelapse(tmp_path / "r.timelapse.npz", [Probe(5, 3.0, trace), Probe(9, 2.0, trace)]))
    assert [p.step for p in probes] == [5, 9]
    np.testing.assert_array_equal(reading.weights(probes[1].trace, "cross"), reading.weights(trace, "cross"))


def _broken_timelapses(folder, trace):
    good = save_timelapse(folder / "good.timelapse.npz", [Probe(1, 1.0, trace)])
    data = good.read_bytes()
    files = {"empty": b"", "text": b"hello", "truncated": data[: len(data) // 2], "random": os.urandom(3000),
             "zip header only": data[:30]}
    out = {}
    for name, content in files.items():
        p = folder / f"{name}.timelapse.npz"
        p.write_bytes(content)
        out[name] = p
    def npz(name, **arrays):
        p = folder / f"{name}.timelapse.npz"
        np.savez(p, **arrays)
        out[name] = p
    npz("no meta", p0_k0=np.zeros((1, 1, 2, 2), np.float32))
    npz("meta not JSON", meta=np.array("{oops"))
    npz("meta a dict", meta=np.array(json.dumps({"step": 1})))
    npz("meta of numbers", meta=np.array(json.dumps([1, 2])))
    record = {"step": 1, "loss": 1.0, "kinds": ["cross"], "source_tokens": ["a"], "target_tokens": ["b"],
              "model_name": "m", "family": "translator"}
    npz("missing array", meta=np.array(json.dumps([record])))
    npz("array of 2 dimensions", meta=np.array(json.dumps([record])), p0_k0=np.zeros((2, 2), np.float32))
    npz("array of text", meta=np.array(json.dumps([record])), p0_k0=np.array([["a"]]))
    npz("step not a number", meta=np.array(json.dumps([{**record, "step": "x"}])), p0_k0=np.zeros((1, 1, 1, 1), np.float32))
    npz("tokens not strings", meta=np.array(json.dumps([{**record, "source_tokens": [1]}])),
        p0_k0=np.zeros((1, 1, 1, 1), np.float32))
    npz("kinds missing", meta=np.array(json.dumps([{k: v for k, v in record.items() if k != "kinds"}])))
    p = folder / "pickled.timelapse.npz"
    np.savez(p, meta=np.array([{"a": 1}], dtype=object))
    out["object array (pickle)"] = p
    bomb = folder / "bomb.timelapse.npz"
    with zipfile.ZipFile(bomb, "w") as z:
        info = zipfile.ZipInfo("meta.npy")
        info.compress_type = zipfile.ZIP_DEFLATED
        with z.open(info, "w", force_zip64=True) as f:
            for _ in range(128):
                f.write(bytes(1 << 20))
    out["zip bomb"] = bomb
    (folder / "a-folder.timelapse.npz").mkdir()
    out["a folder"] = folder / "a-folder.timelapse.npz"
    out["missing"] = folder / "absent.timelapse.npz"
    return out


def test_every_broken_timelapse_is_one_value_error(tmp_path, trace):
    for name, path in _broken_timelapses(tmp_path, trace).items():
        with pytest.raises(ValueError) as err:
            load_timelapse(path)
        assert path.name in str(err.value) and "\n" not in str(err.value), name


def test_every_broken_trace_export_is_one_value_error(tmp_path, trace):
    for name, path in _broken_timelapses(tmp_path, trace).items():
        with pytest.raises(ValueError) as err:
            load_npz(path)
        assert path.name in str(err.value), name


def test_a_killed_writers_temporary_is_removed_by_the_next_write(tmp_path, trace):
    """SIGKILL leaves no chance to clean up: the next write of the same file removes the
    temporaries of writers that no longer run, and keeps a running writer's."""
    import subprocess
    import sys

    from attnscope.engine.runtime.files import atomic_path

    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    alive = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        stale = tmp_path / f".trace.npz.{gone.pid}.abc123.part.npz"
        running = tmp_path / f".trace.npz.{alive.pid}.def456.part.npz"
        other = tmp_path / f".other.npz.{gone.pid}.ghi789.part.npz"   # another file's: not ours to judge
        for p in (stale, running, other):
            p.write_bytes(b"half")
        save_npz(trace, tmp_path / "trace.npz")
        assert not stale.exists() and running.exists() and other.exists()
        assert load_npz(tmp_path / "trace.npz").source_tokens == trace.source_tokens
        with atomic_path(tmp_path / "x.bin") as tmp:        # a temporary names its own writer
            assert f".x.bin.{os.getpid()}." in tmp.name
            tmp.write_bytes(b"done")
    finally:
        alive.kill()
        alive.wait()
