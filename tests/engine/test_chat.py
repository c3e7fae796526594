"""Chat prompts (issue 40): an instruct model reads a chat through its tokenizer's own template,
with the reply's start added; the template's special tokens are tokens on the axes; the reply
stops at every end-of-turn id the generation config lists; a tokenizer without a template, or a
model that is not a decoder, refuses the chat form in one sentence."""
import json

import pytest

from attnscope.engine.inputs import Chat, InputError

from tests.helpers.hf_tiny import TURN_TOKENS
from attnscope.engine.decoding.greedy import frame
from attnscope.engine.traces import reading


@pytest.fixture(scope="module")
def chat_folder(tmp_path_factory):
    """The tiny Llama with a chat template of our own (tests/helpers/hf_tiny.py)."""
    from tests.helpers.hf_tiny import tiny_chat_folder

    folder = tiny_chat_folder(tmp_path_factory.mktemp("chat"))
    assert (folder / "chat_template.jinja").exists() or "chat_template" in (folder / "tokenizer_config.json").read_text()
    return folder


@pytest.fixture(scope="module")
def chat_model(chat_folder):
    from attnscope.engine.loading.catalog import open_model

    return open_model(str(chat_folder), "cpu")


def test_a_chat_goes_through_the_tokenizers_own_template(chat_model):
    from attnscope.engine.adapters import adapter_for
    from attnscope.engine.traces.tracing import trace_text

    tok = chat_model.tokenizer
    chat = Chat.of("the dog sees the cat", system="be brief")
    want = tok.apply_chat_template(chat.messages, add_generation_prompt=True, tokenize=True, return_dict=True)
    framed = frame(adapter_for(chat_model), chat)
    assert framed.target_ids == list(want["input_ids"])
    assert framed.target_ids[0] == tok.bos_token_id and framed.target_ids.count(tok.bos_token_id) == 1
    tokens = reading.query_tokens(trace_text(chat_model, chat), "decoder self")
    for special in TURN_TOKENS[:3]:
        assert special in tokens                       # each turn mark one token, shown as itself
    assert tokens[-1] == "<|assistant|>"               # the reply's start: what the model continues
    plain = reading.query_tokens(trace_text(chat_model, "the dog sees the cat"), "decoder self")
    assert not any(t in plain for t in TURN_TOKENS)


def test_the_reply_stops_at_every_end_of_turn_id(chat_model):
    from attnscope.engine.decoding.records import DecodeSettings
    from attnscope.engine.decoding.session import decode_all

    end = chat_model.tokenizer.convert_tokens_to_ids("<|end|>")
    result = decode_all(chat_model, Chat.of("the dog"), DecodeSettings(max_new_tokens=12))
    assert len(result.steps) == 1 and result.steps[-1].token_id == end     # <|end|> is not the tokenizer's eos
    assert result.steps[-1].finished and result.text == ""


def test_the_cli_reads_a_chat_from_a_file(chat_folder, tmp_path, capsys):
    from attnscope.cli.entry import main

    (tmp_path / "prompt.txt").write_text("the dog sees the cat")
    assert main(["generate", str(chat_folder), "--text-file", str(tmp_path / "prompt.txt"), "--chat",
                 "--system", "be brief", "--max-new-tokens", "4"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["prompt_tokens"][:2] == ["<s>", "<|system|>"] and out["prompt_tokens"][-1] == "<|assistant|>"
    assert main(["record", str(chat_folder), "--text", "hi", "--chat", "--out", str(tmp_path / "r")]) == 0
    from attnscope.engine.traces.recording_file import load_recording
    assert load_recording(tmp_path / "r.safetensors").target_tokens[-1] == "<|assistant|>"


def test_a_model_without_a_template_refuses_the_chat_form_in_one_sentence(tmp_path, capsys):
    from attnscope.engine.loading.catalog import open_model
    from attnscope.engine.loading.demo import random_model
    from attnscope.engine.traces.tracing import trace_text
    from attnscope.cli.entry import main
    from tests.helpers.hf_tiny import tiny_folder

    base = open_model(str(tiny_folder(tmp_path, "llama")), "cpu")
    for loaded in (base, random_model("gpt", layers=1, heads=2, width=16)):
        with pytest.raises(InputError, match="has no chat template") as err:
            trace_text(loaded, Chat.of("the dog"))
        assert "\n" not in str(err.value)
    with pytest.raises(InputError, match="a chat prompt goes to a decoder"):
        trace_text(random_model("translator", layers=1, heads=2, width=16), Chat.of("the dog"))
    capsys.readouterr()
    assert main(["generate", str(tmp_path / "llama"), "the dog", "--chat"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "no chat template" in err[0]
    assert main(["generate", str(tmp_path / "llama"), "the dog", "--system", "x"]) == 2


@pytest.mark.parametrize("chat, phrase", [(Chat((("user", "a\ud800b"),)), "lone surrogate"),
                                          (Chat((("user", "hi"), ("assistant", "yo"))), "the last is the user's"),
                                          (Chat((("robot", "hi"),)), "a turn is system, user, assistant"),
                                          (Chat(()), "turns of"), (Chat((("user", "  "),)), "no text")])
def test_a_malformed_chat_is_one_sentence(chat, phrase):
    from attnscope.engine.inputs import check_text

    with pytest.raises(InputError, match=phrase):
        check_text(chat)


def test_patch_reads_both_texts_as_chats(chat_folder, chat_model, capsys):
    """`attnscope patch --chat [--system]`: the clean and corrupted texts are each a user's turn
    through the model's template, as the window's Patching panel reads them; --system alone
    is one sentence."""
    from attnscope.engine.adapters import adapter_for
    from attnscope.cli.entry import main

    args = ["patch", str(chat_folder), "--clean", "the cat sat", "--corrupt", "the dog sat",
            "--answers", "id:5", "id:6", "--json"]
    assert main(args + ["--chat", "--system", "be brief"]) == 0
    out = json.loads(capsys.readouterr().out)
    adapter = adapter_for(chat_model)
    for side, words in (("clean", "the cat sat"), ("corrupt", "the dog sat")):
        assert out["token_ids"][side] == frame(adapter, Chat.of(words, system="be brief")).target_ids
    assert main(args + ["--system", "be brief"]) == 2
    assert "--system is a turn of a chat" in capsys.readouterr().err
