"""Change the model and watch what happens: interventions as seam hooks.

``Interventions`` (spec.py) is a plain record of what the user switched off: heads
zero- or mean-ablated (ablation.py), attention edges knocked out (knockout.py). The GUI's
AppState holds one; ``applied(spec)`` turns it into fresh seam hooks for one forward or
one decoding session. Read-outs that need no edit live beside them: the logit lens
(lens.py) and the before/after comparison of the next-token distribution (effect.py);
value-weighted attention is a trace (engine.traces.value_weighted). Public: the record and its
names (no torch), ``logit_lens``, ``adapter_tokens`` and ``intervention_effect``, listed in
``__all__``.
"""
from attnscope.engine.interventions.refs import MEAN, ZERO
from attnscope.engine.interventions.spec import Edge, HeadRef, Interventions, applied
from typing import TYPE_CHECKING

from attnscope.engine.runtime.public import lazy

if TYPE_CHECKING:     # what tools see; at run time __getattr__ imports each name's module on first use
    from attnscope.engine.interventions.effect import intervention_effect
    from attnscope.engine.interventions.lens import adapter_tokens, logit_lens

_PUBLIC = {
    "intervention_effect": "effect",
    "adapter_tokens": "lens",
    "logit_lens": "lens",
}
__getattr__ = lazy(__name__, _PUBLIC)
__all__ = ["MEAN", "ZERO", "Edge", "HeadRef", "Interventions", "adapter_tokens", "applied",
           "intervention_effect", "logit_lens"]
