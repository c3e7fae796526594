"""One nnsight trace a job: the attention ops found from the model's source, the job sent, its
failures said in one sentence.

nnsight is imported here only, the first time an ``ndif:`` model runs. The model is wrapped as
it was opened (engine.loading: real weights under ATTNSCOPE_NDIF=local, the meta device for
NDIF) in nnsight's ``TransformersModel``; its attention modules are those whose ``forward``
calls transformers' attention interface, found by reading the source nnsight instruments
(``.source``): the call that hands over ``(self, q, k, v, mask, ..., scaling=...)``. No table
of op names: that name changes between transformers versions (``attention_interface_1`` in
5.x, after the line that looks the interface up).

Under ``ATTNSCOPE_NDIF=local`` a job runs with nnsight's ``remote="local"``: serialised exactly
as for NDIF (our code shipped by value, ``nnsight.register``), read back with attnscope's own
modules hidden, then run here. Otherwise it goes to NDIF with the API key from ``NDIF_API_KEY``
(or nnsight's own configuration); the key is never printed, logged or kept in a trace.
"""
from __future__ import annotations

import ast
import contextlib
import copyreg
import re
import time
from contextvars import Context, ContextVar
from dataclasses import dataclass, field
from pathlib import Path

from attnscope.engine.errors import RemoteJobError, first_line
from attnscope.engine.inputs import check_kind
from attnscope.engine.interventions.spec import notes_of
from attnscope.engine.loading.hub_cache import looks_like_hub_id
from attnscope.engine.loading.loaded import LoadedModel
from attnscope.engine.loading.remote_source import KEY_VARIABLE, MODE_VARIABLE, api_key
from attnscope.engine.remote.answers import checked_host, read_answers_as_data, shown


def remote_of(loaded: LoadedModel) -> dict | None:
    """What engine.loading noted of an ``ndif:`` model ({"model": hub id or folder, "mode":
    "local" or "ndif"}), or None for a model that runs here."""
    check_kind(loaded, LoadedModel, "loaded", "a LoadedModel (engine.loading.open_model)")
    return loaded.meta.get("ndif")


@dataclass
class Job:
    """What one job brought back, and what it cost."""
    layers: list[dict]                 # per attention layer, engine.remote.server.reduce_call's dict
    seconds: float                     # from sending to the last byte back
    received: int                      # bytes of tensors that travelled back
    notes: list[str] = field(default_factory=list)


