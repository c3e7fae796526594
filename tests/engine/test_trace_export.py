"""Export writes what was asked (one head, one kind, every head, the pooled overview), asked of the
trace through its protocol, a block at a time: one head equals ``reading.head`` for a dense and a
recorded trace, a dense export past the limit is refused with its numbers before anything is
written, a stop ends it with no file left, the file appears only when complete, and the command
line honours --view/--layer/--head/--kind."""
import csv
import json

import numpy as np
import pytest

from attnscope.engine.inspection import export
from attnscope.engine.inspection.export import (ExportAsk, ExportError, ExportTooLarge, estimate_export, export_trace,
                                      load_npz, refusal)
from attnscope.engine.loading.catalog import open_model
from attnscope.engine.traces.base import RunCancelled
from attnscope.engine.traces.dense import DenseTrace
from attnscope.engine.traces.recorded import RecordedTrace
from attnscope.engine.traces.tracing import trace_text
from attnscope.cli.entry import main
from tests.helpers.hf_tiny import tiny_folder
from attnscope.engine.traces import reading

TEXT = "the big dog sees the small cat and the cat sees the big dog because it is small"


@pytest.fixture(scope="module")
def recorded(tmp_path_factory):
    """A tiny Llama's trace as a long one starts: computed from its recording, nothing held dense."""
    loaded = open_model(str(tiny_folder(tmp_path_factory.mktemp("export"), "llama")), "cpu")
    trace = trace_text(loaded, TEXT)
    return RecordedTrace(trace.calls, model_name=trace.model_name, family=trace.family,
                         source_tokens=trace.source_tokens, target_tokens=trace.target_tokens)


@pytest.fixture(scope="module")
def dense(recorded):
    kinds = recorded.kinds
    return DenseTrace("tiny", "llama", {k: reading.weights(recorded, k).copy() for k in kinds}, recorded.source_tokens,
                      recorded.target_tokens)


@pytest.fixture
def small_blocks(monkeypatch):
    """Three query rows a block: every head is written in several blocks."""
    monkeypatch.setattr(export, "BLOCK_BYTES", 3 * 4 * 64)
    monkeypatch.setattr(export, "CSV_BLOCK_BYTES", 3 * 4 * 64)


def _leftovers(folder):
    return sorted(p.name for p in folder.iterdir() if ".part" in p.name)


@pytest.mark.parametrize("which", ["recorded", "dense"])
def test_one_head_exported_equals_the_traces_head(which, recorded, dense, small_blocks, tmp_path):
    trace = recorded if which == "recorded" else dense
    kind = trace.kinds[-1]
    ask = ExportAsk("head", kind, 1, 2)
    with np.load(export_trace(trace, tmp_path / "h.npz", ask)) as f:
        assert str(f["what"]) == "head" and (str(f["kind"]), int(f["layer"]), int(f["head"])) == (kind, 1, 2)
        np.testing.assert_allclose(f["weights"], reading.head(trace, kind, 1, 2), atol=1e-6, rtol=0)
        assert list(f["key_tokens"]) == reading.key_tokens(trace, kind)
    with open(export_trace(trace, tmp_path / "h.csv", ask), encoding="utf-8", newline="") as f:
        rows = list(csv.DictReader(f))
    tq, tk = trace.shape(kind)[2:]
    assert len(rows) == tq * tk and {(r["layer"], r["head"]) for r in rows} == {("1", "2")}
    cell = rows[5 * tk + 3]
    assert (int(cell["query_index"]), int(cell["key_index"]), cell["key_token"]) == (5, 3, reading.key_tokens(trace, kind)[3])
    assert float(cell["weight"]) == pytest.approx(float(reading.head(trace, kind, 1, 2)[5, 3]), rel=1e-5, abs=1e-7)
    with pytest.raises(ValueError, match="holds one head"):
        load_npz(tmp_path / "h.npz")


def test_every_head_of_a_kind_reads_back_as_a_trace_of_that_kind(recorded, small_blocks, tmp_path):
    kind = recorded.kinds[-1]
    back = load_npz(export_trace(recorded, tmp_path / "k.npz", ExportAsk("kind", kind)))
    assert back.kinds == [kind] and back.source_tokens == recorded.source_tokens
    np.testing.assert_allclose(reading.weights(back, kind), reading.weights(recorded, kind), atol=1e-6, rtol=0)


