"""`attnscope atlas ... --chat`: each document read as the user's turn of a chat through the
model's own chat template (engine.adapters.chat), and refused in one sentence for a model
without one."""
from __future__ import annotations

from attnscope.engine.atlas import build, load_state
from attnscope.engine.atlas.read import means
from attnscope.engine.inspection.statistics import NAMES
from attnscope.engine.loading.catalog import open_model
from tests.helpers.hf_tiny import tiny_chat_folder, tiny_folder

TEXT = "the cat sat on the mat and the dog ran to the red mat\n" * 6
LENGTH = 40


def test_each_document_is_a_user_turn_of_the_template(tmp_path, monkeypatch):
    from attnscope.cli.entry import main

    corpus = tmp_path / "corpus.txt"
    corpus.write_text(TEXT, encoding="utf-8")
    folder = tiny_chat_folder(tmp_path)
    tok = open_model(str(folder), "cpu").tokenizer
    seen = []
    real = build.add_document
    monkeypatch.setattr(build, "add_document", lambda state, adapter, framed, *a: seen.append(framed.target_ids)
                        or real(state, adapter, framed, *a))
    out = tmp_path / "chat.safetensors"
    assert main(["--device", "cpu", "atlas", str(folder), "--corpus", str(corpus), "--out", str(out),
                 "--length", str(LENGTH), "--docs", "2", "--chat"]) == 0
    assert len(seen) == 2
    for ids in seen:
        text = tok.decode(ids)
        assert text.startswith(tok.bos_token + "<|user|>") and text.endswith("<|end|><|assistant|>"), text
        assert "cat" in text and len(ids) <= LENGTH
    state = load_state(out)
    assert state.meta["chat"] is True and state.docs_done == 2
    got = means(state)
    assert all(name in got for name in NAMES)
    # the same file resumed without --chat is another atlas: refused in one sentence
    assert main(["--device", "cpu", "atlas", str(folder), "--corpus", str(corpus), "--out", str(out),
                 "--length", str(LENGTH), "--docs", "3"]) == 2


def test_a_model_without_a_template_is_one_sentence(tmp_path, capsys):
    from attnscope.cli.entry import main

    corpus = tmp_path / "corpus.txt"
    corpus.write_text(TEXT, encoding="utf-8")
    folder = tiny_folder(tmp_path, "llama")
    capsys.readouterr()                   # what building the folder said
    assert main(["--device", "cpu", "atlas", str(folder), "--corpus", str(corpus), "--out",
                 str(tmp_path / "a.safetensors"), "--length", str(LENGTH), "--chat"]) == 2
    err = capsys.readouterr().err.strip()
    assert "no chat template" in err and "--chat" in err and len(err.splitlines()) == 1 and "Traceback" not in err
    assert not (tmp_path / "a.safetensors").exists()
