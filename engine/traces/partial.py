"""PartialTrace: a decoder's attention from every layer's k and each row's log-sum-exp, q of
some query rows only, and the overview's pixels pooled where the model ran.

What an ``ndif:`` Run brings back (engine.remote.RemoteTrace, which fetches the rows not
here with a new job), and what a recording of such a Run keeps (engine.traces.recording_file:
which rows are exact is in the file). Any block of weights over rows here is
exp(q_i k_j * scale + b_ij - lse_i), as RecordedTrace computes it; the overview is read from
the pixels held. A block over rows not here, or an overview size not held, is refused in one
sentence (RowsNotHeld: a view says it in place); RemoteTrace brings them instead. Once every
row is here it is a whole recording (``whole_recording``).
"""
from __future__ import annotations

import numpy as np
import torch

from attnscope.engine.kinds import DECODER_SELF
from attnscope.engine.seam.call import AttentionCall
from attnscope.engine.traces import reading
from attnscope.engine.traces.base import TraceDefaults, TraceTooLarge
from attnscope.engine.traces.capabilities import FasterPaths, Fetcher, Recording
from attnscope.engine.traces.pooling import Thumbnails
from attnscope.engine.traces.recorded import RecordedTrace

FACTS = ("scale", "softcap", "window", "causal", "heads")     # per layer, plain numbers


class RowsNotHeld(TraceTooLarge):
    """Rows of queries (or an overview size) a partial trace does not hold and cannot fetch,
    said in one sentence; a TraceTooLarge, so a view says it in place of its drawing."""


def spans(rows: list[tuple[int, int]]) -> str:
    """Blocks of rows as the user reads them: "0-2, 7, 20-24"."""
    return ", ".join(f"{a:,}" if b - a == 1 else f"{a:,}-{b - 1:,}" for a, b in rows) or "none"