def test_the_pooled_overview_is_the_traces_thumbnails(recorded, monkeypatch, tmp_path):
    monkeypatch.setattr(export, "POOLED_PIXELS", 8)     # the text's tokens pooled several a pixel
    kind = recorded.kinds[-1]
    thumbs = reading.thumbnails(recorded, kind, 8, "max")
    with np.load(export_trace(recorded, tmp_path / "p.npz", ExportAsk("pooled"))) as f:
        np.testing.assert_allclose(f[f"pooled_{kind.replace(' ', '_')}"], thumbs.pooled, atol=1e-6)
        np.testing.assert_allclose(f[f"sink_{kind.replace(' ', '_')}"], thumbs.sink, atol=1e-6)
        bins = f[f"query_bins_{kind.replace(' ', '_')}"]
        assert str(f[f"how_{kind.replace(' ', '_')}"]) == "max"
    tq = recorded.shape(kind)[2]
    b = -(-tq // 8)                                     # tokens a pixel
    assert b > 1 and bins[0].tolist() == [0, b] and bins[-1, 1] == tq and len(bins) == thumbs.pooled.shape[2]
    with open(export_trace(recorded, tmp_path / "p.csv", ExportAsk("pooled")), encoding="utf-8", newline="") as f:
        rows = list(csv.DictReader(f))
    assert len(rows) == thumbs.pooled.size
    assert float(rows[1]["weight"]) == pytest.approx(float(thumbs.pooled[0, 0, 0, 1]), rel=1e-5)
    assert (rows[1]["first_key"], rows[1]["last_key"], rows[1]["how"]) == (str(b), str(2 * b - 1), "max")


def test_a_dense_export_past_the_limit_is_refused_with_the_numbers(recorded, tmp_path):
    kind = recorded.kinds[-1]
    L, H, tq, tk = recorded.shape(kind)
    ask = ExportAsk("kind", kind)
    limit = L * H * tq * tk * 4 - 1
    with pytest.raises(ExportTooLarge) as refused:
        export_trace(recorded, tmp_path / "t.npz", ask, limit=limit)
    said = str(refused.value)
    assert f"{L} layers x {H} heads x {tq:,} x {tk:,} tokens" in said and "more than the" in said
    assert "nothing was written" in said and "Save Recording" in said and "attnscope record" in said
    assert "\n" not in said and list(tmp_path.iterdir()) == []
    assert refusal(recorded, estimate_export(recorded, ask, "npz", measure=False), limit) == said
    assert refusal(recorded, estimate_export(recorded, ExportAsk("head", kind), "npz", measure=False), limit) is None


def test_a_stop_ends_the_export_and_leaves_no_file(recorded, small_blocks, tmp_path):
    path = tmp_path / "t.npz"
    path.write_bytes(b"the file that was there")
    seen = []
    with pytest.raises(RunCancelled):
        export_trace(recorded, path, ExportAsk("trace"), report=seen.append, stop=lambda: len(seen) >= 2)
    assert len(seen) == 2 and seen[-1][0] == "export" and seen[-1][1] < seen[-1][2]
    assert path.read_bytes() == b"the file that was there" and _leftovers(tmp_path) == []


def test_the_file_appears_only_when_complete(recorded, small_blocks, tmp_path):
    path = tmp_path / "t.csv"
    during = []
    written = export_trace(recorded, path, ExportAsk("kind"),
                           report=lambda record: during.append((path.exists(), len(_leftovers(tmp_path)))))
    assert during and set(during) == {(False, 1)}          # a temporary beside it, the name not yet there
    assert written == path and path.exists() and _leftovers(tmp_path) == []


def test_an_estimate_names_its_numbers(recorded):
    kind = recorded.kinds[-1]
    L, H, tq, tk = recorded.shape(kind)
    est = estimate_export(recorded, ExportAsk("kind", kind), "npz")
    assert est.cells == L * H * tq * tk and est.raw_bytes == 4 * est.cells and est.seconds is not None
    assert 0 < est.file_bytes <= est.raw_bytes + 4096
    assert est.describe().startswith(f"{L} layers x {H} heads x {tq:,} x {tk:,} tokens = ")
    with pytest.raises(ExportError, match="layer must be below"):
        estimate_export(recorded, ExportAsk("head", kind, L, 0), "npz")
    with pytest.raises(ExportError, match="no 'sideways' attention"):
        ExportAsk("kind", "sideways").resolved(recorded)


# ---- the command line ----------------------------------------------------------------------
def run(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_cli_view_head_writes_that_heads_array(tmp_path, capsys):
    code, out, _ = run(capsys, "export", "random-gpt", "--text", "the big dog sees the cat", "--out", str(tmp_path),
                       "--view", "head", "--layer", "1", "--head", "2", "--format", "npz")
    path = tmp_path / "head-decoder_self-L1-H2.npz"
    assert code == 0 and json.loads(out)["written"] == [str(path)] and [p.name for p in tmp_path.iterdir()] == [path.name]
    expected = reading.head(trace_text(open_model("random-gpt", "cpu"), "the big dog sees the cat"), "decoder self", 1, 2)
    with np.load(path) as f:
        np.testing.assert_allclose(f["weights"], expected, atol=1e-6)
    code, _, _ = run(capsys, "export", "random-gpt", "--text", "the big dog sees the cat", "--out", str(tmp_path),
                     "--view", "head", "--layer", "1", "--head", "2", "--format", "csv")
    assert code == 0
    lines = (tmp_path / "head-decoder_self-L1-H2.csv").read_text(encoding="utf-8").splitlines()
    assert len(lines) == 1 + expected.size


def test_cli_refuses_a_big_dense_export_in_one_sentence(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(export, "EXPORT_LIMIT_BYTES", 1000)
    code, out, err = run(capsys, "export", "random-gpt", "--text", "the big dog sees the cat", "--out", str(tmp_path),
                         "--format", "npz")
    assert code == 2 and out == "" and list(tmp_path.iterdir()) == []
    assert err.count("\n") == 1 and err.startswith("attnscope: Every head of decoder self attention is ")
    assert "more than the" in err and "attnscope record" in err


def test_cli_refuses_views_a_format_cannot_hold(tmp_path, capsys):
    for view, fmt in (("lines", "npz"), ("pooled", "png")):
        code, _, err = run(capsys, "export", "random-gpt", "--text", "the big dog", "--out", str(tmp_path),
                           "--view", view, "--format", fmt)
        assert code == 2 and err.count("\n") == 1 and f"--view {view}" in err
    code, _, err = run(capsys, "export", "random-gpt", "--text", "the big dog", "--out", str(tmp_path),
                       "--view", "head", "--layer", "7", "--format", "npz")
    assert code == 2 and "layer must be below 2" in err and list(tmp_path.iterdir()) == []
