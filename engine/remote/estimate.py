"""What a remote job will bring back and how long it may take, known before it is sent.

Per attention layer (bf16 on NDIF: 2 bytes an element of q and k):

    k                 Hkv x T x Dh          (the model's dtype)
    log-sum-exp       H x T                 float32
    overview pixels   H x (rows x cols + rows)   float32, rows = cols = bins(T, size)
    q, rows asked     H x R x Dh            (the model's dtype)
    mask rows         R x T                 bool, only for a call with a mask (a sliding window)

The time is the server's work (the forward, and the scores the overview pools: 2 H T^2 Dh
flops a layer, or half of it causal) at an assumed NDIF throughput, plus the bytes at an
assumed download rate: both said in the refusal, and the last job's real time is kept by
the session (engine.remote.jobs). NDIF stops a job at JOB_SECONDS (its default limit).
"""
from __future__ import annotations

from dataclasses import dataclass

from attnscope.engine.errors import RemoteJobError
from attnscope.engine.inputs import InputError, check_count, check_kind
from attnscope.engine.loading.loaded import LoadedModel
from attnscope.engine.runtime.free_memory import available_memory, gib
from attnscope.engine.traces.estimate import duration
from attnscope.engine.traces.pooling import bins

JOB_SECONDS = 3600                  # NDIF's job time limit, by default
SERVER_FLOPS = 100e12               # assumed: what NDIF's GPUs give attnscope's scores (bf16, after overheads)
DOWNLOAD_BYTES_PER_S = 25e6         # assumed: the result's download from NDIF
MEMORY_SHARE = 0.5                  # what the result may take of this machine's free memory


@dataclass(frozen=True)
class Travel:
    """Bytes by part, and the time they are expected to take."""
    parts: dict[str, int]
    seconds: float
    parameters: int

    @property
    def total(self) -> int:
        return sum(self.parts.values())

    def describe(self) -> str:
        said = ", ".join(f"{name} {gib(n, 2)}" for name, n in self.parts.items() if n)
        return f"{gib(self.total, 2)} will travel back ({said}) in about {duration(self.seconds)}"


def dims(config) -> tuple[int, int, int, int]:
    """(layers, query heads, key/value heads, head width) from a Hugging Face config."""
    c = config.get_text_config() if hasattr(config, "get_text_config") else config
    heads = int(c.num_attention_heads)
    kv = int(getattr(c, "num_key_value_heads", None) or heads)
    width = int(getattr(c, "head_dim", None) or c.hidden_size // heads)
    return int(c.num_hidden_layers), heads, kv, width


def model_dims(loaded) -> tuple[int, int, int, int]:
    """(layers, query heads, key/value heads, head width) of a loaded model, from its config."""
    check_kind(loaded, LoadedModel, "loaded", "a LoadedModel (engine.loading.open_model)")
    return dims(loaded.model.config)


def travel_estimate(config, tokens: int, rows: int, overview: int | None, dtype_bytes: int = 2,
                    masked: bool = False, keep_k: bool = True, parameters: int = 0) -> Travel:
    """What one job over ``tokens`` tokens brings back: k (when ``keep_k``), the log-sum-exp,
    the overview at ``overview`` pixels a side (None: none), q for ``rows`` rows (and their mask
    rows when ``masked``); its time for a model of ``parameters`` parameters."""
    if not hasattr(config, "to_dict"):
        raise InputError(f"The argument config must be a model's configuration (transformers), not {config!r:.40}.")
    check_count(tokens, "tokens")
    L, H, kv, d = dims(config)
    side = bins(tokens, overview) if overview else 0
    parts = {"k": L * kv * tokens * d * dtype_bytes if keep_k else 0,
             "log-sum-exp": L * H * tokens * 4,
             "overview": L * H * (side * side + side) * 4,
             "q rows": L * H * rows * d * dtype_bytes,
             "mask rows": L * rows * tokens if masked else 0}
    flops = 2 * parameters * tokens + (L * H * tokens * tokens * d if overview else 0)   # causal: half of 2 H T^2 Dh
    seconds = flops / SERVER_FLOPS + sum(parts.values()) / DOWNLOAD_BYTES_PER_S
    return Travel(parts, seconds, parameters)


def check_travel(travel: Travel, model: str) -> None:
    """RemoteJobError, with the numbers, for a job NDIF would stop or this machine cannot hold."""
    if travel.seconds > JOB_SECONDS:
        raise RemoteJobError(f"The job on {model} would take about {duration(travel.seconds)} (at an assumed "
                             f"{SERVER_FLOPS / 1e12:,.0f} TFLOP/s there and {DOWNLOAD_BYTES_PER_S / 1e6:,.0f} MB/s back; "
                             f"{gib(travel.total, 2)} would travel), more than NDIF's {duration(JOB_SECONDS)} limit: use a "
                             "shorter text or fewer rows.")
    free = available_memory()
    if travel.total > MEMORY_SHARE * free:
        raise RemoteJobError(f"The job on {model} would bring back {gib(travel.total)} and about {gib(free)} is free "
                             "here: use a shorter text or fewer rows.")
