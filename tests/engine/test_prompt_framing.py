"""A causal LM's prompt is what the user wrote, framed as the model was trained: with the
tokenizer's leading specials (BOS) and never with the end token a tokenizer appends
(``<s> ... </s>``, ``[CLS] ... [SEP]``). Otherwise GPT-2 continues with nothing and Llama
with other tokens than ``model.generate`` on the prompt the user means."""
import shutil

import pytest
import torch

from attnscope.engine.decoding.session import DecodeSettings, decode_all
from attnscope.engine.loading.catalog import open_model
from attnscope.engine.traces.tracing import trace_text
from tests.helpers.hf_tiny import tiny_folder

TEXT = "the big dog sees the small cat"


@pytest.fixture(scope="module", params=["gpt2", "llama"])
def appending(request, tmp_path_factory):
    """A tiny decoder whose tokenizer frames every text as <s> ... </s>."""
    from tokenizers import processors
    from transformers import AutoTokenizer

    root = tmp_path_factory.mktemp("framing")
    folder = root / f"{request.param}-appends-eos"
    shutil.copytree(tiny_folder(root, request.param), folder)
    tok = AutoTokenizer.from_pretrained(folder)
    tok.backend_tokenizer.post_processor = processors.TemplateProcessing(
        single="<s> $A </s>", special_tokens=[("<s>", 1), ("</s>", 2)])
    tok.save_pretrained(folder)
    assert AutoTokenizer.from_pretrained(folder)(TEXT)["input_ids"][-1] == 2
    return open_model(str(folder), "cpu")


def test_greedy_continuation_equals_generate_on_the_prompt_without_the_end_token(appending):
    loaded = appending
    tok = loaded.tokenizer
    prompt = [1] + tok(TEXT, add_special_tokens=False)["input_ids"]            # <s> + the text, no </s>
    result = decode_all(loaded, TEXT, DecodeSettings(max_new_tokens=6))
    assert result.steps[0].output_ids is not None
    from transformers import AutoModelForCausalLM
    reference = AutoModelForCausalLM.from_pretrained(loaded.meta["source"], attn_implementation="eager").eval()
    with torch.no_grad():
        generated = reference.generate(torch.tensor([prompt]), max_new_tokens=6, do_sample=False, num_beams=1,
                                       pad_token_id=0)[0].tolist()[len(prompt):]
    ours = result.steps[-1].output_ids
    assert ours == generated[:len(ours)]


def test_the_runs_last_row_is_the_prompts_last_real_token(appending):
    trace = trace_text(appending, TEXT)
    assert trace.target_tokens[0] == "<s>" and trace.target_tokens[-1] == "cat"
    assert "</s>" not in trace.target_tokens
