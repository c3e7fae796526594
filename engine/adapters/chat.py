"""Chat prompts for instruction-tuned models: the tokenizer's own chat template, not a guess.

Why the template and nothing else: an instruct model (Llama-3-Instruct, Qwen-Instruct,
Gemma-it) was taught on its turns wrapped in its own special tokens; the same words as plain
text are another input, and its attention and continuation differ. So a Chat (engine.inputs)
goes through ``tokenizer.apply_chat_template`` with the generation prompt added (the reply's
opening tokens), its special tokens kept as tokens; a model whose tokenizer has no template
refuses the chat form in one sentence rather than inventing a format.
"""
from __future__ import annotations

from attnscope.engine.inputs import Chat, InputError, Prompt, check_text
from attnscope.engine.loading.loaded import LoadedModel


def chat_template(loaded) -> str | None:
    """The chat template of ``loaded``'s tokenizer, None when it has none (our own models, a
    base model's tokenizer)."""
    template = getattr(loaded.tokenizer, "chat_template", None) if loaded.is_hf else None
    return template if isinstance(template, str) and template.strip() else None


def reads_chat(loaded) -> bool:
    """Whether ``loaded`` takes a prompt as a chat: a Hugging Face decoder whose tokenizer
    carries a chat template (the window shows its chat toggle for these alone)."""
    return isinstance(loaded, LoadedModel) and loaded.role == "decoder" and chat_template(loaded) is not None


def check_prompt(loaded, text, what: str = "run", remote: bool = False):
    """``text`` checked at the engine's door (engine.inputs.check_text; a Prompt's text passed it
    when the Prompt was made, so it is not checked again); a Chat only for a model that reads
    chats (a Hugging Face decoder whose tokenizer carries a chat template), else InputError in
    one sentence. A model served by NDIF (built here without weights, engine.loading.remote_source)
    runs only through engine.remote (``remote``)."""
    if not isinstance(loaded, LoadedModel):
        raise InputError(not_a_model(loaded, what))
    if not remote and loaded.meta.get("ndif", {}).get("mode") == "ndif":
        raise InputError(f"{loaded.name} runs on NDIF and has no weights here, so nothing can {what} on it here: "
                         "a Run reads it there (attnscope record).")
    text = text.text if isinstance(text, Prompt) else check_text(text, what)
    if isinstance(text, Chat):
        if loaded.role != "decoder":
            raise InputError(f"{loaded.name} is an {loaded.role}; a chat prompt goes to a decoder (an instruction-"
                             "tuned language model). Give the text as plain text.")
        if chat_template(loaded) is None:
            raise InputError(f"{loaded.name}'s tokenizer has no chat template, so attnscope cannot know how this "
                             "model reads a chat; give the prompt as plain text.")
    return text


# What to say when an object of a class that is not a model is asked to run, by class (engine.traces
# registers its traces: "This is a recording ..."); {what} is the asked action. Read along the
# object's class hierarchy, so this room needs to know no class above it.
NOT_A_MODEL_SAYS: dict[type, str] = {}


def not_a_model(obj, what: str) -> str:
    """What to say when something that is not a model (a recording, a path) is asked to ``what``."""
    said = next((NOT_A_MODEL_SAYS[c] for c in type(obj).__mro__ if c in NOT_A_MODEL_SAYS), None)
    if said is not None:
        return said.format(what=what)
    return f"A model is needed to {what}, not a {type(obj).__name__}; open one with engine.loading.catalog.open_model."


def chat_ids(tokenizer, chat: Chat, name: str) -> list[int]:
    """The ids of ``chat`` as the tokenizer's template writes it, with the generation prompt
    (the start of the assistant's turn); the template's own special tokens (BOS, turn marks)
    included, so nothing is put in front of them."""
    from attnscope.engine.adapters.chat_limits import TemplateLimit
    from attnscope.engine.adapters.chat_process import render

    try:
        text = render(tokenizer, chat.messages)   # the template is code of the model's author: a capped child
    except TemplateLimit as exc:
        raise InputError(f"{name}'s chat template was stopped: {exc}; attnscope will not read this chat through "
                         "it (give the text as plain text).") from None
    except Exception as exc:  # noqa: BLE001 - a template is code of the model's author: say it failed
        first = (str(exc).strip().splitlines() or [type(exc).__name__])[0][:160]
        raise InputError(f"{name}'s chat template could not write this chat ({first}).") from None
    enc = tokenizer(text, add_special_tokens=False)   # as transformers' apply_chat_template(tokenize=True)
    ids = enc["input_ids"]
    ids = [int(i) for i in (ids[0] if ids and isinstance(ids[0], list) else ids)]
    if not ids:
        raise InputError(f"{name}'s chat template wrote nothing for this chat: there is nothing to read.")
    return ids


def end_ids(loaded, eos_id: int | None) -> set[int]:
    """Every id that ends a reply: the generation config's end list (an instruct model lists its
    end-of-turn tokens there, Llama-3's <|eot_id|> beside <|end_of_text|>), and ``eos_id``."""
    eos = getattr(getattr(loaded.model, "generation_config", None), "eos_token_id", None)
    listed = eos if isinstance(eos, (list, tuple)) else [eos]
    return {int(i) for i in (*listed, eos_id) if i is not None}
