"""The recorder: keeps each site's last call (queries, keys, mask and bias as used).

A Run records one forward and builds its trace from the recording; the neuron view reads
the same q and k; a decoding step reads its newest row. Memory is what the model computed
anyway (references, no copies): about layers x (q heads + kv heads) x T x head_dim x bytes.
"""
from __future__ import annotations

import contextlib

from attnscope.engine.seam.attend import SeamHook, hooks
from attnscope.engine.seam.call import AttentionCall, Site


class Recorder(SeamHook):
    """``calls[site]``: the last call seen at each site, detached (values kept if asked), with
    each query's log-sum-exp when ``lse`` is asked and the kernel gives it for free."""

    def __init__(self, keep_values: bool = False, lse: bool = False):
        self.keep_values = keep_values
        self.wants_lse = lse
        self.calls: dict[Site, AttentionCall] = {}

    def after(self, call: AttentionCall) -> None:
        """Kept once the call is computed, its log-sum-exp with it (when the kernel gave one): one
        visit to the call, not one to see it and another to add what the kernel found."""
        if call.site is not None:
            self.calls[call.site] = call.detached(self.keep_values)

    def kinds(self) -> list[str]:
        return list(dict.fromkeys(s.kind for s in self.calls))

    def layers(self, kind: str) -> list[AttentionCall]:
        """The calls of one kind, by layer."""
        found = sorted((s.layer, c) for s, c in self.calls.items() if s.kind == kind)
        return [c for _, c in found]


@contextlib.contextmanager
def recording(keep_values: bool = False, lse: bool = False):
    """``with recording() as rec: model(...)``: every attention call inside lands in ``rec``."""
    rec = Recorder(keep_values, lse)
    with hooks(rec):
        yield rec