class Session:
    """An ``ndif:`` model as nnsight sees it: the wrapped model, its attention ops, and the jobs."""

    def __init__(self, loaded: LoadedModel):
        import nnsight
        from nnsight import CONFIG, TransformersModel

        import attnscope.engine as engine
        nnsight.register(engine)                         # our server-side code travels by value
        _keep_bindings_loaded()
        read_answers_as_data()                           # a server's answer never runs code here
        copyreg.pickle(ContextVar, _reduce_context_var)  # and with it the seam's per-thread hooks
        CONFIG.APP.REMOTE_LOGGING = False                # nnsight's status lines would go to stdout
        self.loaded, self.info = loaded, remote_of(loaded)
        self.local = self.info["mode"] == "local"
        self._check_key()
        # Here: the model opened for real. For NDIF: nnsight's own meta build of the same name (the
        # key NDIF knows it by), its weights never read; loaded.model is the same shapes on meta.
        if self.local:
            self.model = TransformersModel(loaded.model, tokenizer=loaded.tokenizer)
        else:
            hub_id = hub_id_of(self.info["model"])
            if hub_id is None:
                raise RemoteJobError(f"NDIF knows models by their hub id (owner/name), and {self.info['model']} is a "
                                     f"folder of no hub repository: open ndif:<hub id>, or run the folder here with "
                                     f"{MODE_VARIABLE}=local.")
            self.model = TransformersModel(loaded.meta["folder"], task="text-generation", tokenizer=loaded.tokenizer)
            self.model.repo_id = hub_id
            model_key(self.model, hub_id)               # the hub's lookup, before any job (nnsight keeps it)
        self.ops = attention_ops(self.model)
        self.last_seconds: float | None = None
        self.shipped: set = set()            # local mode: the kinds of job already read back as NDIF would
        if not self.ops:
            raise RemoteJobError(f"{self.info['model']}: no attention module calls transformers' attention "
                                 "interface in its forward, so attnscope cannot read its attention remotely.")

    def run(self, ids: list[int], rows: tuple[int, int] | None, overviews: list[tuple[int, str]],
            keep_k: bool = True, interventions=None) -> Job:
        """One trace over ``ids``: per layer, server.reduce_call with ``rows``, ``overviews``;
        with ``interventions`` (engine.interventions.Interventions, not empty) each attention
        op is skipped for the seam's output under their hooks (server.changed)."""
        import nnsight
        import torch

        from attnscope.engine.remote.server import changed, layer_call, reduce_call

        model, ops = self.model, self.ops
        spec = interventions or None
        input_ids = torch.tensor([ids])
        with self.sending(spec is not None) as remote:
            with model.trace(input_ids, remote=remote):
                made = spec.hooks() if spec is not None else []          # made there: one set for the forward
                layers = []
                for layer, (path, op) in enumerate(ops):
                    node = getattr(model.get(path).source, op)
                    args, kwargs = node.inputs
                    call = layer_call(args, kwargs, layer)
                    if made:
                        output, call = changed(call, made)
                        node.skip((output, None))
                    layers.append(reduce_call(call, rows, overviews, keep_k))
                said = notes_of(made)
                nnsight.save(layers)
                nnsight.save(said)
        return Job(layers, self.last_seconds, received_bytes(layers), list(said))

    @contextlib.contextmanager
    def sending(self, kind):
        """Around one job of ``kind`` (a Run with or without interventions, or another job such
        as engine.experiments' patching: the code shipped differs by kind): the key checked,
        nnsight's ``remote`` for it yielded, its failures said in one sentence (explain), its
        time kept in ``last_seconds``."""
        self._check_key()
        start = time.perf_counter()
        try:
            yield self._where(kind)
        except RemoteJobError:
            raise
        except Exception as exc:                      # the server's answer, or the network's
            raise explain(exc, self.info["model"], self.local) from None
        self.last_seconds = time.perf_counter() - start
        self.shipped.add(kind)

    def _where(self, kind):
        """nnsight's ``remote``: True (NDIF); here, "local" for the first job of its ``kind``,
        serialised and read back as NDIF would with attnscope's modules hidden; later jobs of
        that kind run the same trace here without the round trip (False). nnsight's stand-in
        hides those modules process-wide while it reads a job back, which a window's other
        threads importing meanwhile must see at most once."""
        if not self.local:
            return True
        return False if kind in self.shipped else "local"

    def _check_key(self) -> None:
        """RemoteJobError when NDIF would be asked without an API key, or at a host the key may
        not go to (engine.remote.answers.checked_host; never said: the key)."""
        if self.local:
            return
        from nnsight import CONFIG

        self.host = checked_host(CONFIG.API.HOST)     # first: a host the key may not go to never gets it
        # The settings' or NDIF_API_KEY, checked (engine.loading.ndif_key): always ours, never nnsight's own
        # read of the variable, so a key of blanks is "no key is set" rather than a blank key sent.
        CONFIG.API.APIKEY = api_key()
        if not CONFIG.API.APIKEY:
            raise RemoteJobError(f"No NDIF API key is set: put yours in File > NDIF API Key… or in the {KEY_VARIABLE} "
                                 "environment variable (get one at https://login.ndif.us), then run again.")


