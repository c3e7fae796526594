"""Every broken or hostile input gets one clear sentence (issue #14).

Each case of ``cases.build_all`` goes through the window's loader (engine.loading.catalog.open_model)
and the CLI (main(), in-process): the loader raises the one ModelLoadError naming the file,
the CLI exits 2 with one line on stderr and no traceback; no code from the input runs, no
file named only in metadata is read, memory and time stay bounded. A few representative
cases also run as real processes under a 3 GiB address-space limit.
"""
import collections
import json
import os
import resource
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from tests.bad_inputs.cases import TEXTS
from tests.bad_inputs.measure import MEMORY_LIMIT, child, judge

ROOT = Path(__file__).resolve().parents[2]
CATEGORIES = ["hf-folder", "config", "nanogpt", "memory", "code", "metadata", "garbage", "damaged", "text", "option",
              "recording"]


def test_the_generator_covers_every_kind(bad_cases):
    counts = collections.Counter(c.category for c in bad_cases)
    files = sum(n for cat, n in counts.items() if cat not in ("text", "option"))
    assert files >= 80 and counts["text"] >= 100 and counts["option"] >= 20
    assert set(counts) == set(CATEGORIES)


@pytest.mark.parametrize("category", CATEGORIES)
def test_every_case_is_refused_cleanly(bad_cases, category):
    unclean = []
    for case in (c for c in bad_cases if c.category == category):
        if case.marker and os.path.exists(case.marker):
            os.remove(case.marker)
        # A hang is the child's time limit (measure.py), judged unclean there; no wall time is
        # asserted here: a loaded machine took 23.9 s for a clean refusal of a 20,000-position PNG.
        result = judge(case.to_json(), child(case.to_json()))
        if result["verdict"] != "clean":
            unclean.append(f"{case.name}: {result['why']}")
    assert not unclean, "\n".join(unclean)


def test_loader_messages_name_the_file_and_say_what_would_work(bad_cases):
    from attnscope.engine.loading.catalog import open_model
    from attnscope.engine.errors import ModelLoadError

    picks = {"cfg-gpt-n_head-0.safetensors": "n_head", "mem-gpt-n_layer-1000000000.safetensors": "n_layer",
             "nan-gpt.safetensors": "NaN", "hf-gpt2": "no tokenizer", "bomb.pt": "expand"}
    for case in bad_cases:
        name = Path(case.source or "").name
        if name in picks:
            with pytest.raises(ModelLoadError) as err:
                open_model(case.source, "cpu")
            assert name in str(err.value) and picks.pop(name) in str(err.value)
            assert "\n" not in str(err.value)
    assert not picks


def _limit_memory():
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT, MEMORY_LIMIT))


def _real_cli(argv) -> subprocess.CompletedProcess:
    env = {**os.environ, "QT_QPA_PLATFORM": "offscreen", "HF_HUB_OFFLINE": "1"}
    return subprocess.run([sys.executable, "main.py", *argv], cwd=ROOT, stdin=subprocess.DEVNULL, capture_output=True,
                          timeout=90, preexec_fn=_limit_memory, env=env)


def test_representative_cases_as_real_processes(bad_cases):
    """The real command line: argv bytes that are not UTF-8, custom code in a folder with no
    one to answer a prompt, a zip bomb and 10**9 layers under a 3 GiB limit."""
    by_name = {c.name: c for c in bad_cases}
    picks = [by_name["HF auto_map custom model_type"].argv, by_name["zip bomb .pt"].argv,
             by_name["gpt n_layer=1000000000"].argv, by_name["training train_pairs=10**9"].argv,
             by_name["--beam-width 100000"].argv]
    tr = str(ROOT / "resources" / "checkpoints" / "translator.safetensors")
    picks.append(["translate", tr, os.fsencode(dict(TEXTS)["invalid UTF-8"])])
    with ThreadPoolExecutor(2) as pool:
        results = list(pool.map(_real_cli, picks))
    for argv, proc in zip(picks, results):
        err = proc.stderr.decode("utf-8", "replace")
        lines = [line for line in err.splitlines() if line.strip()]
        assert proc.returncode == 2 and len(lines) == 1 and "Traceback" not in err, (argv, err)
    assert "not valid UTF-8 (byte 0xe9" in results[-1].stderr.decode()
    assert not (Path(by_name["HF auto_map custom model_type"].marker)).exists()


def test_usable_texts_still_work(bad_cases):
    from attnscope.cli.entry import main

    tr = str(ROOT / "resources" / "checkpoints" / "translator.safetensors")
    for text in ("the dog 😀 .", "مرحبا", "[PAD] [EOS]"):
        assert main(["translate", tr, text, "--max-new-tokens", "3"]) == 0


def test_custom_code_folder_loads_with_the_built_in_class_and_says_so(bad_cases, capsys):
    from attnscope.cli.entry import main

    case = next(c for c in bad_cases if c.name == "HF auto_map bert")
    assert main(["compare", case.source, "--text", "the dog"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert "never runs code" in out["model_notes"] and not Path(case.marker).exists()
