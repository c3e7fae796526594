"""The broken inputs are written once per test session (a few seconds) and shared."""
import pytest


@pytest.fixture(scope="session")
def bad_cases(tmp_path_factory):
    from tests.bad_inputs.cases import build_all

    return build_all(tmp_path_factory.mktemp("bad-inputs"), bomb_mib=256)


@pytest.fixture(scope="module")
def tokenizer(tmp_path_factory):
    """A tiny Llama tokenizer with a chat template (tests.helpers.hf_tiny), for the chat-template tests."""
    from transformers import AutoTokenizer

    from tests.helpers.hf_tiny import tiny_chat_folder

    return AutoTokenizer.from_pretrained(str(tiny_chat_folder(tmp_path_factory.mktemp("chat"))))
