"""RemoteTrace: a Run on a model served elsewhere, read by every view like a recording.

It holds what one nnsight trace brought back (engine.remote.server): each layer's k, each
row's log-sum-exp, the overview's pixels at the size asked, and q (with its rows of mask and
bias) for the rows fetched, by default the last ones. Any block of weights over fetched rows
is exp(q_i k_j * scale + b_ij - lse_i), as engine.traces.RecordedTrace computes it; a block
over rows not fetched first fetches them with a new remote job (``fetch_rows``: what will
travel and the last job's time are said before it goes), then keeps them. Once every row is
fetched it is a whole recording (``recording``: saved, and read through RecordedTrace).
"""
from __future__ import annotations

import numpy as np
import torch

from engine.errors import RemoteJobError
from engine.kinds import DECODER_SELF
from engine.remote.estimate import check_travel, travel_estimate
from engine.runtime.free_memory import gib
from engine.seam.call import AttentionCall
from engine.traces.base import AttentionTrace, Thumbnails, TraceTooLarge
from engine.traces.estimate import duration
from engine.traces.recorded import LAYER_BYTES, RecordedTrace


class RemoteTrace(AttentionTrace):
    def __init__(self, session, ids: list[int], layers: list[dict], rows: tuple[int, int], *, model_name: str,
                 family: str, tokens: list[str], notes: list[str] | None = None, say=None, interventions=None):
        """``layers``: the first job's per-layer dicts (engine.remote.server.reduce_call), with q
        for queries ``rows``; ``tokens`` label both axes (a decoder's). ``say(text)`` hears what
        a later job will bring back before it is sent."""
        self.session, self.ids, self.say = session, list(ids), say
        self.interventions = interventions            # every job of this trace runs under them
        self.model_name, self.family = model_name, family
        self.source_tokens, self.target_tokens = [], list(tokens)
        self.notes = list(notes or [])
        first = layers[0]
        self._facts = [{k: d[k] for k in ("scale", "softcap", "window", "causal", "heads")} for d in layers]
        self._k = [d["k"][None] for d in layers]                                  # (1, Hkv, T, Dh) a layer
        self._lse = [d["lse"] for d in layers]                                    # (H, T) a layer
        self._sink = [d["sink"] for d in layers]                                  # (H,) or None
        self._overviews: dict[tuple[int, str], list] = {}
        self._blocks: dict[tuple[int, int], list[dict]] = {}                     # rows -> per layer q, mask, bias
        self.jobs = 0
        self.received = 0
        self._recording: RecordedTrace | None = None
        self._keep(layers, rows)
        self._heads = int(first["heads"])

    # ---- what came back ---------------------------------------------------------------------
    def _keep(self, layers: list[dict], rows: tuple[int, int] | None) -> None:
        self.jobs += 1
        for d in layers:
            for key, (pooled, sink) in d["overviews"].items():
                self._overviews.setdefault(key, []).append((pooled.numpy(), sink.numpy()))
        if rows is not None and rows[1] > rows[0]:
            for inside in [r for r in self._blocks if rows[0] <= r[0] and r[1] <= rows[1]]:
                del self._blocks[inside]                  # fetched again within the new block: one copy kept
            self._blocks[rows] = [{"q": d["q"][None], "mask": d["mask"], "bias": d["bias"]} for d in layers]

    @property
    def rows_fetched(self) -> list[tuple[int, int]]:
        """The blocks of query rows whose q is here, in order."""
        return sorted(self._blocks)

    def missing_rows(self, start: int, stop: int) -> list[tuple[int, int]]:
        """The runs of rows in [start, stop) whose q has not been fetched."""
        have = np.zeros(stop - start, bool)
        for r0, r1 in self._blocks:
            have[max(r0, start) - start:max(start, min(r1, stop)) - start] = True
        gaps, i = [], 0
        while i < len(have):
            if have[i]:
                i += 1
                continue
            j = i
            while j < len(have) and not have[j]:
                j += 1
            gaps.append((start + i, start + j))
            i = j
        return gaps

    @property
    def complete(self) -> bool:
        """Whether q of every row is here: the trace is then a whole recording."""
        return not self.missing_rows(0, len(self.target_tokens))

    def fetch_rows(self, start: int, stop: int) -> None:
        """Fetch q of rows [start, stop) not yet here with one remote job (the rows between the
        first and last missing), saying first what will travel and how long the last job took."""
        gaps = self.missing_rows(start, stop)
        if not gaps:
            return
        rows = (gaps[0][0], gaps[-1][1])
        config = self.session.loaded.model.config
        masked = not all(f["causal"] for f in self._facts)
        travel = travel_estimate(config, len(self.ids), rows[1] - rows[0], None, self._k[0].element_size(),
                                 masked, keep_k=False, parameters=self.session.loaded.n_parameters)
        check_travel(travel, self.model_name)
        if self.say is not None:
            last = self.session.last_seconds
            self.say(f"Fetching query rows {rows[0]:,}-{rows[1] - 1:,} of {self.model_name}: {travel.describe()}"
                     + (f"; the last job took {duration(last)}." if last is not None else "."))
        job = self.session.run(self.ids, rows, [], keep_k=False, interventions=self.interventions)
        self.received += job.received
        self._keep(job.layers, rows)

    # ---- the protocol -------------------------------------------------------------------------
    @property
    def kinds(self) -> list[str]:
        return [DECODER_SELF]

    def shape(self, kind: str) -> tuple[int, int, int, int]:
        t = len(self.target_tokens)
        return len(self._k), self._heads, t, t

    batch_index = 0                                   # one example: the text's

    @property
    def recorded(self) -> bool:
        """Computed from queries and keys, as a recording is: its q and k can be read (``call``
        fetches the rows not here first) and, once every row is here, it is saved as one."""
        return True

    def computes_on_demand(self, kind: str) -> bool:
        """True: a block of weights is computed here from q and k, and a block over rows not
        here runs a job first, so views draw it on the model's lane (gui.worker.drawing_lane).
        The overview's pixels at the size pooled there are read, not computed."""
        return True

    def call(self, kind: str, layer: int) -> AttentionCall:
        """The whole call of one layer (q of every row: those not here fetched first, one job)."""
        self.fetch_rows(0, len(self.target_tokens))
        return self.recording().call(kind, layer)

    @property
    def calls(self) -> dict[str, list[AttentionCall]]:
        """kind -> every layer's whole call, as a recording holds them (what Save Recording
        writes); RemoteJobError while rows are not here: never a recording with holes."""
        return self.recording().calls

    def piece_span(self, kind: str) -> tuple[int, int]:
        t = len(self.target_tokens)
        return t, t

    def strongest_keys(self, kind, layer, heads, rows, k, keys=None):
        return self.recording().strongest_keys(kind, layer, heads, rows, k, keys) if self.complete else None

    def held_bytes(self) -> int:
        """What came back and is kept: k, the log-sum-exp, q of the rows fetched, the overviews."""
        tensors = [*self._k, *self._lse] + [t for block in self._blocks.values() for d in block
                                             for t in d.values() if t is not None]
        pixels = sum(p.nbytes + s.nbytes for layers in self._overviews.values() for p, s in layers)
        return sum(t.numel() * t.element_size() for t in tensors) + pixels

    def thumbnails(self, kind: str, size: int, how: str = "max", report=None, stop=None) -> Thumbnails:
        """The overview's pixels as the server pooled them (engine.traces.RecordedTrace's own
        code there); another size or pooling: from the rows here when all are, else a new job
        (a size that draws every token: the rows are fetched, cheaper than every weight)."""
        key = (int(size), how)
        if key not in self._overviews and not self.complete:
            t = len(self.target_tokens)
            if size >= t:
                self.fetch_rows(0, t)
            else:
                job = self.session.run(self.ids, None, [key], keep_k=False, interventions=self.interventions)
                self.received += job.received
                self._keep(job.layers, None)
        if key not in self._overviews:
            return self.recording().thumbnails(kind, size, how, report, stop)
        t = len(self.target_tokens)
        pooled = np.stack([p for p, _ in self._overviews[key]]).astype(np.float32, copy=False)
        sink = np.stack([s for _, s in self._overviews[key]]).astype(np.float32, copy=False)
        return Thumbnails(pooled, how, t, t, sink)

    def layer(self, kind: str, layer: int) -> np.ndarray:
        L, H, tq, tk = self.shape(kind)
        if H * tq * tk * 4 > LAYER_BYTES:
            raise TraceTooLarge(f"One layer of {kind} is {H} heads x {tq:,} x {tk:,} = {gib(H * tq * tk * 4)} "
                                "at once; ask for thumbnails, a tile or a row.")
        return self.block(kind, layer, list(range(H)), slice(0, tq), slice(0, tk)).numpy()

    def tile(self, kind: str, layer: int, head: int, rows: slice, cols: slice) -> np.ndarray:
        return self.block(kind, layer, [head], rows, cols)[0].numpy()

    def row(self, kind: str, layer: int, head: int, query: int) -> np.ndarray:
        return self.tile(kind, layer, head, slice(query, query + 1), slice(None))[0]

    @torch.no_grad()
    def block(self, kind: str, layer: int, heads: list[int], rows: slice, cols: slice) -> torch.Tensor:
        """(h, r, c) float32 exact weights over queries ``rows`` x keys ``cols``: rows not fetched
        are fetched first (one remote job)."""
        t = len(self.target_tokens)
        r0, r1, _ = rows.indices(t)
        c0, c1, _ = cols.indices(t)
        r1, c1 = max(r0, r1), max(c0, c1)
        self.fetch_rows(r0, r1)
        heads = list(heads)
        out = torch.zeros(len(heads), r1 - r0, c1 - c0)
        for (b0, b1), block in self._blocks.items():
            lo, hi = max(b0, r0), min(b1, r1)
            if lo >= hi:
                continue
            call = self._partial_call(layer, (b0, b1), block[layer])
            s = call.scores(0, heads, slice(lo - b0, hi - b0), slice(c0, c1))             # (h, r, c)
            out[:, lo - r0:hi - r0] = s.sub_(self._lse[layer][heads, lo:hi, None]).exp_().nan_to_num_(nan=0.0)
        return out

    def _partial_call(self, layer: int, rows: tuple[int, int], part: dict) -> AttentionCall:
        """The call of ``layer`` for the query rows of one fetched block: every key, the block's
        own rows of the mask (a plain causal call: the triangle for those rows)."""
        facts, t = self._facts[layer], len(self.target_tokens)
        mask = part["mask"]
        if mask is None and facts["causal"]:
            mask = (torch.arange(t)[None, :] <= torch.arange(*rows)[:, None])[None, None]  # (1, 1, r, T)
        return AttentionCall(None, part["q"], self._k[layer], None, mask=mask, bias=part["bias"],
                             scale=facts["scale"], softcap=facts["softcap"], window=facts["window"],
                             causal=False, sink=self._sink[layer])

    # ---- a whole recording ----------------------------------------------------------------
    def recording(self) -> RecordedTrace:
        """The trace as engine.traces.RecordedTrace, once every row is fetched (RemoteJobError
        before, never a recording with holes): what Save Recording writes."""
        if not self.complete:
            fetched = ", ".join(f"{a:,}-{b - 1:,}" for a, b in self.rows_fetched)
            raise RemoteJobError(f"Only query rows {fetched} of {len(self.target_tokens):,} were fetched from "
                                 f"{self.model_name}: fetch every row before saving a recording.")
        if self._recording is None:
            order = self.rows_fetched
            calls = []
            for layer, facts in enumerate(self._facts):
                parts = [self._blocks[r][layer] for r in order]
                q = torch.cat([p["q"] for p in parts], 2)                                  # (1, H, T, Dh)
                plain = facts["causal"] and all(p["mask"] is None for p in parts)
                mask = None if plain or parts[0]["mask"] is None else torch.cat([p["mask"] for p in parts], 2)
                bias = None if parts[0]["bias"] is None else torch.cat([p["bias"] for p in parts], 2)
                calls.append(AttentionCall(None, q, self._k[layer], None, mask=mask, bias=bias, scale=facts["scale"],
                                           softcap=facts["softcap"], window=facts["window"], causal=plain,
                                           lse=self._lse[layer][None], sink=self._sink[layer]))
            self._recording = RecordedTrace({DECODER_SELF: calls}, model_name=self.model_name, family=self.family,
                                            source_tokens=[], target_tokens=self.target_tokens, notes=self.notes)
        return self._recording