def model_key(model, hub_id: str) -> str:
    """nnsight's key of ``model`` (its hub id as the hub spells it, asked of the hub once): what
    NDIF knows it by. RemoteJobError in one sentence, nothing sent to NDIF, when the hub cannot
    be asked (offline mode, no network): that lookup is the hub's, not NDIF's."""
    try:
        return model.to_model_key()
    except Exception as exc:
        from huggingface_hub.errors import OfflineModeIsEnabled

        if isinstance(exc, OfflineModeIsEnabled) or "offline mode" in str(exc).lower():
            why = "the Hugging Face hub is in offline mode (HF_HUB_OFFLINE)"
        else:
            why = f"the Hugging Face hub could not be asked ({first_line(exc, 120)})"
        raise RemoteJobError(f"{hub_id}'s name as NDIF knows it could not be fetched from the hub: {why}; nothing was "
                             f"sent to NDIF. Allow the hub, or run the folder here with {MODE_VARIABLE}=local.") from None


_NO_DEFAULT = "<no default>"


def _reduce_context_var(var: ContextVar):
    """A ContextVar as pickle sends it: its name and default (read in a fresh context), made
    again where the job runs. The seam keeps its hooks in one (engine.seam.attend: per thread
    of work), and code shipped by value takes its module's globals with it."""
    return _context_var, (var.name, Context().run(var.get, _NO_DEFAULT))


def _context_var(name: str, default) -> ContextVar:
    none = isinstance(default, str) and default == _NO_DEFAULT
    return ContextVar(name) if none else ContextVar(name, default=default)


# Left loaded while nnsight's local stand-in reads a job back: it takes every module a server
# lacks out of sys.modules for that moment and puts them back, and with the Qt bindings among
# them, widgets made after a job crashed on show() (a segfault, 4 runs in 4 here). No job ever
# uses them; attnscope's own modules stay hidden, as they are on the server.
BINDINGS = ("PySide6", "shiboken6", "pyqtgraph")


def _keep_bindings_loaded() -> None:
    from nnsight.intervention.backends import local

    local._SERVER_MODULES.update(BINDINGS)


def served_models() -> list[str]:
    """The hub ids of the language models NDIF runs now (its /status: RUNNING, text generation),
    sorted; [] where NDIF cannot be reached (nnsight's own "service down" line kept off stderr)."""
    import contextlib
    import io

    from nnsight import ndif

    with contextlib.redirect_stderr(io.StringIO()):
        try:
            deployments = ndif.status().deployments
        except Exception:                 # an answer nnsight cannot read: nothing to list
            return []
    return sorted({d["repo_id"] for d in deployments.values()
                   if d.get("state") == "RUNNING" and d.get("task") in (None, "text-generation")})


def hub_id_of(name: str) -> str | None:
    """The hub id an ``ndif:`` name stands for: the name itself, or a Hugging Face cache
    snapshot's (.../models--owner--name/snapshots/...); None for a folder of no repository."""
    path = Path(name).expanduser()
    if not path.exists() and looks_like_hub_id(name):
        return name
    for part in path.resolve().parts:
        if part.startswith("models--") and part.count("--") >= 2:
            return part.removeprefix("models--").replace("--", "/", 1)
    return None


def attention_ops(model) -> list[tuple[str, str]]:
    """(module path, op name) of each attention call, in the order the forward runs them: the
    modules whose forward hands ``(self, q, k, v, mask, ..., scaling=...)`` to a function,
    that call's name read from nnsight's own instrumentation of the forward (``.source``)."""
    found, by_class = [], {}
    for name, module in model._module.named_modules():
        cls = type(module)
        if cls not in by_class:
            by_class[cls] = _interface_line(cls)
        line = by_class[cls]
        if line is None or not name:
            continue
        envoy = model.get(name)
        ops = [op for op in envoy.source if op.line == line[0] and op.name.rsplit("_", 1)[0] == line[1]]
        if ops:
            found.append((name, ops[-1].name))          # the outer call of that line: numbered last
    return found


