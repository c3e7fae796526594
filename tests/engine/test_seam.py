"""The one attention seam: every model's attention passes it, it can be changed there, and
what is computed from its recording equals transformers' eager numbers.

- ``attnscope heads MODEL --json`` on tiny random Hugging Face models of ten architectures:
  the scores equal the formulas (engine.inspection.analysis) applied to eager
  ``output_attentions`` of a reference copy fed the very ids the command reports.
- a hook at the seam changes the output (a head switched off), an empty one changes nothing.
- engine/ has no import circle and no second way of capturing attention.
"""
import ast
import io
import json
from contextlib import redirect_stdout
from pathlib import Path

import numpy as np
import pytest
import torch

from attnscope.engine.inspection.analysis import induction_scores, previous_token_scores
from attnscope.engine.kinds import CROSS, DECODER_SELF, ENCODER_SELF
from attnscope.engine.loading.demo import random_model
from attnscope.engine.seam import SeamHook, hooks, recording
from tests.helpers.hf_tiny import ROLE, tiny_folder

ROOT = Path(__file__).resolve().parents[2]
TEN = ("bert", "roberta", "distilbert", "gpt2", "gpt_neox", "llama", "mistral", "gemma2", "t5", "bart")


@pytest.fixture(scope="module")
def folders(tmp_path_factory):
    root = tmp_path_factory.mktemp("seam-tiny")
    return {arch: tiny_folder(root, arch) for arch in TEN}


def heads_json(model: str) -> dict:
    from attnscope.cli.entry import main

    out = io.StringIO()
    with redirect_stdout(out):
        assert main(["heads", model, "--json"]) == 0
    return json.loads(out.getvalue())


def eager_weights(folder, role, report) -> dict[str, np.ndarray]:
    """kind -> (L, H, T, T) from transformers' eager attention on the ids the command fed."""
    from transformers import AutoModel, AutoModelForCausalLM, AutoModelForSeq2SeqLM

    maker = {"encoder": AutoModel, "decoder": AutoModelForCausalLM, "encoder-decoder": AutoModelForSeq2SeqLM}[role]
    model = maker.from_pretrained(folder, attn_implementation="eager", dtype=torch.float32).eval()
    seqs = report["sequences"]
    with torch.no_grad():
        if role == "encoder-decoder":
            out = model(input_ids=torch.tensor([seqs[ENCODER_SELF]["token_ids"]]),
                        decoder_input_ids=torch.tensor([seqs[DECODER_SELF]["token_ids"]]), output_attentions=True)
            found = {ENCODER_SELF: out.encoder_attentions, DECODER_SELF: out.decoder_attentions}
        else:
            out = model(input_ids=torch.tensor([report["token_ids"]]), output_attentions=True)
            found = {ENCODER_SELF if role == "encoder" else DECODER_SELF: out.attentions}
    return {k: torch.stack([a[0] for a in v]).numpy() for k, v in found.items()}


@pytest.mark.parametrize("arch", TEN)
def test_heads_json_equals_the_formulas_on_eager_weights(folders, arch):
    report = heads_json(str(folders[arch]))
    half = report["half"]
    assert half >= 2 and report["token_ids"] == report["sequences"][next(iter(report["kinds"]))]["token_ids"]
    expected = eager_weights(folders[arch], ROLE[arch], report)
    assert set(report["kinds"]) == set(expected)
    for kind, w in expected.items():
        start = report["sequences"][kind]["start"]
        ids = report["sequences"][kind]["token_ids"]
        assert ids[start:start + half] == ids[start + half:start + 2 * half]   # the repeated copy, as fed
        np.testing.assert_allclose(report["kinds"][kind]["induction"], induction_scores(w, start, half), atol=1e-5)
        np.testing.assert_allclose(report["kinds"][kind]["previous"], previous_token_scores(w, start, 2 * half),
                                   atol=1e-5)


def test_heads_json_for_our_translator_names_both_sequences():
    from attnscope.cli.entry import main

    report = heads_json("random-translator")
    assert set(report["kinds"]) == {ENCODER_SELF, DECODER_SELF}
    assert report["sequences"][DECODER_SELF]["start"] == 1            # after [BOS]
    assert np.array(report["kinds"][DECODER_SELF]["induction"]).shape == (2, 4)
    assert main(["heads", "/nonexistent/model", "--json"]) == 2


