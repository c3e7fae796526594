"""The atlas's fast path (engine/atlas/fast.py) against its row-block pass: every array of the
atlas equal, on a Llama with grouped key/value heads, GPT-2 (its triangle as a mask) and
gpt-oss with learned sinks, over documents long enough that a frequent token's copies are read
as one product and a rare one's pairs gathered."""
from __future__ import annotations

import numpy as np
import pytest

from attnscope.engine.atlas import build, fast
from attnscope.engine.atlas.build import build_atlas
from attnscope.engine.loading.catalog import open_model
from tests.helpers.hf_sinks import sink_folder
from tests.helpers.hf_tiny import tiny_folder

TEXT = ("the cat sat on the mat and the cat ran to the mat\n"
        "a dog saw the cat and the dog sat on the mat again\n"
        "then the cat and the dog ran and ran to the red mat\n"
        "zebra quartz jumped over violet fjords while a lynx slept\n") * 4
LENGTH, DOCS, TOP = 64, 2, 5


@pytest.mark.parametrize("arch", ["llama", "gpt2", "gpt_oss"])
def test_the_fast_path_equals_the_block_pass(arch, tmp_path, monkeypatch):
    corpus = tmp_path / "corpus.txt"
    corpus.write_text(TEXT, encoding="utf-8")
    folder = sink_folder(tmp_path, arch) if arch == "gpt_oss" else tiny_folder(tmp_path, arch)
    loaded = open_model(str(folder), "cpu")
    monkeypatch.setattr(fast, "FREQUENT", 4)      # "the", "cat", "mat": products; the rest: gathered pairs
    used = []
    real = fast.layer_values
    monkeypatch.setattr(fast, "layer_values", lambda *a, **k: used.append(1) or real(*a, **k))
    quick = build_atlas(loaded, tmp_path / "fast.safetensors", corpus=corpus, length=LENGTH, docs=DOCS, top=TOP)
    assert used, "the fast path was not taken"
    monkeypatch.setattr(build, "_FAST", [False])
    slow = build_atlas(loaded, tmp_path / "slow.safetensors", corpus=corpus, length=LENGTH, docs=DOCS, top=TOP)
    every = quick.meta["layers"] * DOCS
    assert len(used) == (every // 2 if arch == "gpt_oss" else every)     # gpt-oss's sliding windows: blocks
    for name, want in slow.arrays.items():
        got = quick.arrays[name]
        if name.endswith(".keys"):        # keys of equal weights (to float32 rounding) may come in any order
            w = slow.arrays[name.replace(".keys", ".weights")]                   # (..., k) in decreasing order
            gap = np.abs(np.diff(w, axis=-1)) > 1e-5
            alone = (w > 1e-6) & np.pad(gap, [(0, 0)] * (w.ndim - 1) + [(1, 0)], constant_values=True) \
                & np.pad(gap, [(0, 0)] * (w.ndim - 1) + [(0, 1)], constant_values=True)
            np.testing.assert_array_equal(got[alone], want[alone], err_msg=name)
        elif name.endswith(".hist"):      # a value on a bin's edge may fall either side of it
            np.testing.assert_allclose(got, want, atol=2, err_msg=name)
        else:
            np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5, err_msg=name)
