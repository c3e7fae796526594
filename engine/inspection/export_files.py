"""The two file formats a trace is exported to, each written a block of rows at a time.

npz: a zip of ``.npy`` members, as ``numpy.savez_compressed`` writes it and ``numpy.load``
reads it. A large array is streamed into its member a block at a time (its ``.npy`` header
first, then the rows in C order), so an export holds one block, never the whole array.
DEFLATE at level NPZ_LEVEL: on a 4,071-token head (63 MB, half of it a causal mask's zeros)
level 1 took 1.1 s for 26.6 MB, level 6 (numpy's) 1.6 s for 26.2 MB.

CSV: one line per number in the long format pandas, R and spreadsheets take directly, built
a block of rows at a time with the tokens quoted once (as ``csv.writer`` quotes them) and the
weights written as ``%.6g``: 0.46 us a weight where ``csv.writer`` took 1.7.
"""
from __future__ import annotations

import contextlib
import csv
import io
import zipfile
from pathlib import Path
from typing import Callable, Iterator

import numpy as np

NPZ_LEVEL = 1
LINE_END = "\r\n"     # csv.writer's own, as earlier exports wrote


class NpzWriter:
    """``with NpzWriter(path) as z``: ``z.small(name, value)`` for small arrays (tokens, names),
    ``with z.array(name, shape) as write`` for a large float32 one, written block by block."""

    def __init__(self, path: str | Path):
        self.zip = zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED, compresslevel=NPZ_LEVEL, allowZip64=True)

    def __enter__(self) -> "NpzWriter":
        return self

    def __exit__(self, *exc) -> None:
        self.zip.close()

    def small(self, name: str, value) -> None:
        with self.zip.open(f"{name}.npy", "w") as f:
            np.lib.format.write_array(f, np.asarray(value), allow_pickle=False)

    @contextlib.contextmanager
    def array(self, name: str, shape: tuple[int, ...]) -> Iterator[Callable[[np.ndarray], None]]:
        """Yield ``write(block)``: the blocks, in C order, must fill ``shape`` exactly."""
        expected = int(np.prod(shape, dtype=np.int64))
        written = 0
        with self.zip.open(f"{name}.npy", "w", force_zip64=True) as f:
            np.lib.format.write_array_header_1_0(f, {"descr": np.lib.format.dtype_to_descr(np.dtype("<f4")),
                                                     "fortran_order": False, "shape": tuple(shape)})

            def write(block: np.ndarray) -> None:
                nonlocal written
                data = np.ascontiguousarray(block, dtype="<f4")
                written += data.size
                f.write(data.data)
            yield write
            if written != expected:
                raise ValueError(f"{name}: {written:,} numbers written where {shape} holds {expected:,}")


def compressed_bytes(block: np.ndarray) -> int:
    """What ``block`` takes in an npz member, compressed as NpzWriter compresses it."""
    import zlib

    packer = zlib.compressobj(NPZ_LEVEL, zlib.DEFLATED, -15)
    data = np.ascontiguousarray(block, dtype="<f4").data
    return len(packer.compress(data)) + len(packer.flush())


def csv_field(value) -> str:
    """One field as ``csv.writer`` writes it (quoted when it holds a comma, a quote or a line break)."""
    out = io.StringIO()
    csv.writer(out, lineterminator="").writerow([value])
    return out.getvalue()


def csv_header(names: list[str]) -> str:
    return ",".join(csv_field(n) for n in names) + LINE_END


def csv_lines(prefixes: list[str], suffixes: list[str], block: np.ndarray) -> str:
    """(r, c) numbers as r x c lines: row i's ``prefixes[i]``, column j's ``suffixes[j]``, the
    number. Each prefix and suffix ends with its comma."""
    return "".join([f"{pre}{suf}{v:.6g}{LINE_END}" for pre, row in zip(prefixes, block.tolist())
                    for suf, v in zip(suffixes, row)])
