"""What decoding is asked for and what it hands back: plain records, no torch.

engine.decoding.session makes them; the window's Decoding panel builds its settings and draws the
steps from here, so it imports neither torch nor the decoder until a step is asked for.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from attnscope.engine.inputs import InputError, check_count

STRATEGIES = ("greedy", "beam", "sample")


@dataclass
class DecodeSettings:
    strategy: str = "greedy"       # greedy | beam | sample
    max_new_tokens: int = 40
    beam_width: int = 4
    length_penalty: float = 1.0    # beam score = sum log p / length ** length_penalty
    temperature: float = 1.0
    top_k: int = 0                 # 0: no top-k cut
    top_p: float = 1.0             # 1.0: no nucleus cut
    seed: int = 0
    n_candidates: int = 8          # candidates reported per step

    def __post_init__(self) -> None:
        """InputError in one sentence for settings no decoding has ('bogus' was a plain ValueError
        at the first step; a NaN temperature sampled nothing)."""
        if self.strategy not in STRATEGIES:
            raise InputError(f"The decoding strategy is one of {', '.join(STRATEGIES)}, not {self.strategy!r:.40}.")
        for name, least in (("max_new_tokens", 0), ("beam_width", 1), ("top_k", 0), ("seed", 0),
                            ("n_candidates", 1)):
            check_count(getattr(self, name), name, least)
        for name in ("length_penalty", "temperature", "top_p"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or \
                    (name != "length_penalty" and value < 0):
                raise InputError(f"The decoding setting {name} is a finite number{'' if name == 'length_penalty' else ' from 0'}, "
                                 f"not {value!r:.40}.")


@dataclass
class Hypothesis:
    ids: list[int]
    tokens: list[str]
    score: float                   # normalised log-probability (see length_penalty)
    parent: int                    # index of the hypothesis it grew from at the previous step
    finished: bool = False         # ended with EOS
    pruned: bool = False           # fell out of the beam at this step


@dataclass
class StepDiff:
    """One step's next-token distribution without and with the interventions, on the same prefix."""
    rows: list[tuple[str, float, float]]     # (token, p before, p after): the top tokens of either
    kl: float                                # KL(before || after), nats


@dataclass
class DecodeStep:
    step: int
    token_id: int
    token: str
    probability: float
    candidates: list[tuple[str, float]]      # the top candidates, most likely first
    self_rows: np.ndarray                    # (L, H, T_so_far): decoder self-attention of the query
    cross_rows: np.ndarray | None            # (L, H, S): cross-attention (translator only)
    output_tokens: list[str]                 # the best hypothesis so far
    output_ids: list[int]
    beams: list[Hypothesis] = field(default_factory=list)
    finished: bool = False                   # no more steps will come
    diff: StepDiff | None = None             # with interventions: this step before/after


@dataclass
class DecodeResult:
    source_tokens: list[str]
    prompt_tokens: list[str]
    output_tokens: list[str]
    text: str
    steps: list[DecodeStep]
    notes: list[str] = field(default_factory=list)   # what the user should know (a text cut short)
