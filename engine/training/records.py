"""What a training run is asked for and what it reports: plain records, no torch.

engine.training.loops runs the loops (and re-exports these, so ``from attnscope.engine.training.loops import
TrainConfig`` works); the window's Training panel fills its boxes from a TrainConfig and
draws TrainProgress records without importing torch until a run starts.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from attnscope.engine.traces.base import AttentionTrace


# How the bundled GPT learns (see docs/models.md); `attnscope train gpt` and the Training panel
# start from it too, so a student's own run can show its induction head form (near step
# 1,250 of the bundled run): 1024 word pieces, half the windows opening with a passage
# said three times, small batches of many steps.
GPT_RECIPE = {"vocab_size": 1024, "repeat_fraction": 0.5, "batch_size": 16, "lr": 2e-3}


@dataclass
class TrainConfig:
    size: str = "small"
    steps: int = 3000
    batch_size: int = 64          # sentence pairs (translator) or windows (gpt) per step
    lr: float = 1e-3
    warmup: int = 300
    weight_decay: float = 0.01
    label_smoothing: float = 0.1  # translator only
    clip: float = 1.0
    seed: int = 0
    report_every: int = 10
    eval_every: int = 250
    probe_every: int = 0          # 0: no probe traces
    probe_text: str | None = None
    vocab_size: int = 2000        # BPE vocabulary of the GPT
    repeat_fraction: float = 0.0  # GPT only: share of windows that open with a passage of the text repeated
    model_overrides: dict = field(default_factory=dict)


@dataclass
class TrainProgress:
    step: int
    total_steps: int
    loss: float
    lr: float
    tokens_per_s: float
    elapsed_s: float
    val_loss: float | None = None
    probe: AttentionTrace | None = None
    head_scores: dict | None = None  # at evaluations and probes: engine.inspection.analysis.mechanism_scores
    done: bool = False
    stopped: bool = False         # stop() was asked before the last step: ``step`` < ``total_steps``
