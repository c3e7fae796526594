"""Change the model and watch what happens: interventions as seam hooks.

``Interventions`` (spec.py) is a plain record of what the user switched off: heads
zero- or mean-ablated (ablation.py), attention edges knocked out (knockout.py). The GUI's
AppState holds one; ``applied(spec)`` turns it into fresh seam hooks for one forward or
one decoding session. Read-outs that need no edit live beside them: the logit lens
(lens.py), value-weighted attention (value_weighted.py) and the before/after comparison of
the next-token distribution (effect.py).
"""
from engine.interventions.spec import Edge, HeadRef, Interventions, applied

__all__ = ["Edge", "HeadRef", "Interventions", "applied"]