class PartialTrace(TraceDefaults):
    def __init__(self, layers: list[dict], rows: tuple[int, int] | None, *, model_name: str, family: str,
                 tokens: list[str], notes: list[str] | None = None):
        """``layers``: per layer a dict (engine.remote.server.reduce_call's): ``k`` (Hkv, T, Dh),
        ``lse`` (H, T), ``sink`` (H,) or None, ``overviews`` {(size, how): (pooled (H, r, c),
        first key (H, r))}, the FACTS, and for query rows ``rows`` [r0, r1): ``q`` (H, r, Dh),
        ``mask`` and ``bias`` (1, 1|H, r, T) or None; ``tokens`` label both axes."""
        self.model_name, self.family = model_name, family
        self.source_tokens, self.target_tokens = [], list(tokens)
        self.notes = list(notes or [])
        self._facts = [{k: d[k] for k in FACTS} for d in layers]
        self._k = [d["k"][None] for d in layers]                                  # (1, Hkv, T, Dh) a layer
        self._lse = [d["lse"] for d in layers]                                    # (H, T) a layer
        self._sink = [d["sink"] for d in layers]                                  # (H,) or None
        self._overviews: dict[tuple[int, str], list] = {}                        # -> per layer (pooled, sink)
        self._blocks: dict[tuple[int, int], list[dict]] = {}                     # rows -> per layer q, mask, bias
        self._recording: RecordedTrace | None = None
        self._heads = int(layers[0]["heads"])
        self._keep(layers, rows)

    # ---- what is held -------------------------------------------------------------------------
    def _keep(self, layers: list[dict], rows: tuple[int, int] | None) -> None:
        for d in layers:
            for (size, how), (pooled, sink) in d["overviews"].items():
                self._overviews.setdefault(self._overview_key(size, how), []).append(
                    (np.asarray(pooled), np.asarray(sink)))
        if rows is not None and rows[1] > rows[0]:
            for inside in [r for r in self._blocks if rows[0] <= r[0] and r[1] <= rows[1]]:
                del self._blocks[inside]                  # fetched again within the new block: one copy kept
            self._blocks[rows] = [{"q": d["q"][None], "mask": d["mask"], "bias": d["bias"]} for d in layers]

    @property
    def rows_fetched(self) -> list[tuple[int, int]]:
        """The blocks of query rows whose q is here, in order."""
        return sorted(self._blocks)

    def _overview_key(self, size: int, how: str) -> tuple[int, str]:
        """(pixels a side, pooling) as held: any size of at least the text's tokens pools nothing,
        so it is one overview, held under the count of tokens."""
        return min(int(size), len(self.target_tokens)), how

    def held_call(self, kind: str, layer: int) -> AttentionCall | None:
        """The call of ``layer`` for the first block of rows held (every key; None when no row
        is): a sample of the computation a view of this trace runs, without bringing rows."""
        rows = self.rows_fetched
        return self._partial_call(layer, rows[0], self._blocks[rows[0]][layer]) if rows else None

    @property
    def overview_sizes(self) -> list[tuple[int, str]]:
        """The (pixels a side, pooling) of each overview held."""
        return sorted(self._overviews)

    def missing_rows(self, start: int, stop: int) -> list[tuple[int, int]]:
        """The runs of rows in [start, stop) whose q is not here."""
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
        """Make q of rows [start, stop) here: the rows between the first and last missing are
        brought by ``_bring_rows`` (here: refused in one sentence, nothing to fetch them from)."""
        gaps = self.missing_rows(start, stop)
        if gaps:
            self._bring_rows((gaps[0][0], gaps[-1][1]))

    def _bring_rows(self, rows: tuple[int, int]) -> None:
        one = rows[1] - rows[0] == 1
        which = f"Query row {rows[0]:,} is" if one else f"Query rows {spans(self.missing_rows(*rows))} are"
        held = f"rows {spans(self.rows_fetched)}" if self.rows_fetched else "no query rows"
        raise RowsNotHeld(f"{which} not in this trace of {self.model_name} (it holds {held} exactly) and there is "
                          f"no model here to fetch {'it' if one else 'them'} from.")

    def _bring_overview(self, size: int, how: str) -> None:
        held = ", ".join(f"{s} pixels by {h}" for s, h in self.overview_sizes) or "none"
        raise RowsNotHeld(f"The overview of {self.model_name} at {size} pixels a side by {how} is not in this trace "
                          f"(it holds {held}) and, with only rows {spans(self.rows_fetched)} exact, it cannot be "
                          "computed here.")

    # ---- the protocol -------------------------------------------------------------------------
    @property
    def kinds(self) -> list[str]:
        return [DECODER_SELF]

    def shape(self, kind: str) -> tuple[int, int, int, int]:
        t = len(self.target_tokens)
        return len(self._k), self._heads, t, t

    batch_index = 0                                   # one example: the text's

    @property
    def recording(self) -> Recording:
        """Itself, computed from queries and keys as a recording is: saved as one, rows held and all."""
        return self

    @property
    def fetcher(self) -> Fetcher:
        """Whether every row is here; a trace read back has nothing to fetch them from."""
        return Fetcher(self)

    @property
    def faster(self) -> FasterPaths:
        """The overview: its pixels as pooled where the model ran (``_thumbnails``)."""
        return FasterPaths(thumbnails=self._thumbnails)

    @property
    def groups(self) -> dict[str, list[int]]:
        """No word merging: the tokens are the pieces fed (a decoder's text)."""
        return {}

    @property
    def pieces(self) -> dict[str, list[str]]:
        """side -> the tokens fed: the text's, on the target side."""
        return {"source": self.source_tokens, "target": self.target_tokens}

    def computes_on_demand(self, kind: str) -> bool:
        """True: a block of weights is computed here from q and k, so views draw it on the
        model's lane (gui.worker.drawing_lane). The overview's pixels held are read."""
        return True

    def call(self, kind: str, layer: int) -> AttentionCall:
        """The whole call of one layer (q of every row: those not here brought first)."""
        self.fetch_rows(0, len(self.target_tokens))
        return self.whole_recording().call(kind, layer)

    @property
    def calls(self) -> dict[str, list[AttentionCall]]:
        """kind -> every layer's whole call, as a recording holds them; refused while rows are not
        here (``whole_recording``): never a whole recording with holes."""
        return self.whole_recording().calls

    def piece_span(self, kind: str) -> tuple[int, int]:
        t = len(self.target_tokens)
        return t, t

    def strongest_keys(self, kind, layer, heads, rows, k, keys=None):
        return self.whole_recording().strongest_keys(kind, layer, heads, rows, k, keys) if self.complete else None

    def held_bytes(self) -> int:
        """What is held: k, the log-sum-exp, q of the rows here, the overviews."""
        tensors = [*self._k, *self._lse] + [t for block in self._blocks.values() for d in block
                                             for t in d.values() if t is not None]
        pixels = sum(p.nbytes + s.nbytes for layers in self._overviews.values() for p, s in layers)
        return sum(t.numel() * t.element_size() for t in tensors) + pixels

    def _thumbnails(self, kind: str, size: int, how: str = "max", report=None, stop=None) -> Thumbnails:
        """The overview's pixels as they were pooled where the model ran; another size or pooling:
        from the rows here when all are, else ``_bring_overview`` (here: refused)."""
        key = self._overview_key(size, how)
        if key not in self._overviews and not self.complete:
            self._bring_overview(*key)
        if key not in self._overviews:
            return reading.thumbnails(self.whole_recording(), kind, size, how, report, stop)
        t = len(self.target_tokens)
        pooled = np.stack([p for p, _ in self._overviews[key]]).astype(np.float32, copy=False)
        sink = np.stack([s for _, s in self._overviews[key]]).astype(np.float32, copy=False)
        return Thumbnails(pooled, how, t, t, sink)

    @torch.no_grad()
    def block(self, kind: str, layer: int, heads: list[int], rows: slice, cols: slice) -> torch.Tensor:
        """(h, r, c) float32 exact weights over queries ``rows`` x keys ``cols``: rows not here
        are brought first (``fetch_rows``)."""
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
        """The call of ``layer`` for the query rows of one block held: every key, the block's own
        rows of the mask (a plain causal call: the triangle for those rows)."""
        facts, t = self._facts[layer], len(self.target_tokens)
        mask = part["mask"]
        if mask is None and facts["causal"]:
            mask = (torch.arange(t)[None, :] <= torch.arange(*rows)[:, None])[None, None]  # (1, 1, r, T)
        sink = self._sink[layer]
        if sink is not None and sink.dim() > 1:                                  # one per query: the block's rows
            sink = sink.reshape(1, -1, sink.shape[-1])[..., rows[0]:rows[1]]     # (1, H, r)
        return AttentionCall(None, part["q"], self._k[layer], None, mask=mask, bias=part["bias"],
                             scale=facts["scale"], softcap=facts["softcap"], window=facts["window"],
                             causal=False, sink=sink)

    # ---- a whole recording ----------------------------------------------------------------
    def _incomplete(self, why: str) -> Exception:
        """The error for a whole recording asked while rows are not here."""
        return RowsNotHeld(why)

    def whole_recording(self) -> RecordedTrace:
        """The trace as engine.traces.RecordedTrace, once every row is here (refused before,
        never a whole recording with holes)."""
        if not self.complete:
            raise self._incomplete(f"Only query rows {spans(self.rows_fetched)} of {len(self.target_tokens):,} "
                                   f"were fetched from {self.model_name}: fetch every row before reading it "
                                   "as a whole recording.")
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

    # ---- kept in a recording file (engine.traces.recording_file) -----------------------------
    def held(self) -> tuple[dict, dict[str, torch.Tensor]]:
        """What a recording file keeps of this trace: (its description: per layer the plain
        numbers, which query rows are exact, which overviews are held; its tensors by name:
        per layer k (Hkv, T, Dh), lse (H, T), the sinks (H,), and per block of rows held q
        (H, r, Dh) with its rows of mask and bias, one written once for every layer that shares
        it (``same``: its name -> the others); per overview its pixels (L, H, rows, cols) and
        the first key's (L, H, rows))."""
        kind, tensors, sites, same = DECODER_SELF, {}, [], {}       # same: a tensor's first name -> its others
        first: dict[tuple, str] = {}
        for layer, facts in enumerate(self._facts):
            sites.append({"kind": kind, "layer": layer, **facts})
            tensors[f"{kind}/{layer}/k"] = self._k[layer][0]
            tensors[f"{kind}/{layer}/lse"] = self._lse[layer]
            if self._sink[layer] is not None:
                tensors[f"{kind}/{layer}/sink"] = self._sink[layer]
            for i, rows in enumerate(self.rows_fetched):
                for part, value in self._blocks[rows][layer].items():
                    name = f"{kind}/{layer}/rows/{i}/{part}"
                    if value is None:
                        continue
                    if part == "q":
                        tensors[name] = value[0]
                        continue
                    seen = (value.data_ptr(), tuple(value.shape), tuple(value.stride()))
                    if seen in first:                     # one mask for every layer: written once
                        same.setdefault(first[seen], []).append(name)
                    else:
                        first[seen] = name
                        tensors[name] = value
        for i, key in enumerate(self.overview_sizes):
            tensors[f"overview/{i}/pooled"] = torch.from_numpy(np.stack([p for p, _ in self._overviews[key]]))
            tensors[f"overview/{i}/sink"] = torch.from_numpy(np.stack([s for _, s in self._overviews[key]]))
        description = {"sites": sites, "rows": [list(r) for r in self.rows_fetched],
                       "overviews": [list(k) for k in self.overview_sizes], "same": same}
        return description, {name: t.detach().to("cpu").contiguous() for name, t in tensors.items()}

    @classmethod
    def from_held(cls, description: dict, tensors: dict[str, torch.Tensor], **labels) -> "PartialTrace":
        """The trace ``held`` described (checked by engine.traces.recording_file); ``labels``:
        model_name, family, tokens, notes."""
        kind, sites = DECODER_SELF, description["sites"]
        blocks = [tuple(r) for r in description["rows"]]
        overviews = {tuple(k): i for i, k in enumerate(description["overviews"])}

        def layer(n: int, block: int | None) -> dict:
            """Layer ``n`` with the rows of ``block`` (None: none); the overviews with the first."""
            d = {k: sites[n][k] for k in FACTS}
            d.update(k=tensors[f"{kind}/{n}/k"], lse=tensors[f"{kind}/{n}/lse"], sink=tensors.get(f"{kind}/{n}/sink"))
            d["overviews"] = {} if block not in (0, None) else {key: (tensors[f"overview/{i}/pooled"][n].numpy(),
                                                                     tensors[f"overview/{i}/sink"][n].numpy())
                                                               for key, i in overviews.items()}
            for part in ("q", "mask", "bias"):
                d[part] = None if block is None else tensors.get(f"{kind}/{n}/rows/{block}/{part}")
            return d

        first = 0 if blocks else None                       # block 0 (or none) comes with the overviews
        trace = cls([layer(n, first) for n in range(len(sites))], blocks[0] if blocks else None, **labels)
        for i in range(1, len(blocks)):
            trace._keep([layer(n, i) for n in range(len(sites))], blocks[i])
        return trace
