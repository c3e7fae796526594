"""Experiments are interventions over two runs: which parts of a model carry a behaviour.

A prompt pair (pairs.py) is a clean text and a corrupted one of the same length, and two
answers; the metric is the logit difference of the answers at the last position (or the
answer's log-probability). Activation patching (patching.py) runs one prompt with one of
the other run's activations put back at a point the adapter names (points.py: each head's
output at the seam, the residual stream before a block, a layer's attention and MLP output)
and measures how much behaviour returns; attribution patching (attribution.py) estimates
every cell from one backward; direct logit attribution (dla.py) splits the clean run's
logit difference into each head's and MLP's share; score_split.py splits one attention score into
(query source x key source) terms over the same points. One cache of activations, one hook
mechanism (the seam and module hooks), shared with ablation and knockout. Public: the names
(names.py, no torch) and the entry points gui/ and cli/ use, listed in ``__all__``.
"""
from attnscope.engine.experiments.names import (DLA, HEAD_KIND, LOGIT_DIFF, LOGPROB, METHODS, METRICS, POINTS,
                                      SEQ2SEQ_POINTS)
from typing import TYPE_CHECKING

from attnscope.engine.runtime.public import lazy

if TYPE_CHECKING:     # what tools see; at run time __getattr__ imports each name's module on first use
    from attnscope.engine.experiments.attribution import agreement
    from attnscope.engine.experiments.pairs import PromptPair, frame_pair, next_tokens, read_pairs
    from attnscope.engine.experiments.run import experiment, over_pairs
    from attnscope.engine.experiments.score_split import RUNNER_UP, WHY_SPLIT, why, why_steps
    from attnscope.engine.experiments.why_result import ScoreSplit

_PUBLIC = {
    "agreement": "attribution",
    "PromptPair": "pairs",
    "frame_pair": "pairs",
    "next_tokens": "pairs",
    "read_pairs": "pairs",
    "experiment": "run",
    "over_pairs": "run",
    "RUNNER_UP": "score_split",
    "WHY_SPLIT": "score_split",
    "why": "score_split",
    "why_steps": "score_split",
    "ScoreSplit": "why_result",
}
__getattr__ = lazy(__name__, _PUBLIC)
__all__ = ["DLA", "HEAD_KIND", "LOGIT_DIFF", "LOGPROB", "METHODS", "METRICS", "POINTS", "PromptPair", "SEQ2SEQ_POINTS",
           "RUNNER_UP", "ScoreSplit", "WHY_SPLIT", "agreement", "experiment", "frame_pair", "next_tokens", "over_pairs",
           "read_pairs", "why", "why_steps"]
