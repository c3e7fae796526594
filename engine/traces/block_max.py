"""The heads overview of a long causal text on a GPU, in one pass: each pixel's maximum score
computed where the scores are made, never written out.

Why: the overview of a causal text pools every head by max, and the max of a block of weights
is exp(max score * scale - lse) (exp is monotonic), so all it needs of the scores is each
row's maximum over each pixel's keys. With torch ops each block of float32 scores is written
to GPU memory by the matmul and read back by the max: at 32k tokens of a 1B-shaped model
that is 1.1 TB each way and 0.85 s on an H200, 3x the whole forward. A Triton kernel
multiplies a tile of queries by a tile of keys in registers (half-precision inputs, float32
sums: the products of two bf16 numbers are exact in float32, as in ``scaled_products``),
applies the causal limit and keeps the running maximum, so only (H, Tq, pixels) maxima
reach memory.

Used only where it applies and is there: a CUDA recording of a plain causal call (no mask,
bias or softcap), Triton importable (it ships with CUDA builds of torch); everywhere else
the torch path of ``RecordedTrace._thumbnails`` runs, and a test on a GPU checks both give
the same pixels. Where the kernel is there but fails its check, the trace's notes say so. ``TRITON_INTERPRET=1`` runs the kernel on the CPU for development.
"""
from __future__ import annotations

import functools
import os

import torch
from attnscope.engine.seam.call import AttentionCall


def _fits(call) -> bool:
    """Whether ``call`` is one the kernel is written for: a plain causal call on a GPU (or the
    interpreter), of a dtype and head size it takes."""
    on_device = call.q.is_cuda or os.environ.get("TRITON_INTERPRET") == "1"
    return (on_device and call.causal and call.mask is None and call.bias is None and call.softcap is None
            and call.q.dtype in (torch.float16, torch.bfloat16, torch.float32) and call.q.shape[-1] <= 256)


def applies(call) -> bool:
    """Whether ``call``'s overview can be pooled by the kernel here (and the kernel, checked
    once per device, dtype and head size against the torch path, gives its numbers)."""
    return _fits(call) and _kernel() is not None and _agrees(call.q.device, call.q.dtype, call.q.shape[-1])


def refused(call) -> str | None:
    """The sentence a trace's notes carry when the kernel is there and written for ``call`` but
    gave other maxima than the torch path on its check: the overview is then pooled by torch,
    slower, and the user is told rather than left to wonder (None otherwise)."""
    if _fits(call) and _kernel() is not None and not _agrees(call.q.device, call.q.dtype, call.q.shape[-1]):
        return (f"The GPU kernel that pools the overview gave other numbers than the exact path on its check "
                f"({call.q.dtype}, head size {call.q.shape[-1]}); the overview is pooled the slower exact way.")
    return None


@functools.lru_cache(maxsize=None)
def _agrees(device: torch.device, dtype: torch.dtype, dim: int) -> bool:
    """Whether the kernel gives the torch path's maxima on a small random causal call of this
    kind (grouped heads, a ragged last pixel, rows and keys cut short): a compiler or a GPU
    that computes otherwise falls back to torch instead of drawing other numbers."""
    from attnscope.engine.traces.pooling import pool_blocks

    g = torch.Generator(device="cpu").manual_seed(0)
    q = torch.randn(1, 4, 420, dim, generator=g).to(device=device, dtype=dtype)
    k = torch.randn(1, 2, 420, dim, generator=g).to(device=device, dtype=dtype)
    call = AttentionCall(None, q, k, None, scale=1.0, causal=True)
    # 150 keys a pixel: three of the kernel's 64-key tiles and part of a fourth, so a kernel that
    # read only each pixel's first tile fails (33 keys, under one tile, could not tell); query
    # rows over several 64-row tiles, the last pixel ragged, rows and keys cut short.
    try:
        got = block_maxima(call, 0, 417, 413, 150)                                # (4, 417, 3)
    except Exception:           # noqa: BLE001 - any failure to compile or run: the torch path instead
        return False
    want = pool_blocks(call.scores(0, None, slice(0, 417), slice(0, 413), scaled=False), 150, "max")
    finite = torch.isfinite(want)
    return bool(torch.equal(finite, torch.isfinite(got))
                and torch.allclose(got[finite], want[finite], rtol=1e-5, atol=1e-4))


