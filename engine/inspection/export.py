"""A trace to files other programs read (NumPy ``.npz``, CSV): what was asked, estimated first.

What (``ExportAsk.what``): one head, every head of one kind, every head of every kind (the
dense trace), or the heads overview pooled by max to POOLED_PIXELS a side. Each is asked of
the trace through its protocol: a block of rows of one head at a time (``tile``) or the pooled
thumbnails, so a recorded trace computes them exactly from its queries and keys, in blocks,
and no dense array is assumed to exist.

``estimate_export`` gives the numbers before anything is written (the sizes from the shapes,
the time and the compressed size measured on a sample block); an export whose array or file
would pass EXPORT_LIMIT_BYTES is refused with them (ExportTooLarge), and the recording, from
which every head is computed exactly, offered as the compact form. ``export_trace`` writes a
block at a time (engine.inspection.export_files) to a temporary beside the target, renamed
when complete (engine.runtime.files.atomic_path): ``report(("export", done, total))`` after each
block, ``stop()`` asked between blocks (RunCancelled; the temporary is removed), and the
numbers computed through ``compute`` where the caller says (the window: on its model thread,
while this thread compresses and writes).

npz layouts (every one also holds ``what``, ``source_tokens``, ``target_tokens``, ``notes``,
``model_name``, ``family``):
- "trace" and "kind": ``attn_<kind with _ for spaces>`` (L, H, Tq, Tk) float32 per kind and
  ``kinds``; ``load_npz`` reads it back into a DenseTrace.
- "head": ``weights`` (Tq, Tk), ``kind``, ``layer``, ``head``, ``query_tokens``, ``key_tokens``.
- "pooled": per kind ``pooled_<kind>`` (L, H, rows, cols), ``sink_<kind>`` (L, H, rows) the
  first key's weight alone, ``query_bins_<kind>`` (rows, 2) and ``key_bins_<kind>`` (cols, 2)
  the [start, stop) tokens of each pixel, ``how_<kind>`` ("max", or "exact" when nothing was
  pooled); ``kinds``.
CSV: the long format, one line per number: kind, layer, head, query_index, query_token,
key_index, key_token, weight; pooled: kind, layer, head, how, first_query, last_query,
first_key, last_key (inclusive), weight.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Callable

import numpy as np

from attnscope.engine.errors import OneLine
from attnscope.engine.inspection.export_files import NpzWriter, compressed_bytes, csv_field, csv_header, csv_lines
from attnscope.engine.runtime.files import atomic_path, open_npz
from attnscope.engine.runtime.free_memory import gib
from attnscope.engine.traces.base import AttentionTrace, RunCancelled, sizes_apart
from attnscope.engine.traces.dense import DenseTrace
from attnscope.engine.traces import reading
from attnscope.engine.inputs import check_kind, check_path

WHATS = ("head", "kind", "trace", "pooled")
FORMATS = ("npz", "csv")
EXPORT_LIMIT_BYTES = 2 * 2**30     # an export whose array (float32) or file passes this is refused
POOLED_PIXELS = 256                # the pooled overview: each head at most this many pixels a side
BLOCK_BYTES = 32 * 2**20           # rows of one head written at once, at most (what a stop waits for)
CSV_BLOCK_BYTES = 2**20            # ... as CSV lines at once: their text is ~10x the float32, their list ~25x
SAMPLE_CELLS = 2**18               # weights the time estimate computes and writes
CSV_HEADER = ["kind", "layer", "head", "query_index", "query_token", "key_index", "key_token", "weight"]
POOLED_HEADER = ["kind", "layer", "head", "how", "first_query", "last_query", "first_key", "last_key", "weight"]
WEIGHT_CHARS = 10                  # a weight in a CSV line, about ("0.00123457"; "0" where masked)
POOLED_CSV_SECONDS = 0.5e-6        # a pooled pixel's CSV line (measured: 0.46 us a line on 2 cores)


class ExportError(OneLine, ValueError):
    """An export that cannot be made as asked, said in one sentence."""


class ExportTooLarge(ExportError):
    """An export past EXPORT_LIMIT_BYTES, refused with the numbers before anything is written."""


@dataclass(frozen=True)
class ExportAsk:
    """What to export: ``what`` one of WHATS; ``kind`` (None: every kind for "trace" and
    "pooled", the last kind for "head" and "kind"); ``layer`` and ``head`` for "head"."""
    what: str = "trace"
    kind: str | None = None
    layer: int = 0
    head: int = 0

    def resolved(self, trace: AttentionTrace) -> "ExportAsk":
        """This ask with its kind filled in, checked against ``trace`` (ExportError if it cannot be)."""
        if self.what not in WHATS:
            raise ExportError(f"An export is one of {', '.join(WHATS)}, not {self.what!r}.")
        kind = self.kind
        if kind is None and self.what in ("head", "kind"):
            kind = trace.kinds[-1]
        if kind is not None and kind not in trace.kinds:
            raise ExportError(f"This trace has no {kind!r} attention; it has {', '.join(trace.kinds)}.")
        if self.what == "head":
            layers, heads = trace.shape(kind)[:2]
            if not (0 <= self.layer < layers and 0 <= self.head < heads):
                raise ExportError(f"The layer must be below {layers} and the head below {heads} for this trace's "
                                  f"{kind} attention (got layer {self.layer}, head {self.head}).")
        return replace(self, kind=kind)

    def kinds(self, trace: AttentionTrace) -> list[str]:
        return trace.kinds if self.kind is None else [self.kind]

    def words(self, trace: AttentionTrace) -> str:
        """The ask as a sentence says it ("head 2 of layer 0 of decoder self attention")."""
        if self.what == "head":
            return f"head {self.head} of layer {self.layer} of {self.kind} attention"
        if self.what == "pooled":
            return f"the heads overview of {self._of(trace)}, pooled by max to {POOLED_PIXELS} pixels a side"
        return f"every head of {self._of(trace)}"

    def _of(self, trace: AttentionTrace) -> str:
        kinds = self.kinds(trace)
        return f"{kinds[0]} attention" if len(kinds) == 1 else f"every kind ({', '.join(kinds)})"

    def shape_words(self, trace: AttentionTrace) -> str:
        """How many numbers, as a product ("4 layers x 8 heads x 4,071 x 4,071 tokens")."""
        parts = []
        for kind in self.kinds(trace):
            L, H, tq, tk = trace.shape(kind)
            if self.what == "head":
                parts.append(f"{tq:,} x {tk:,} tokens")
            elif self.what == "pooled":
                rows, cols = _pixels(tq), _pixels(tk)
                parts.append(f"{L} layers x {H} heads x {rows:,} x {cols:,} pixels")
            else:
                parts.append(f"{L} layers x {H} heads x {tq:,} x {tk:,} tokens")
        return " + ".join(parts)

    def file_name(self, fmt: str) -> str:
        """A name for the file ("head-cross-L0-H2.npz", "overview.csv", "trace.npz")."""
        stem = {"head": f"head-{(self.kind or '').replace(' ', '_')}-L{self.layer}-H{self.head}",
                "pooled": "overview"}.get(self.what, "trace")
        return f"{stem}.{fmt}"


@dataclass(frozen=True)
class ExportEstimate:
    """What an export will write and take, known before it starts."""
    ask: ExportAsk             # resolved (its kind filled in)
    what: str                  # the ask in words
    shape: str                 # its numbers as a product
    fmt: str                   # "npz" or "csv"
    cells: int                 # numbers written
    raw_bytes: int             # those numbers as float32 (what a reader of the npz holds)
    file_bytes: int            # the file, about (measured on a sample when ``seconds`` is known)
    seconds: float | None      # about; None when not measured

    @property
    def need(self) -> int:
        """What the limit is held against: the array or the file, whichever is larger."""
        return max(self.raw_bytes, self.file_bytes)

    def describe(self) -> str:
        """'4 layers x 8 heads x 4,071 x 4,071 tokens = 2.0 GiB as float32: an NPZ file of about
        868.9 MiB, about 60 s'."""
        from attnscope.engine.traces.estimate import duration   # torch: export.py imports none until an estimate is said

        took = ("" if self.seconds is None else ", a moment" if self.seconds < 0.05
                else f", about {duration(self.seconds)}")
        file = ("under 0.1 MiB" if self.file_bytes < 0.1 * 2**20 else f"of about {gib(self.file_bytes)}")
        return (f"{self.shape} = {_size(self.raw_bytes)} as float32: {'an NPZ' if self.fmt == 'npz' else 'a CSV'} "
                f"file {file}{took}")


