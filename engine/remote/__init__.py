"""Models no machine here holds, run where they are served: ``ndif:<hub id>`` through nnsight on
NDIF (or here, under ATTNSCOPE_NDIF=local, through nnsight's local stand-in). A Run is one
nnsight trace (jobs.py) that reduces each attention call where the tensors are (server.py)
and brings back k, each row's log-sum-exp, the overview's pixels and the asked rows of q;
``trace_remote`` (run.py) hands a RemoteTrace (trace.py) that every view reads like a
recording; ``remote_lens`` (lens.py) reads the logit lens there. What will travel is
estimated first (estimate.py); a server's answer is read as data only, and the key goes only to
an https host (answers.py). Public: the names gui/ and cli/ use, listed in ``__all__``."""
from __future__ import annotations

from typing import TYPE_CHECKING

from attnscope.engine.runtime.public import lazy

if TYPE_CHECKING:     # what tools see; at run time __getattr__ imports each name's module on first use
    from attnscope.engine.remote.estimate import model_dims, travel_estimate
    from attnscope.engine.remote.jobs import remote_of, served_models
    from attnscope.engine.remote.lens import remote_lens
    from attnscope.engine.remote.run import trace_remote
    from attnscope.engine.remote.trace import RemoteTrace

_PUBLIC = {
    "model_dims": "estimate",
    "RemoteTrace": "trace",
    "remote_lens": "lens",
    "remote_of": "jobs",
    "served_models": "jobs",
    "trace_remote": "run",
    "travel_estimate": "estimate",
}
__getattr__ = lazy(__name__, _PUBLIC)
__all__ = ["RemoteTrace", "model_dims", "remote_lens", "remote_of", "served_models", "trace_remote",
           "travel_estimate"]
