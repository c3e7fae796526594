"""The atlas's pass over one layer of a plain causal call, without a (H, r, T) block of weights.

Why: on a CPU the row-block pass (build.py's ``_layer_pass``) spends most of its time taking
the exp of every score and multiplying the weights by their logs, about 4x the forward's own
cost. For a causal self-attention with no bias and no softcap (Llama, GPT-2, gpt-oss: the
common case), every atlas statistic is an exact reduction that needs far less:

- entropy and mean distance are weighted sums over the keys, so one fused attention kernel
  gives both: with values [k_j, j] the kernel returns o_i = sum_j a_ij [k_j, j] / rho_i, and
  sum_j a_ij s_ij = rho_i scale q_i . o_i (s_ij = scale q_i . k_j), so the entropy
  -sum_j a_ij (s_ij - lse_i) = rho_i (lse_i - scale q_i . o_i) and the distance
  sum_j a_ij (i - j) = rho_i (i - o_i,pos). rho_i = sum_j a_ij = 1 - exp(sink_i - lse_i) is
  what a learned sink leaves (1 without one), and the sink's share is exp(sink_i - lse_i);
- the first-token, self, previous and local-window weights are 18 diagonals: exp(s - lse)
  from a product of q and a shifted k (never a block);
- the duplicate and induction masses read the pairs of a query and an earlier copy of its
  token: a frequent token's copies as one small (m, m) product, a rare one's pairs gathered;
- the strongest keys of the rows kept (top contexts, sample) are the top scores of those rows
  (exp is monotone), and the similarity's few rows are read whole.

Each row's log-sum-exp ``lse`` is the recorder's (the kernel's, the sink included), as the
block pass reads it. The sums the kernel hands back are float32 like the block pass's; the
entropy's difference is taken in float64. tests/engine/test_atlas_fast.py checks this path
against the block pass on every array of the atlas.
"""
from __future__ import annotations

import numpy as np
import torch

from attnscope.engine.inspection.statistics import LOCAL_WINDOW

KNOWN = ("entropy", "distance", "sink", "learned_sink", "previous", "self", "local", "duplicate", "induction")
FREQUENT = 8        # a token with this many copies or more: its pairs as one product, not gathered
PAIRS = 1 << 14     # pairs gathered at a time: (H, PAIRS, Dh) floats
CELLS = 1 << 23     # scores of frequent tokens' copies multiplied at once (32 MB)


def applies(call, listed) -> bool:
    """Whether ``call`` is a plain causal self-attention this path reads exactly: one example, no
    bias, no softcap, the kernel's log-sum-exp, no mask but the causal triangle, on the CPU (a
    GPU's exp is cheap, and its kernels' choices are not checked here), and every statistic
    asked one it knows (a test may append another: the block pass reads it)."""
    if call.bias is not None or call.softcap or call.lse is None or call.q.shape[0] != 1:
        return False
    if call.q.device.type != "cpu" or call.q.shape[2] != call.k.shape[2]:
        return False
    if any(s.name not in KNOWN for s in listed):
        return False
    return (call.mask is None and call.causal) or _is_triangle(call.mask)


def _is_triangle(m) -> bool:
    """A boolean mask that is exactly the causal triangle (our GPT hands its triangle as a mask;
    a sliding window or padding is not), checked once per mask."""
    if m is None or m.dtype != torch.bool or m.shape[-1] != m.shape[-2]:
        return False
    key = (m.data_ptr(), tuple(m.shape))
    if key not in _TRIANGLES:
        n = m.shape[-1]
        tril = torch.ones(n, n, dtype=torch.bool, device=m.device).tril_()
        _TRIANGLES.clear()
        _TRIANGLES[key] = bool((m == tril).all())
    return _TRIANGLES[key]


_TRIANGLES: dict = {}