def _size(n: int) -> str:
    """``gib``, and a small file as one ("under 0.1 MiB", not "0.0 MiB")."""
    return gib(n) if n >= 0.1 * 2**20 else "under 0.1 MiB"


def format_of(path: str | Path) -> str:
    """"csv" for a .csv name, else "npz"."""
    return "csv" if Path(path).suffix.lower() == ".csv" else "npz"


def target_path(path: str | Path, fmt: str) -> Path:
    """The name written: ``.npz`` appended to an npz name that lacks it, as NumPy does."""
    path = Path(path)
    return path.with_name(path.name + ".npz") if fmt == "npz" and path.suffix != ".npz" else path


def estimate_export(trace: AttentionTrace, ask: ExportAsk, fmt: str, measure: bool = True,
                    samples: dict | None = None) -> ExportEstimate:
    """The sizes of ``ask`` written as ``fmt``; with ``measure``, the time and the file's size
    measured on a sample block of each kind (the same computation and writing as the export, on
    the trace's device). ``samples``: a dict the caller keeps to measure each kind once across
    several estimates (the window's dialog estimates every choice)."""
    if fmt not in FORMATS:
        raise ExportError(f"An export is written as {' or '.join(FORMATS)}, not {fmt!r}.")
    ask = ask.resolved(trace)
    samples = {} if samples is None else samples
    cells = raw = file = 0
    seconds = 0.0 if measure else None
    for kind in ask.kinds(trace):
        L, H, tq, tk = trace.shape(kind)
        if ask.what == "pooled":
            n = L * H * _pixels(tq) * _pixels(tk)
            cells, raw = cells + n, raw + 4 * (n + L * H * _pixels(tq))
            file += 4 * n if fmt == "npz" else n * (len(kind) + 30 + WEIGHT_CHARS)
            if measure:
                from attnscope.engine.traces.estimate import estimate_drawing   # torch, to time a sample: imported when asked

                seconds += estimate_drawing(trace, kind, L * H).seconds + (
                    n * POOLED_CSV_SECONDS if fmt == "csv" else 0.0)
            continue
        n = tq * tk * (1 if ask.what == "head" else L * H)
        cells, raw = cells + n, raw + 4 * n
        if measure:
            layer, head = (ask.layer, ask.head) if ask.what == "head" else (L // 2, 0)
            per_second, per_byte = _sample(trace, kind, fmt, layer, head, samples)
            seconds += n * per_second
            file += int(n * per_byte)
        else:
            file += 4 * n if fmt == "npz" else int(n * _csv_bytes_per_line(trace, kind))
    return ExportEstimate(ask, ask.words(trace), ask.shape_words(trace), fmt, cells, raw, file, seconds)


def refusal(trace: AttentionTrace, estimate: ExportEstimate, limit: int | None = None) -> str | None:
    """The sentence refusing ``estimate`` past ``limit`` (default EXPORT_LIMIT_BYTES), or None."""
    check_kind(trace, AttentionTrace, "trace", "an AttentionTrace (a Run's trace or a recording)")
    check_kind(estimate, ExportEstimate, "estimate", "an ExportEstimate (estimate_export)")
    limit = EXPORT_LIMIT_BYTES if limit is None else limit
    if estimate.need <= limit:
        return None
    need_s, limit_s = sizes_apart(estimate.need, limit)
    as_file = "" if estimate.file_bytes <= estimate.raw_bytes else f", about {need_s} as a CSV file"
    raw_s = gib(estimate.raw_bytes) if as_file else need_s
    instead = {"head": "the pooled overview" + (" (or this head as NPZ)" if as_file else ""),
               "pooled": None}.get(estimate.ask.what, "one head or the pooled overview")
    return (f"{estimate.what[0].upper()}{estimate.what[1:]} is {estimate.shape} = {raw_s} as float32{as_file}, "
            f"more than the {limit_s} an export may write; nothing was written. "
            + (f"Export {instead} instead, or keep " if instead else "Keep ") + f"{recording_words(trace)}.")


def export_trace(trace: AttentionTrace, path: str | Path, ask: ExportAsk = ExportAsk(), fmt: str | None = None,
                 report: Callable | None = None, stop: Callable[[], bool] | None = None,
                 limit: int | None = None, compute: Callable | None = None) -> Path:
    """Write ``ask`` of ``trace`` to ``path`` as ``fmt`` (default: from its suffix); return the
    path written. ExportTooLarge past ``limit`` (default EXPORT_LIMIT_BYTES), before anything is
    written; RunCancelled once ``stop()`` says so, the temporary removed. ``compute(fn, *args)``
    runs each computation of the trace's numbers (default: in this thread)."""
    check_kind(trace, AttentionTrace, "trace", "an AttentionTrace (a Run's trace or a recording)")
    check_path(path, "file to export to")
    fmt = fmt or format_of(path)
    ask = ask.resolved(trace)
    problem = refusal(trace, estimate_export(trace, ask, fmt, measure=False), limit)
    if problem:
        raise ExportTooLarge(problem)
    path = target_path(path, fmt)
    progress = _Progress(report, stop, compute)
    with atomic_path(path) as tmp:
        progress.check()
        if ask.what == "pooled":
            _write_pooled(trace, ask, tmp, fmt, progress)
        elif fmt == "npz":
            _write_npz(trace, ask, tmp, progress)
        else:
            _write_csv(trace, ask, tmp, progress)
        progress.check()
    return path


def save_npz(trace: AttentionTrace, path: str | Path) -> Path:
    """Every head of every kind as ``path`` (``.npz`` appended when it lacks it)."""
    return export_trace(trace, path, ExportAsk("trace"), "npz")


def save_csv(trace: AttentionTrace, path: str | Path) -> Path:
    """Every head of every kind as a CSV table."""
    return export_trace(trace, path, ExportAsk("trace"), "csv")


def load_npz(path: str | Path) -> DenseTrace:
    """A trace written by ``save_npz`` (every head, of every kind or one); ValueError with a
    message for any other or broken file."""
    check_path(path, "exported .npz file")

    with open_npz(path, "trace export") as f:
        what = str(f["what"]) if "what" in f.files else "trace"
        if what not in ("trace", "kind"):
            raise ValueError(f"{Path(path).name} holds {'one head' if what == 'head' else 'a pooled overview'}, "
                             "not every head of a trace; read it with numpy.load.")
        kinds = [str(k) for k in f["kinds"]]
        return DenseTrace(str(f["model_name"]), str(f["family"]), {k: _attention(f[_key(k)]) for k in kinds},
                          [str(t) for t in f["source_tokens"]], [str(t) for t in f["target_tokens"]],
                          [str(n) for n in f["notes"]])


# ---- writing ------------------------------------------------------------------------------
class _Progress:
    """Counts what is done; asks ``stop`` and tells ``report`` between blocks; ``compute(fn,
    *args)`` is where the trace's numbers are computed."""

    def __init__(self, report, stop, compute=None):
        self.report, self.stop, self.total, self.done = report, stop, 0, 0
        self.compute = compute or (lambda fn, *args, **kwargs: fn(*args, **kwargs))

    def check(self) -> None:
        if self.stop is not None and self.stop():
            raise RunCancelled("The export was stopped; nothing was written.")

    def step(self, n: int) -> None:
        self.done += n
        if self.report is not None:
            self.report(("export", self.done, self.total))
        self.check()


def _key(kind: str, prefix: str = "attn") -> str:
    return f"{prefix}_{kind.replace(' ', '_')}"


def _attention(a: np.ndarray) -> np.ndarray:
    if a.ndim != 4 or a.dtype.kind != "f":
        raise ValueError(f"an attention array has shape {a.shape} and type {a.dtype}; expected (L, H, Tq, Tk) floats")
    return a


def _common(trace: AttentionTrace, what: str) -> dict:
    return dict(what=np.array(what), source_tokens=np.array(trace.source_tokens, dtype=str),
                target_tokens=np.array(trace.target_tokens, dtype=str), notes=np.array(trace.notes, dtype=str),
                model_name=np.array(trace.model_name), family=np.array(trace.family))


def _heads(trace: AttentionTrace, ask: ExportAsk) -> list[tuple[str, int, int]]:
    """(kind, layer, head) of every head asked, in the order the arrays hold them."""
    if ask.what == "head":
        assert ask.kind is not None             # ExportAsk.resolved filled it in
        return [(ask.kind, ask.layer, ask.head)]
    return [(kind, layer, head) for kind in ask.kinds(trace)
            for layer in range(trace.shape(kind)[0]) for head in range(trace.shape(kind)[1])]


def _head_blocks(trace: AttentionTrace, kind: str, layer: int, head: int, progress: _Progress,
                 piece: int = BLOCK_BYTES):
    """(first row, (r, Tk) float32 exact weights) of one head, ``piece`` bytes of rows at a time
    (at most), computed in blocks of up to BLOCK_BYTES (and what one block may hold on the
    trace's device); the progress told and a stop asked after each piece."""
    tq, tk = trace.shape(kind)[2:]
    step = max(1, min(progress.compute(_rows_per_block, trace, tk), BLOCK_BYTES // (4 * max(1, tk))))
    n = max(1, min(step, piece // (4 * max(1, tk))))
    for r0 in range(0, tq, step):
        block = progress.compute(reading.tile, trace, kind, layer, head, slice(r0, min(tq, r0 + step)), slice(0, tk))
        for p0 in range(0, len(block), n):
            yield r0 + p0, block[p0:p0 + n]
            progress.step(block[p0:p0 + n].size)


def _rows_per_block(trace: AttentionTrace, keys: int) -> int:
    from attnscope.engine.runtime.blocks import rows_per_block   # torch, for the trace's device: imported when writing

    return rows_per_block(trace.device, keys, "view")


def _write_npz(trace: AttentionTrace, ask: ExportAsk, tmp: Path, progress: _Progress) -> None:
    heads = _heads(trace, ask)
    progress.total = sum(int(np.prod(trace.shape(k)[2:])) for k, _, _ in heads)
    with NpzWriter(tmp) as z:
        for name, value in _common(trace, "head" if ask.what == "head" else "trace").items():
            z.small(name, value)
        if ask.what == "head":
            kind = ask.kind
            for name, value in dict(kind=np.array(kind), layer=np.array(ask.layer), head=np.array(ask.head),
                                    query_tokens=np.array(reading.query_tokens(trace, kind), dtype=str),
                                    key_tokens=np.array(reading.key_tokens(trace, kind), dtype=str)).items():
                z.small(name, value)
            with z.array("weights", trace.shape(kind)[2:]) as write:
                for _r0, block in _head_blocks(trace, kind, ask.layer, ask.head, progress):
                    write(block)
            return
        z.small("kinds", np.array(ask.kinds(trace)))
        for kind in ask.kinds(trace):
            with z.array(_key(kind), trace.shape(kind)) as write:
                for k, layer, head in heads:
                    if k == kind:
                        for _r0, block in _head_blocks(trace, kind, layer, head, progress):
                            write(block)


def _write_csv(trace: AttentionTrace, ask: ExportAsk, tmp: Path, progress: _Progress) -> None:
    heads = _heads(trace, ask)
    progress.total = sum(int(np.prod(trace.shape(k)[2:])) for k, _, _ in heads)
    with tmp.open("w", newline="", encoding="utf-8") as f:
        f.write(csv_header(CSV_HEADER))
        fields = {}
        for kind, layer, head in heads:
            if kind not in fields:
                fields[kind] = ([f"{q},{csv_field(t)}," for q, t in enumerate(reading.query_tokens(trace, kind))],
                                [f"{k},{csv_field(t)}," for k, t in enumerate(reading.key_tokens(trace, kind))])
            queries, keys = fields[kind]
            lead = f"{csv_field(kind)},{layer},{head},"
            for r0, block in _head_blocks(trace, kind, layer, head, progress, CSV_BLOCK_BYTES):
                f.write(csv_lines([lead + q for q in queries[r0:r0 + len(block)]], keys, block))


def _write_pooled(trace: AttentionTrace, ask: ExportAsk, tmp: Path, fmt: str, progress: _Progress) -> None:
    """The overview's pooled images: every head of each kind by max, POOLED_PIXELS a side."""
    kinds = ask.kinds(trace)
    progress.total = sum(trace.shape(k)[0] for k in kinds)
    pooled = {}
    for kind in kinds:
        start = progress.done
        told = None if progress.report is None else (
            lambda record, start=start: progress.report(("export", start + record[1], progress.total)))
        pooled[kind] = progress.compute(reading.thumbnails, trace, kind, POOLED_PIXELS, "max", report=told,
                                        stop=progress.stop)
        progress.step(trace.shape(kind)[0])
    if fmt == "npz":
        arrays = dict(_common(trace, "pooled"), kinds=np.array(kinds))
        for kind, thumbs in pooled.items():
            arrays.update({_key(kind, "pooled"): thumbs.pooled, _key(kind, "sink"): thumbs.sink,
                           _key(kind, "query_bins"): _bins(thumbs.t_query, thumbs.pooled.shape[2]),
                           _key(kind, "key_bins"): _bins(thumbs.t_key, thumbs.pooled.shape[3]),
                           _key(kind, "how"): np.array("exact" if thumbs.exact else thumbs.how)})
        with NpzWriter(tmp) as z:
            for name, value in arrays.items():
                z.small(name, value)
        return
    with tmp.open("w", newline="", encoding="utf-8") as f:
        f.write(csv_header(POOLED_HEADER))
        for kind, thumbs in pooled.items():
            L, H, rows, cols = thumbs.pooled.shape
            q_bins, k_bins = _bins(thumbs.t_query, rows), _bins(thumbs.t_key, cols)
            how = "exact" if thumbs.exact else thumbs.how
            pixel_rows = [f"{a},{b - 1}," for a, b in q_bins]
            pixel_cols = [f"{a},{b - 1}," for a, b in k_bins]
            for layer in range(L):
                for head in range(H):
                    lead = f"{csv_field(kind)},{layer},{head},{how},"
                    f.write(csv_lines([lead + r for r in pixel_rows], pixel_cols, thumbs.pooled[layer, head]))


def _pixels(tokens: int) -> int:
    """Pixels a side of ``tokens`` pooled to POOLED_PIXELS, as ``thumbnails`` pools them."""
    from attnscope.engine.traces.pooling import bins   # torch, as the pooling itself: imported when asked

    return bins(tokens, POOLED_PIXELS)


def _bins(tokens: int, n: int) -> np.ndarray:
    """(n, 2) the [start, stop) tokens of each of the ``n`` pixels ``thumbnails`` pooled ``tokens`` to."""
    from attnscope.engine.traces.pooling import block   # torch, as the pooling itself: imported when asked

    starts = np.arange(n, dtype=np.int64) * block(tokens, POOLED_PIXELS)
    return np.stack([starts, np.minimum(starts + block(tokens, POOLED_PIXELS), tokens)], axis=1)


# ---- estimating ---------------------------------------------------------------------------
def _sample(trace: AttentionTrace, kind: str, fmt: str, layer: int, head: int, samples: dict) -> tuple[float, float]:
    """(seconds, file bytes) per weight of ``kind`` exported as ``fmt``, measured as the export
    works: one block of rows from the middle of a head (a causal map's average share of masked
    zeros) computed as the export computes it (a block's cost is mostly fixed at a few rows:
    64 rows of 4,071 keys took 0.36 us a weight, 1,024 rows 0.04), and SAMPLE_CELLS of it
    compressed or written as CSV lines. ``samples`` keeps the computed part per head."""
    key = (kind, layer, head)
    if key not in samples:
        tq, tk = trace.shape(kind)[2:]
        rows = max(1, min(tq, _rows_per_block(trace, tk), BLOCK_BYTES // (4 * max(1, tk))))
        r0 = (tq - rows) // 2
        timings = []
        for _ in range(2):                 # the better of two: the first pays for warming up
            started = time.perf_counter()
            block = reading.tile(trace, kind, layer, head, slice(r0, r0 + rows), slice(0, tk))
            timings.append(time.perf_counter() - started)
        n = max(1, min(rows, SAMPLE_CELLS // max(1, tk)))
        p0 = (rows - n) // 2
        samples[key] = (min(timings) / max(1, block.size), r0 + p0, block[p0:p0 + n].copy())
    computed, q0, piece = samples[key]
    started = time.perf_counter()
    if fmt == "npz":
        nbytes = compressed_bytes(piece)
    else:
        lead = f"{csv_field(kind)},{layer},{head},"
        queries = [f"{lead}{q0 + i},{csv_field(t)}," for i, t in enumerate(reading.query_tokens(trace, kind)[q0:q0 + len(piece)])]
        keys = [f"{k},{csv_field(t)}," for k, t in enumerate(reading.key_tokens(trace, kind))]
        nbytes = len(csv_lines(queries, keys, piece).encode("utf-8"))
    return computed + (time.perf_counter() - started) / max(1, piece.size), nbytes / max(1, piece.size)


def _csv_bytes_per_line(trace: AttentionTrace, kind: str) -> float:
    """A CSV line's bytes, about, from the tokens' own lengths (unmeasured: the weight ~WEIGHT_CHARS)."""
    def mean_chars(tokens: list[str]) -> float:
        return sum(len(csv_field(t).encode("utf-8")) + len(str(i)) + 2 for i, t in enumerate(tokens)) / max(1, len(tokens))
    return len(kind) + 6 + mean_chars(reading.query_tokens(trace, kind)) + mean_chars(reading.key_tokens(trace, kind)) + WEIGHT_CHARS + 2


def recording_words(trace: AttentionTrace) -> str:
    """The recording offered as the compact form, with its size where this trace has one."""
    check_kind(trace, AttentionTrace, "trace", "an AttentionTrace (a Run's trace or a recording)")
    where = "(File > Save Recording, or attnscope record)"
    if trace.recording is None:
        return (f"a Run's recording {where}: queries, keys and each row's log-sum-exp, from which attnscope "
                "computes every head exactly")
    nbytes = sum(getattr(call, part)[:1].nbytes for calls in trace.calls.values() for call in calls
                 for part in ("q", "k", "lse") if getattr(call, part) is not None)
    return (f"the Run's recording {where}: {gib(nbytes)} of queries, keys and each row's log-sum-exp, "
            "from which attnscope computes every head exactly")
