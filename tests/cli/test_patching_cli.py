"""`attnscope patch` (issue 39): the JSON the issue names, equal to the engine's numbers; a
pairs file normalised per pair and averaged; bad input refused in one line, exit 2."""
import io
import json
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

import numpy as np
import pytest

from attnscope.engine.experiments.pairs import PromptPair, frame_pair
from attnscope.engine.experiments.patching import exact_patching, run_to_end
from attnscope.engine.loading.catalog import open_model

ROOT = Path(__file__).resolve().parents[2]
GPT = str(ROOT / "resources/checkpoints/gpt.safetensors")
CLEAN, CORRUPT = "the king is dead long live the king", "the lord is dead long live the lord"


def run_cli(*argv) -> tuple[int, dict | None, str]:
    from attnscope.cli.entry import main

    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        code = main(list(argv))
    return code, json.loads(out.getvalue()) if code == 0 else None, err.getvalue()


def test_patch_prints_the_issues_json_and_the_engines_numbers():
    code, out, err = run_cli("patch", GPT, "--clean", CLEAN, "--corrupt", CORRUPT, "--answers", " king", " lord",
                             "--what", "heads", "heads-by-pos", "resid-pre", "--json")
    assert code == 0, err
    assert "patched runs in batches of" in err                       # the estimate, on stderr
    loaded = open_model(GPT, "cpu")
    pair = frame_pair(loaded, PromptPair(CLEAN, CORRUPT, " king", " lord"))
    ref = run_to_end(exact_patching(loaded, pair, ("heads", "heads-by-pos", "resid-pre")))
    assert out["token_ids"] == {"clean": pair.clean.target_ids, "corrupt": pair.corrupt.target_ids}
    assert out["answers"] == list(pair.answers) and out["metric"] == "logit_diff" and out["method"] == "exact"
    assert out["clean"] == pytest.approx(ref.clean) and out["corrupt"] == pytest.approx(ref.corrupt)
    np.testing.assert_allclose(out["results"]["heads"], ref.results["heads"], atol=1e-6)
    assert np.array(out["results"]["heads_by_pos"]).shape == (4, 8, 4)   # [layer][position][head]
    assert np.array(out["results"]["resid_pre"]).shape == (4, 8)         # [layer][position]


def test_patch_attribution_and_dla():
    code, out, err = run_cli("patch", GPT, "--clean", CLEAN, "--corrupt", CORRUPT, "--answers", " king", " lord",
                             "--method", "attribution", "--what", "heads", "mlp-out", "--json")
    assert code == 0, err
    assert out["method"] == "attribution" and set(out["results"]) == {"heads", "mlp_out"}
    code, out, err = run_cli("patch", GPT, "--clean", CLEAN, "--corrupt", CORRUPT, "--answers", " king", " lord",
                             "--method", "dla", "--json")
    assert code == 0, err
    r = out["results"]
    assert np.sum(r["heads"]) + np.sum(r["mlp"]) + r["embed"] + r["bias"] == pytest.approx(out["clean"], abs=1e-4)


def test_a_pairs_file_is_normalised_per_pair_then_averaged(tmp_path):
    pairs = [PromptPair(CLEAN, CORRUPT, " king", " lord"),
             PromptPair("the man is dead long live the man", "the son is dead long live the son", " man", " son")]
    path = tmp_path / "pairs.tsv"
    path.write_text("".join(f"{p.clean}\t{p.corrupt}\t{p.answer}\t{p.wrong}\n" for p in pairs))
    code, out, err = run_cli("patch", GPT, "--pairs", str(path), "--what", "heads", "resid-pre", "--json")
    assert code == 0, err
    loaded = open_model(GPT, "cpu")
    each = [run_to_end(exact_patching(loaded, frame_pair(loaded, p), ("heads", "resid-pre"))) for p in pairs]
    for point in ("heads", "resid-pre"):
        mean = np.mean([r.normalised()[point] for r in each], axis=0)
        np.testing.assert_allclose(out["results"][point.replace("-", "_")], mean, atol=1e-5)
    assert out["normalised"] and [p["clean"] for p in out["pairs"]] == pytest.approx([r.clean for r in each])


@pytest.mark.parametrize("args, said", [
    (["--clean", "the king is", "--corrupt", "the lord is dead", "--answers", " a", " b"],
     "The clean text is 3 tokens and the corrupted text 4, first differing at token 2 ('king' against 'lord')"),
    (["--clean", "the king is", "--corrupt", "the lord is", "--answers", " kingdoms and", " b"],
     "The answer ' kingdoms and' is"),
    (["--clean", " ", "--corrupt", "the lord is", "--answers", " a", " b"], "There is no text to patch"),
    (["--clean", "the king is", "--answers", " a", " b"], "Give --clean TEXT, --corrupt TEXT and --answers"),
    (["--clean", "the king is", "--corrupt", "the lord is", "--answers", " a", " b", "--method", "dla",
      "--metric", "logprob"], "Direct logit attribution splits the logit difference"),
])
def test_bad_input_gets_one_line(args, said):
    code, _, err = run_cli("patch", GPT, *args, "--json")
    assert code == 2 and said in err and len(err.strip().splitlines()) == 1, err


def test_a_malformed_pairs_line_is_named(tmp_path):
    path = tmp_path / "pairs.tsv"
    path.write_text(f"{CLEAN}\t{CORRUPT}\t king\t lord\n\n{CLEAN}\t{CORRUPT}\t king\n")
    code, _, err = run_cli("patch", GPT, "--pairs", str(path), "--json")
    assert code == 2 and "pairs.tsv, line 3: expected 'clean<TAB>corrupt<TAB>answer<TAB>wrong answer'" in err
    path.write_text(f"{CLEAN}\t{CORRUPT}\t king\t lord\nthe king is\tthe lord is dead\t king\t lord\n")
    code, _, err = run_cli("patch", GPT, "--pairs", str(path), "--json")
    assert code == 2 and err.count("\n") == 1 and "Line 2: The clean text is 3 tokens" in err
    path.write_text(f"{CLEAN}\t{CORRUPT}\t king\t lord\nthe king is\tthe lord is\t king\t lord\n")
    code, _, err = run_cli("patch", GPT, "--pairs", str(path), "--what", "resid-pre", "--json")
    assert code == 2 and "Line 2's pair is 3 tokens and line 1's 8" in err


def test_an_encoder_decoder_takes_a_target_prefix_and_patches_its_cross_heads():
    translator = str(ROOT / "resources/checkpoints/translator.safetensors")
    code, out, err = run_cli("patch", translator, "--clean", "the big dog sees the small cat .",
                             "--corrupt", "the big cat sees the small dog .", "--answers", "hund", "katze",
                             "--target", "der große", "--what", "cross-heads", "encoder-heads", "--json")
    assert code == 0, err
    assert len(out["token_ids"]["target"]) == 3 and out["clean"] > 0 > out["corrupt"]
    assert np.array(out["results"]["cross_heads"]).shape == np.array(out["results"]["encoder_heads"]).shape == (3, 4)
    code, _, err = run_cli("patch", GPT, "--clean", CLEAN, "--corrupt", CORRUPT, "--answers", " king", " lord",
                           "--what", "cross-heads", "--json")
    assert code == 2 and "Nothing called cross-heads can be patched in a decoder" in err
