"""What the Patching panel draws of a result, computed in the worker: one image and its words.

Patching (exact or attribution) is coloured normalised, (patched - corrupted) / (clean -
corrupted): 1 is the clean behaviour back, 0 none of it, on a scale from -span to span with
span at least 1. Direct logit attribution is coloured by each share itself, in the metric's
units, on a scale symmetric about 0 over the shares shown: a share that pushes toward the
answer is red whatever the sign of the total, and a total near 0 does not blow the scale up
(dividing the shares by a clean difference of -5.43 flipped every colour; by 0.004 it scaled
them to +-50). The total is said in the title, the status and the hover instead.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from attnscope.engine.experiments import DLA, HEAD_KIND

METHODS = {"exact": "exact patching", "attribution": "attribution patching (one backward)",
           "dla": "direct logit attribution"}
DIVERGING = "CET-D1"      # blue - white - red, centred at 0


@dataclass
class Drawing:
    """What the image shows, computed in the worker: finished arrays and labels."""
    image: np.ndarray               # (rows, cols) float32: what is coloured: normalised, or DLA's shares
    raw: np.ndarray                 # (rows, cols) float64: the metric of each patched run (or share)
    rows: list[str]
    cols: list[str]
    heads: list[tuple[str, int, int] | None]   # per (row, col) flattened: the (heads' point, layer, head) or None
    title: str
    span: float                     # the colours run from -span to span


def dla_sums(result) -> dict[str, float]:
    """A DLA result's parts, summed: they add up to the clean logit difference."""
    r = result.results
    return {"heads": float(np.sum(r["heads"])), "MLPs": float(np.sum(r["mlp"])), "embeddings": float(r["embed"]),
            "biases": float(r["bias"])}


def drawing_of(result, point: str) -> Drawing:
    """A PatchResult as one image: heads (layers x heads); heads by position (layer.head x
    positions); a layer's point by position (layers x positions); DLA (layers x heads + MLP).
    An encoder-decoder's encoder heads are by source position, everything else by the
    decoder's positions."""
    raw = result.results
    side = "clean" if point.startswith("encoder") or "target" not in result.tokens else "target"
    tokens = [f"{i} {t}" for i, t in enumerate(result.tokens[side])]
    heads_of = point.replace("-by-pos", "")
    if result.method == DLA:
        values = np.concatenate([raw["heads"], raw["mlp"][:, None]], axis=1)
        img = values                                  # coloured by the shares themselves
        layers, heads = raw["heads"].shape
        cols = [f"H{h}" for h in range(heads)] + ["MLP"]
        cells = [("heads", lay, h) if h < heads else None for lay in range(layers) for h in range(heads + 1)]
        title = (f"each head's and MLP's share of the clean logit difference {result.clean:+.3f} (embeddings "
                 f"{float(raw['embed']):+.3f}, biases {float(raw['bias']):+.3f}); red: toward the answer")
        rows = [f"L{lay}" for lay in range(layers)]
    else:
        norm = result.normalised()
        if point in HEAD_KIND:
            img, values = norm[point], raw[point]
            layers, heads = values.shape
            rows, cols = [f"L{lay}" for lay in range(layers)], [f"H{h}" for h in range(heads)]
            cells = [(point, lay, h) for lay in range(layers) for h in range(heads)]
            title = f"each {HEAD_KIND[point]} head's output patched, all positions"
        elif heads_of in HEAD_KIND:
            layers, t, heads = raw[point].shape
            img = norm[point].transpose(0, 2, 1).reshape(layers * heads, t)          # rows layer.head
            values = raw[point].transpose(0, 2, 1).reshape(layers * heads, t)
            rows, cols = [f"{lay}.{h}" for lay in range(layers) for h in range(heads)], tokens
            cells = [(heads_of, lay, h) for lay in range(layers) for h in range(heads) for _ in range(t)]
            title = f"each {HEAD_KIND[heads_of]} head's output patched at one position"
        else:
            img, values = norm[point], raw[point]
            rows, cols = [f"L{lay}" for lay in range(values.shape[0])], tokens
            cells = [None] * values.size
            title = {"resid-pre": "the residual stream before each layer", "attn-out": "each layer's attention output",
                     "mlp-out": "each layer's MLP output"}[point] + ", patched at one position"
    finite = np.abs(img[np.isfinite(img)])
    largest = float(finite.max()) if finite.size else 0.0
    span = (largest if result.method == DLA else max(1.0, largest)) or 1.0
    return Drawing(np.asarray(img, np.float32), np.asarray(values, np.float64), rows, cols, cells,
                   f"{METHODS[result.method]}: {title}", span)


def describe_cell(d: Drawing, result, r: int, c: int) -> str:
    """The hover's words for cell (r, c): the raw number, and what it is of."""
    value = d.raw[r, c]
    if result.method == DLA:
        way = "toward the answer" if value > 0 else "toward the other answer" if value < 0 else "neither way"
        return (f"{d.rows[r]}, {d.cols[c]}: share {value:+.4f} ({way}) of the clean logit difference "
                f"{result.clean:+.4f}")
    what = "estimated metric" if result.method == "attribution" else "patched"
    return (f"{d.rows[r]}, {d.cols[c]}: {what} {value:.4f}, normalised {d.image[r, c]:.3f} "
            f"(clean {result.clean:.3f}, corrupted {result.corrupt:.3f})")
