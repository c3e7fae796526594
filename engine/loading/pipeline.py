"""The loader's stages, called in order: a resolved Source in, a LoadedModel on the seam out.

    1. resolve   what the user named, as a Source on this disk: done by the entry point, which
                 knows what it accepts (engine.loading.catalog.open_model: any source, a hub id
                 fetched by engine.loading.hf; hf.load_hf_model: folders and hub ids;
                 checkpoint.load_checkpoint: a file)
    2. describe  engine.loading.describe  its files: config, index, headers: one Description
    3. check     engine.loading.check     values, sizes, dtype, memory, placement: a Plan, or a refusal
    4. build     engine.loading.build     the model, its weights read and checked, on its device
    5. attach    engine.seam              a Hugging Face model's attention calls learn their sites, and
                                          the seam's answer on a short probe is checked against the
                                          model's own eager one (our own models are built on the seam)

Each stage reads what the one before handed on, never the files again; a new check goes in
check, a new file format in describe and build. Why stage 1 is the entry point's: a hub id is
fetched by engine.loading.hf, which also offers ``load_hf_model``; were resolving here, this
module and hf would import each other.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from attnscope.engine.errors import ModelLoadError, first_line
from attnscope.engine.runtime.device import input_device

if TYPE_CHECKING:
    import torch

    from attnscope.engine.loading.loaded import LoadedModel
    from attnscope.engine.loading.source import Source


def load(found: Source, device: torch.device, progress=None, stop=None, spread: bool = False) -> LoadedModel:
    """Stages 2 to 5 for ``found`` on ``device`` (``spread``: a Hugging Face model over every
    device, engine.loading.placement). ``progress`` gets engine.loading.progress.LoadProgress
    records from the build (after a download's, which took the first part of the bar); once
    ``stop()`` is true the load ends with LoadCancelled and nothing of it is kept. A refusal
    is the source's own error type: HFModelError for a folder, CheckpointError for a file."""
    from attnscope.engine.loading.build import build
    from attnscope.engine.loading.check import check
    from attnscope.engine.loading.dense_eager import fall_back
    from attnscope.engine.loading.describe import describe
    from attnscope.engine.seam.hf_attention import SiteError, attach   # torch: the pipeline imports none until it builds

    files = loaded = dev = None
    try:
        files = describe(found)                                 # 2
        plan = check(files, device, spread)                     # 3
        loaded = build(files, plan, progress, stop)             # 4
        if files.kind == "folder":                              # 5
            # where the probe's ids go: the plan's device, or, spread, where accelerate put the first module
            dev = input_device(loaded.model) if plan.spread is not None else plan.device
            if not loaded.meta.get("dense"):
                loaded.meta["notes"] = _noted(loaded.meta.get("notes"), attach(loaded.model, files.role, dev))
        return loaded
    except SiteError as exc:
        if loaded is None or files is None or files.kind != "folder" or loaded.meta.get("dense"):
            raise found.error(f"{files.folder}: {exc}") from None
        try:      # the seam cannot see this family: its own eager weights, or the seam's refusal stands
            loaded.meta["notes"] = _noted(loaded.meta.get("notes"), fall_back(loaded, files.role, dev, exc))
        except SiteError as again:
            raise found.error(f"{files.folder}: {again}") from None
        return loaded
    except ModelLoadError as exc:
        if type(exc) is not ModelLoadError:
            raise
        raise found.error(str(exc)) from None    # validation's words, in the type this kind of source raises
    except Exception as exc:
        if files is None or files.kind != "folder":
            raise
        # transformers' own code for this family failed on a folder that passed every check
        # (MPT's and Perceiver's loading in transformers 5.24): said as such, not in its words
        raise found.error(f"{files.folder}: transformers' own {files.model_type} code fails while the model is "
                          f"prepared ({first_line(exc)}), so attnscope cannot open this family with the installed "
                          "transformers.") from None


def _noted(said: str | None, notes: list[str]) -> str | None:
    """The loader's notes (``said``), then the seam's (or the fallback's): text only, so the
    loaded model is handed back from the stage that attached it, not once more here."""
    return " ".join([n for n in (said,) if n] + notes) or None