@torch.no_grad()
def layer_values(call, listed, groups, wanted: dict, sim_rows: np.ndarray, whole: torch.Tensor, a: dict,
                 layer: int, strongest: int) -> tuple[torch.Tensor, torch.Tensor]:
    """(S, H, T) each row's value of each statistic in ``listed`` and (S, T) the rows each counts;
    the strongest keys of the ``wanted`` rows written into ``a``; the similarity's rows into
    ``whole`` (H, n, T)."""
    q = call.q[0].float()                                                        # (H, T, Dh)
    H, T, dh = q.shape
    kv = torch.arange(H) // call.group
    k = call.k[0].float()[kv]                                                    # (H, T, Dh) each query head's keys
    lse = call.lse[0].float()                                                    # (H, T)
    sink = call.sink_logits(0)                                                   # (H, 1) | (H, T) | None
    sunk = torch.zeros(H, T) if sink is None else torch.exp(sink.expand(H, T) - lse)   # the sink's share
    rho = 1.0 - sunk                                                             # (H, T) what the keys hold
    pos = torch.arange(T, dtype=torch.float32)
    qs = q * call.scale                                                          # as call.scores scales
    got: dict[str, torch.Tensor] = {}
    ok: dict[str, torch.Tensor] = {}
    if {"entropy", "distance"} & {s.name for s in listed}:
        # q and k padded with zeros (the scores unchanged) to the values' width, a multiple of 8:
        # the CPU's fused kernel wants one head size (else sdpa falls back to a (T, T) product)
        zeros = q.new_zeros(H, T, (-(dh + 1)) % 8 + 1)
        values = torch.cat([k, pos[None, :, None].expand(H, T, 1), zeros[..., 1:]], -1)   # (H, T, Dh + pad)
        o = torch.nn.functional.scaled_dot_product_attention(
            torch.cat([q, zeros], -1)[None], torch.cat([k, zeros], -1)[None], values[None], is_causal=True,
            scale=call.scale)[0]                                                 # (H, T, Dh + pad)
        dot = (qs.double() * o[..., :dh].double()).sum(-1)                       # (H, T) sum_j abar_ij s_ij
        got["entropy"] = (rho.double() * (lse.double() - dot)).float()
        got["distance"] = rho * (pos - o[..., dh])
    diag = _diagonals(qs, k, lse)                                                # (d, H, T) weight on key i - d
    got["sink"] = torch.exp(qs @ k[:, 0, :, None] - lse[..., None])[..., 0]      # (H, T)
    got["learned_sink"] = sunk
    got["self"] = diag[0]
    got["previous"] = diag[1]
    ok["previous"] = pos >= 1
    got["local"] = diag.sum(0)
    dup, ind, has = _copies(qs, k, lse, groups)
    got["duplicate"], got["induction"] = dup, ind
    ok["duplicate"] = ok["induction"] = has
    vals = torch.stack([got[s.name] for s in listed])                            # (S, H, T)
    valid = torch.stack([ok.get(s.name, torch.ones(T, dtype=torch.bool)) for s in listed])   # (S, T)
    _strongest(a, qs, k, lse, wanted, layer, strongest)
    if len(sim_rows):
        r = torch.as_tensor(sim_rows)
        s = qs[:, r] @ k.transpose(1, 2)                                         # (H, n, T)
        s.masked_fill_(torch.arange(T)[None, :] > r[:, None], float("-inf"))
        whole[:, :, :T] = torch.exp(s - lse[:, r, None])
    return vals, valid


def _diagonals(qs, k, lse) -> torch.Tensor:
    """(LOCAL_WINDOW + 1, H, T) each row's weight on key i - d for d = 0..16 (0 where i < d): the
    keys i-16..i of every row as one strided view of k (front-padded with zeros), one product."""
    H, T, dh = qs.shape
    w = LOCAL_WINDOW + 1
    padded = torch.cat([k.new_zeros(H, w - 1, dh), k], 1)                        # (H, T + 16, Dh)
    near = padded.unfold(1, w, 1)                                                # (H, T, Dh, 17): keys i-16..i
    s = torch.einsum("htd,htdw->wht", qs, near).flip(0)                          # (17, H, T) d = 0..16
    out = torch.exp(s - lse[None])
    before = torch.arange(w)[:, None] > torch.arange(T)[None, :]                 # (17, T) key i - d < 0
    return out.masked_fill_(before[:, None, :], 0.0)