def _interface_line(cls) -> tuple[int, str] | None:
    """(line in the forward's source, callee's dotted name joined by "_") of the call in
    ``cls.forward`` that looks like transformers' attention interface, or None."""
    import inspect
    import textwrap

    try:
        source = textwrap.dedent(inspect.getsource(cls.forward))
    except (OSError, TypeError):
        return None
    if "scaling" not in source:
        return None
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Call) and len(node.args) >= 5 and isinstance(node.args[0], ast.Name) \
                and node.args[0].id == "self" and any(k.arg == "scaling" for k in node.keywords):
            return node.lineno, "_".join(_dotted(node.func))
    return None


def _dotted(expr) -> list[str]:
    """``a.b.c`` -> ["a", "b", "c"] (a subscript is passed through), as nnsight names ops."""
    parts = []
    while True:
        if isinstance(expr, ast.Attribute):
            parts.append(expr.attr)
            expr = expr.value
        elif isinstance(expr, ast.Subscript):
            expr = expr.value
        elif isinstance(expr, ast.Name):
            return [expr.id, *parts[::-1]]
        else:
            return parts[::-1]


def received_bytes(value) -> int:
    """Bytes of the tensors in ``value`` (dicts, lists, tuples of them)."""
    import torch

    if isinstance(value, torch.Tensor):
        return value.numel() * value.element_size()
    if isinstance(value, dict):
        return sum(received_bytes(v) for v in value.values())
    if isinstance(value, (list, tuple)):
        return sum(received_bytes(v) for v in value)
    return 0


def client_version() -> str:
    from importlib.metadata import version

    return version("nnsight")


def explain(exc: BaseException, model: str, local: bool = False) -> RemoteJobError:
    """A job's failure as one sentence: a missing or refused key, versions that differ, a
    time-out, a model not served, the network; else NDIF's own first line (the key, were it
    ever echoed there, blanked)."""
    said = first_line(exc)
    key = api_key() or _configured_key()
    if key and len(key) >= 8:              # a real key; a letter or two would blank words
        said = said.replace(key, "***")
    low, kind = said.lower(), type(exc).__name__.lower()
    if "api key" in low or "api-key" in low or "apikey" in low or "unauthorized" in low or " 401" in low:
        return RemoteJobError(f"NDIF refused the API key: check the one in File > NDIF API Key… or {KEY_VARIABLE}.")
    if "version" in low:
        mine = client_version()
        theirs = [v for v in re.findall(r"\d+\.\d+(?:\.\d+)?(?:[a-z]+\d*)?", said) if v != mine]
        server = theirs[0] if theirs else "another version"
        return RemoteJobError(f"NDIF runs nnsight {server} and this machine nnsight {mine}: install the same "
                              f"version (pip install 'nnsight=={server}') and run again.")
    if any(w in low for w in ("timed out", "time limit", "timeout", "exceeded")):
        return RemoteJobError(f"The job on {model} ran past NDIF's time limit and was stopped: ask for fewer rows "
                              "or a shorter text.")
    if any(w in low for w in ("not found", "not deployed", "not served", "not running", "no model", "unknown model")):
        return RemoteJobError(f"NDIF does not serve {model} now ({said}): see https://nnsight.net/status for the "
                              "models it runs.")
    network = isinstance(exc, OSError) or "connect" in kind or any(
        w in low for w in ("connection refused", "failed to send request", "name or service not known",
                           "network is unreachable", "failed to establish", "connection reset"))
    if network:
        host = getattr(getattr(_configured("CONFIG"), "API", None), "HOST", None)
        at = f" at {shown(host)}" if host else ""
        return RemoteJobError(f"NDIF{at} could not be reached ({said}): check the network, or run with "
                              f"{MODE_VARIABLE}=local to try the same job on this machine.")
    where = "here, in nnsight's local stand-in for NDIF" if local else "on NDIF"
    return RemoteJobError(f"The job on {model} failed {where}: {said}")


def _configured(name: str):
    """nnsight's ``name`` if nnsight is imported (never imported for this), else None."""
    import sys

    return getattr(sys.modules.get("nnsight"), name, None)


def _configured_key() -> str | None:
    """nnsight's own configured key, if nnsight is imported."""
    return getattr(getattr(_configured("CONFIG"), "API", None), "APIKEY", None)
