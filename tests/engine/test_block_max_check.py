"""The GPU overview kernel's self-check reads several key tiles a pixel, and a refusal is said
(issue 46: the check used 33 keys a pixel, under the kernel's 64-key tile, so a kernel that read
only each pixel's first tile passed it; and a kernel that failed its check fell back silently)."""
from __future__ import annotations

import torch

from attnscope.engine.seam.call import AttentionCall
from attnscope.engine.traces import block_max
from attnscope.engine.traces.recorded import RecordedTrace
from attnscope.engine.traces import reading


def test_the_check_spans_several_key_tiles_a_pixel(monkeypatch):
    seen = {}

    def fake(call, b, tq, tk, kb):
        seen.update(kb=kb, tq=tq, tk=tk)
        raise RuntimeError("no kernel here")
    monkeypatch.setattr(block_max, "block_maxima", fake)
    block_max._agrees.cache_clear()
    try:
        assert block_max._agrees(torch.device("cpu"), torch.float32, 64) is False
    finally:
        block_max._agrees.cache_clear()
    assert seen["kb"] > 2 * 64 and seen["tk"] % seen["kb"] and seen["tq"] > 4 * 64   # 3+ tiles, ragged, many rows


def test_a_kernel_that_fails_its_check_is_said_in_the_notes(monkeypatch):
    g = torch.Generator().manual_seed(0)
    q, k = torch.randn(1, 2, 40, 16, generator=g), torch.randn(1, 2, 40, 16, generator=g)
    plain = AttentionCall(None, q, k, None, scale=0.25, causal=True)
    lse = torch.logsumexp(plain.scores(0), -1)[None]                   # (1, H, T): as the kernel hands it over
    call = AttentionCall(None, q, k, None, scale=0.25, causal=True, lse=lse)
    trace = RecordedTrace({"decoder self": [call]}, model_name="m", family="llama", source_tokens=[],
                          target_tokens=[f"t{i}" for i in range(40)])
    monkeypatch.setattr(block_max, "refused", lambda c: "The GPU kernel ... the slower exact way.")
    pooled = reading.thumbnails(trace, "decoder self", 8)
    assert "The GPU kernel ... the slower exact way." in trace.notes
    monkeypatch.setattr(block_max, "refused", lambda c: None)
    again = RecordedTrace({"decoder self": [call]}, model_name="m", family="llama", source_tokens=[],
                          target_tokens=[f"t{i}" for i in range(40)])
    assert (reading.thumbnails(again, "decoder self", 8).pooled == pooled.pooled).all() and again.notes == []