def _copies(qs, k, lse, groups) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """(H, T) each row's weight on earlier copies of its token, and on the keys right after them;
    (T,) whether its token came before. ``groups`` is statistics.token_groups of the ids."""
    order, start, rank = groups
    H, T, _ = qs.shape
    size = np.bincount(start, minlength=T)[start]                                # (T,) copies of each token
    dup, ind = qs.new_zeros(H, T), qs.new_zeros(H, T)
    firsts = np.unique(start[size >= FREQUENT])                                   # frequent tokens: products
    firsts = firsts[np.argsort(size[order[firsts]], kind="stable")]              # by size: little padding
    while len(firsts):
        n = 1
        while n < len(firsts) and (n + 1) * int(size[order[firsts[n]]]) ** 2 * H <= CELLS \
                and 4 * size[order[firsts[n]]] <= 5 * size[order[firsts[0]]]:      # padding: a quarter at most
            n += 1
        chunk, firsts = firsts[:n], firsts[n:]
        sizes = size[order[chunk]]
        m = int(sizes[-1])                                                       # the chunk's longest
        place = np.arange(m)[None, :]
        x = torch.as_tensor(order[np.minimum(chunk[:, None] + place, chunk[:, None] + sizes[:, None] - 1)])
        real = torch.as_tensor(place < sizes[:, None])                           # (g, m) not padding
        earlier = torch.ones(m, m, dtype=torch.bool).tril_(-1)                   # key b < query a
        lx = lse[:, x, None]                                                     # (H, g, m, 1)
        qx = qs[:, x]                                                            # (H, g, m, Dh)
        after = (x + 1).clamp_max(T - 1)                                         # the last copy is no key's: masked
        for out, keys in ((dup, x), (ind, after)):
            w = torch.exp(qx @ k[:, keys].transpose(-1, -2) - lx).masked_fill_(~earlier, 0).sum(-1)   # (H, g, m)
            out[:, x[real]] = w[:, real]
    rare = np.flatnonzero((size < FREQUENT) & (rank > 0))                        # queries with few earlier copies
    n = rank[rare]
    rows = np.repeat(rare, n)
    within = np.arange(n.sum()) - np.repeat(np.cumsum(n) - n, n)
    keys = order[np.repeat(start[rare], n) + within]
    for p0 in range(0, len(rows), PAIRS):
        r = torch.as_tensor(rows[p0:p0 + PAIRS])
        e = torch.as_tensor(keys[p0:p0 + PAIRS])
        qr, lr = qs[:, r], lse[:, r]                                             # (H, P, Dh), (H, P)
        dup.index_add_(1, r, torch.exp((qr * k[:, e]).sum(-1) - lr))
        ind.index_add_(1, r, torch.exp((qr * k[:, e + 1]).sum(-1) - lr))
    return dup, ind, torch.as_tensor(rank > 0)


def _strongest(a: dict, qs, k, lse, wanted: dict, layer: int, strongest: int) -> None:
    """The strongest keys (and their weights) of the kept rows: the top scores of each (head,
    row), the future masked (exp is monotone: the top weights). Every head's rows at once: the
    heads' row lists padded to the longest (a padded row repeats one and is not written)."""
    T = k.shape[1]
    n_keys = min(strongest, T)
    for kind, (heads, rows, slots) in wanted.items():
        order = np.argsort(heads, kind="stable")
        heads, rows, slots = heads[order], rows[order], slots[order]
        used, first, count = np.unique(heads, return_index=True, return_counts=True)
        col = np.arange(len(heads)) - np.repeat(first, count)                    # each pair's place in its head
        which = np.repeat(np.arange(len(used)), count)                           # each pair's head among used
        padded = np.repeat(rows[first][:, None], count.max(), 1)                 # (h, n) a head's first row
        padded[which, col] = rows
        r = torch.as_tensor(padded)
        h = torch.as_tensor(used)
        s = torch.bmm(qs[h[:, None], r], k[h].transpose(1, 2))                   # (h, n, T)
        s.masked_fill_(torch.arange(T)[None, None, :] > r[..., None], float("-inf"))
        top, cols = torch.topk(s, n_keys, dim=-1)                                # (h, n, k)
        weights = torch.exp(top - lse[h[:, None], r][..., None])
        a[f"{kind}.keys"][layer, heads, slots, :n_keys] = cols.numpy()[which, col]
        a[f"{kind}.weights"][layer, heads, slots, :n_keys] = weights.numpy()[which, col]
