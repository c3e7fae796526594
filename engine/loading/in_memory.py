"""A transformers model already in memory (a notebook's ``AutoModelForCausalLM``), opened through
the same checks as a folder: the config's role, text-only and sizes (check.py), every weight
finite (build.py), then the seam attached and the door's probe against the model's own eager
attention (engine.seam.hf_attention.attach). Nothing is read from a disk.

Why a stage of its own: the folder pipeline's describe and build read files; a model in memory
has none, but must pass every check a folder's model passes, or a script could show numbers the
window would have refused. The model is switched to attnscope's attention in place (as
``attnscope.load`` of a folder builds it so); its outputs are the same.
"""
from __future__ import annotations

from attnscope.engine.errors import HFModelError
from attnscope.engine.loading.build import FAMILY_OF_ROLE, SEAM, check_tensors, register_seam
from attnscope.engine.loading.check import check_hf_sizes, check_text_model
from attnscope.engine.loading.describe import hf_role
from attnscope.engine.loading.loaded import LoadedModel
from attnscope.engine.seam.hf_attention import SiteError, attach


def open_in_memory(model, tokenizer, device) -> LoadedModel:
    """``model`` (a transformers PreTrainedModel) with ``tokenizer`` on ``device`` (a torch.device),
    checked as a folder's would be; HFModelError (one sentence) otherwise."""
    from transformers import PreTrainedModel, PreTrainedTokenizerBase

    if not isinstance(model, PreTrainedModel):
        raise HFModelError(f"A model in memory must be a transformers PreTrainedModel, not a {type(model).__name__}.")
    name = str(getattr(model.config, "_name_or_path", "") or type(model).__name__)
    if not isinstance(tokenizer, PreTrainedTokenizerBase):
        raise HFModelError(f"{name}: its tokenizer must be a transformers tokenizer (AutoTokenizer), not a "
                           f"{type(tokenizer).__name__}.")
    config = model.config
    role = hf_role(getattr(config, "model_type", None), name)
    check_text_model(config, name)
    check_hf_sizes(config, name)
    check_tensors(name, model.named_parameters())
    if getattr(model, "hf_device_map", None):
        raise HFModelError(f"{name} is spread over devices by accelerate; open it from its folder with the device "
                           "'spread' instead.")
    register_seam()
    try:
        model.set_attn_implementation(SEAM)
    except (KeyError, ValueError) as exc:
        raise HFModelError(f"{name}: {type(model).__name__} computes attention in its own classes, so attnscope's "
                           f"seam cannot see it ({str(exc)[:80]}); open it from its folder, where its own attention "
                           "weights can be drawn.") from None
    model.to(device).eval()
    meta = {"source": name, "hf_config": config.to_dict(), "model_type": config.model_type, "role": role,
            "folder": None, "in_memory": True}
    family = "hf-bert" if config.model_type == "bert" else FAMILY_OF_ROLE[role]
    loaded = LoadedModel(name, family, model, tokenizer, meta=meta)
    try:
        notes = attach(model, role, device)
    except SiteError as exc:
        raise HFModelError(f"{name}: {exc}") from None
    if notes:
        loaded.meta["notes"] = " ".join(notes)
    return loaded