class SwitchOff(SeamHook):
    """Head ``head`` of layer 0 contributes nothing (its output set to zero)."""

    def __init__(self, kind, head):
        self.kind, self.head = kind, head

    def edits(self, site):
        return site is not None and site.kind == self.kind and site.layer == 0

    def edits_output_only(self, site):
        return True

    def output(self, call, out):
        out = out.clone()
        out[:, self.head] = 0
        return out


@pytest.mark.parametrize("family", ["gpt", "translator", "bert"])
def test_a_hook_at_the_seam_changes_the_output_and_an_empty_one_does_not(family):
    loaded = random_model(family, seed=5)
    model = loaded.model.eval()
    ids = torch.tensor([[5, 6, 7, 8, 9]])
    run = (lambda: model(ids, ids).logits) if family == "translator" else (
        (lambda: model(ids).logits) if family == "gpt" else (lambda: model(ids).hidden))
    kind = ENCODER_SELF if family != "gpt" else DECODER_SELF
    with torch.no_grad():
        plain = run()
        with hooks(SeamHook()):
            assert torch.equal(run(), plain)                       # bit-identical
        with hooks(SwitchOff(kind, 1)):
            changed = run()
    assert not torch.allclose(changed, plain)


def test_a_recording_sees_every_site_the_adapter_names():
    from attnscope.engine.adapters import adapter_for

    for family, kinds in (("translator", (ENCODER_SELF, DECODER_SELF, CROSS)), ("gpt", (DECODER_SELF,))):
        loaded = random_model(family)
        adapter = adapter_for(loaded)
        framed = adapter.frame("the big dog", target="der hund")
        with torch.no_grad(), recording() as rec:
            adapter.forward(framed)
        assert set(rec.calls) == set(adapter.sites()) and set(rec.kinds()) == set(kinds)


def _engine_imports() -> dict[str, set[str]]:
    mods = {}
    for f in (ROOT / "engine").rglob("*.py"):
        name = ".".join(f.relative_to(ROOT).with_suffix("").parts).removesuffix(".__init__")
        deps = set()
        for node in ast.walk(ast.parse(f.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                deps.add(node.module)
            elif isinstance(node, ast.Import):
                deps.update(a.name for a in node.names)
        mods[name] = {d for d in deps if d.startswith("attnscope.engine.") and d != name}
    return mods


def test_engine_has_no_import_circle():
    """Function-local imports count: a circle hidden inside a function is still a circle."""
    mods = _engine_imports()

    def reach(start):
        seen, todo = set(), [start]
        while todo:
            for d in mods.get(todo.pop(), ()):
                if d not in seen:
                    seen.add(d)
                    todo.append(d)
        return seen
    assert sorted(m for m in mods if m in reach(m)) == []


def test_attention_is_captured_in_one_place():
    """No weights returned by forwards, no pre-hooks re-projecting, no patched eager function."""
    found = []
    # The one exception: activation patching reads and edits the residual stream at a block's
    # input (and the unembedding's), never an attention module's (engine/experiments/points.py).
    # The dense fallback (engine/loading/dense_eager.py: the loader's probe and every draw) is the one
    # other door: a family whose attention never reaches the seam is opened eager and drawn from its
    # own returned weights, read in that one module.
    # A gated model's heads are read and edited where its output projection reads them, through
    # engine/seam/gated.py alone (Qwen3.5: o_proj((p·v) ⊙ σ(g))).
    block_inputs = ROOT / "engine" / "experiments" / "points.py"
    gated = ROOT / "engine" / "seam" / "gated.py"
    dense = (ROOT / "engine" / "loading" / "dense_eager.py",)
    for f in (ROOT / "engine").rglob("*.py"):
        text = f.read_text(encoding="utf-8")
        for needle in ("output_attentions=True", "need_weights", "register_forward_pre_hook",
                       "eager_attention_forward", 'attn_implementation="eager"'):
            excused = (f in (block_inputs, gated) and needle == "register_forward_pre_hook") or (
                f in dense and needle in ("output_attentions=True", 'attn_implementation="eager"'))
            if needle in text and not excused:
                found.append(f"{f.relative_to(ROOT)}: {needle}")
    assert found == []
