"""A server's answer is data: read by an unpickler that can build tensors and plain values and
nothing else, and the API key sent only over https to the NDIF host the user named.

nnsight 0.8.1 reads a job's answer with ``torch.load(weights_only=False)``, both the result it
downloads (``RemoteBackend.finalize``) and a status frame that comes as bytes (``parse``): a
host that answers with a pickle runs that pickle's code here. ``read_answers_as_data`` makes
nnsight's RemoteBackend read both with ``load_data``, whose
unpickler finds only the globals torch's own ``weights_only`` loader allows (tensors, their
storages and dtypes, OrderedDict, ...) and nnsight's job Status; anything else is refused
before it is made, in one sentence that names the host. ``torch.load(weights_only=True)``
itself cannot be used: it does not read pickle protocol 4, which nnsight's answers use.

The key goes in nnsight's headers to ``CONFIG.API.HOST`` (the ``NDIF_HOST`` variable, else
https://api.ndif.us): ``checked_host`` refuses, before anything is sent, a host that is not an
``https://`` address; plain ``http://`` only to the very host the user named in NDIF_HOST
(engine.loading.ndif_key.key_may_go, the one rule of where the key may go).
"""
from __future__ import annotations

import functools
import io
import pickle
from urllib.parse import urlsplit

from attnscope.engine.errors import RemoteJobError
from attnscope.engine.loading.ndif_key import key_may_go

HOST_VARIABLE = "NDIF_HOST"


def shown(text: str, limit: int = 60) -> str:
    """``text`` as a message quotes it: repr'd (control characters visible), at most ``limit``."""
    said = repr(str(text))
    return said if len(said) <= limit else said[:limit - 4] + "...'"


def checked_host(host) -> str:
    """``host`` (nnsight's CONFIG.API.HOST) when the key may be sent there: an address with a host
    name, in printable ASCII, that engine.loading.ndif_key.key_may_go allows (https, or plain
    http to the very host the user named in NDIF_HOST); else RemoteJobError naming it, before
    anything is sent."""
    try:
        name = urlsplit(str(host)).hostname
    except ValueError:
        name = None
    if not (isinstance(host, str) and host.isascii() and host.isprintable() and " " not in host and name):
        raise RemoteJobError(f"The NDIF host {shown(host)} is not an https:// address with a host name, so the API key "
                             f"is not sent there and nothing was sent: set {HOST_VARIABLE} to https://<host>, or unset "
                             "it for https://api.ndif.us.")
    key_may_go(host)
    return host.rstrip("/")


@functools.lru_cache(maxsize=1)
def _allowed() -> dict:
    """"module.name" -> object: what torch's weights_only loader may build, and nnsight's Status."""
    from torch._weights_only_unpickler import _get_allowed_globals

    allowed = dict(_get_allowed_globals())
    try:
        from nnsight.schema.response import Status
        allowed["nnsight.schema.response.Status"] = Status
    except ImportError:                   # no nnsight: no status frames to read either
        pass
    return allowed


class _DataUnpickler(pickle.Unpickler):
    """pickle's own unpickler (every protocol), that finds only the allowed globals."""

    def find_class(self, module, name):
        found = _allowed().get(f"{module}.{name}")
        if found is None:
            raise pickle.UnpicklingError(f"it names {module}.{name}, which is code, not data")
        return found


class _DataPickle:
    """The ``pickle_module`` torch.load is given: every unpickler it makes is a _DataUnpickler
    (torch subclasses ``Unpickler`` for storages and asks ``load`` for an old file's magic number)."""
    Unpickler = _DataUnpickler
    UnpicklingError = pickle.UnpicklingError
    __name__ = "attnscope-data-only-pickle"

    @staticmethod
    def load(file, **kwargs):
        return _DataUnpickler(file, **kwargs).load()


def load_data(content: bytes, host: str):
    """The tensors and plain values ``content`` (a torch.save file, as NDIF answers) holds, on the
    CPU; RemoteJobError in one sentence, nothing made, when it holds anything else."""
    import torch

    try:
        # weights_only=False only so torch takes our pickle module; it is the one that refuses code
        return torch.load(io.BytesIO(content), map_location="cpu", weights_only=False, pickle_module=_DataPickle)
    except Exception as exc:
        why = str(exc).splitlines()[0][:160] if str(exc) else type(exc).__name__
        raise RemoteJobError(f"The answer from {shown(host)} is not tensors and plain values ({why}): attnscope reads "
                             "a server's answer as data only, so none of it was run or kept.") from None


def read_answers_as_data() -> None:
    """Make nnsight's RemoteBackend (and those built on it) read every answer with load_data:
    the result it downloads or is handed (``finalize``) and a status frame that comes as bytes
    (``parse``). Process-wide, on the class: what a job pickles is the model's envoy, never its
    backend, so nothing of this travels."""
    from nnsight.intervention.backends.remote import RemoteBackend
    from nnsight.schema.response import ResponseModel

    if getattr(RemoteBackend, "_attnscope_data_only", False):
        return

    def finalize(self, content: bytes):
        if self.compress:
            content = _unpacked(content, self.host)
        return load_data(content, self.host)

    def parse(self, message):
        if isinstance(message, (bytes, bytearray)):
            return ResponseModel(**_fields(load_data(bytes(message), self.host), self.host))
        return ResponseModel.model_validate_json(message)

    RemoteBackend.finalize, RemoteBackend.parse = finalize, parse
    RemoteBackend._attnscope_data_only = True


def _unpacked(content: bytes, host: str) -> bytes:
    """A compressed answer (zstd, as nnsight asks for), or RemoteJobError in one sentence."""
    import zstandard as zstd

    try:
        return zstd.ZstdDecompressor().decompress(content)
    except zstd.ZstdError as exc:
        raise RemoteJobError(f"The answer from {shown(host)} is not the compressed result asked for ({exc}): nothing "
                             "of it was run or kept.") from None


def _fields(value, host: str) -> dict:
    if not isinstance(value, dict) or not all(isinstance(k, str) for k in value):
        raise RemoteJobError(f"The answer from {shown(host)} is not a job's status: attnscope reads a server's answer "
                             "as data only, so none of it was run or kept.")
    return value