def block_maxima(call, b: int, tq: int, tk: int, kb: int) -> torch.Tensor:
    """(H, tq, ceil(tk / kb)) float32: for each query row i of example ``b`` and each block j of
    ``kb`` keys, max over keys c of the block with c < tk and c <= i + offset of q_i . k_c, not
    scaled (-inf where the block holds no such key)."""
    kernel = _kernel()
    q = call.q[b].contiguous()                                                  # (H, Tq, D)
    k = call.k[b].contiguous()                                                  # (Hkv, Tk, D)
    heads, _, dim = q.shape
    cols = -(-tk // kb)
    out = torch.empty(heads, tq, cols, dtype=torch.float32, device=q.device)
    block_m, block_n = 64, 64
    grid = (-(-tq // block_m), cols, heads)
    kernel[grid](q, k, out, tq, tk, kb, call.k.shape[2] - call.q.shape[2], call.group,
                 q.stride(0), q.stride(1), k.stride(0), k.stride(1), out.stride(0), out.stride(1),
                 DIM=dim, BLOCK_D=max(16, 1 << (dim - 1).bit_length()), BLOCK_M=block_m, BLOCK_N=block_n,
                 IEEE=q.dtype == torch.float32)
    return out


@functools.lru_cache(maxsize=1)
def _kernel():
    """The Triton kernel, or None where Triton is not installed."""
    try:
        import triton   # pyright: ignore[reportMissingImports]  (CUDA machines only)
        import triton.language as tl   # pyright: ignore[reportMissingImports]
    except ImportError:
        return None

    @triton.jit
    def _block_max(q_ptr, k_ptr, out_ptr, tq, tk, kb, offset, group,
                   sqh, sqt, skh, skt, soh, sot,
                   DIM: tl.constexpr, BLOCK_D: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                   IEEE: tl.constexpr):
        pid_m, col, head = tl.program_id(0), tl.program_id(1), tl.program_id(2)
        rows = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)                            # (M,)
        dims = tl.arange(0, BLOCK_D)                                              # (D,)
        q = tl.load(q_ptr + head * sqh + rows[:, None] * sqt + dims[None, :],
                    mask=(rows[:, None] < tq) & (dims[None, :] < DIM), other=0.0)  # (M, D)
        kv = head // group
        start = col * kb
        stop = tl.minimum(start + kb, tk)
        last = tl.minimum(pid_m * BLOCK_M + BLOCK_M - 1, tq - 1) + offset + 1      # keys any row here sees
        stop_seen = tl.minimum(stop, last)
        best = tl.full((BLOCK_M,), float("-inf"), tl.float32)
        n0 = start
        while n0 < stop_seen:                    # the keys of this pixel that some row here sees
            keys = n0 + tl.arange(0, BLOCK_N)                                     # (N,)
            k = tl.load(k_ptr + kv * skh + keys[:, None] * skt + dims[None, :],
                        mask=(keys[:, None] < stop_seen) & (dims[None, :] < DIM), other=0.0)  # (N, D)
            if IEEE:
                s = tl.dot(q, tl.trans(k), input_precision="ieee")                # (M, N) float32
            else:
                s = tl.dot(q, tl.trans(k))                                        # (M, N) float32 sums
            seen = (keys[None, :] < stop_seen) & (keys[None, :] <= rows[:, None] + offset)
            s = tl.where(seen, s, float("-inf"))
            best = tl.maximum(best, tl.max(s, axis=1))
            n0 += BLOCK_N
        tl.store(out_ptr + head * soh + rows * sot + col, best, mask=rows < tq)

    return _block_max
