"""Count clean and unclean outcomes of every broken input, each in its own child process.

    python -m tests.bad_inputs.measure [FOLDER] [--bomb-mib N] [--jobs N] [--only CATEGORY]

A child opens the case's model with the window's loader (engine.loading.catalog.open_model), then
runs the CLI command in-process, under a 3 GiB address-space limit, with stdin closed and
a 60 s time limit. A case is clean when:
  loader  it raises the one load error type (ModelLoadError; before it existed, the
          loaders' own CheckpointError/HFModelError) with the file's name in the message,
          or, for a usable input, it loads;
  CLI     exit status 2 with one line on stderr and no traceback, or 0 for a usable input;
  both    no marker file (no code ran), no secret in the output (no unnamed file read),
          peak memory growth under 1 GiB, finished in time.
Prints one JSON object: per category, clean / unclean counts and the names of unclean cases.
"""
from __future__ import annotations

import argparse
import collections
import concurrent.futures
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
LOAD_ERRORS = {"ModelLoadError", "CheckpointError", "HFModelError"}
MEMORY_LIMIT = 3 << 30
TIME_LIMIT = 60


def _maxrss_mib() -> float:
    import resource
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def child(case: dict) -> dict:
    """Runs in the child: loader stage, then CLI stage; returns what happened."""
    import contextlib
    import io
    import traceback

    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    from attnscope.cli.entry import main

    result = {"rss_start": _maxrss_mib()}
    if case["source"]:
        from attnscope.engine.loading.catalog import open_model
        try:
            open_model(case["source"], "cpu")
            result["loader"] = {"loaded": True}
        except BaseException as exc:  # noqa: BLE001 - we record what escaped
            names = {c.__name__ for c in type(exc).__mro__}
            result["loader"] = {"loaded": False, "type": type(exc).__name__, "load_error": bool(names & LOAD_ERRORS),
                                "message": str(exc)[:500]}
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = main(case["argv"])
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else 1
        except BaseException:  # noqa: BLE001 - an escaped exception is a traceback on a terminal
            traceback.print_exc()
            code = "traceback"
    result["cli"] = {"code": code, "stdout": out.getvalue()[-2000:], "stderr": err.getvalue()[-2000:]}
    result["rss_end"] = _maxrss_mib()
    return result


def _limits():
    import resource
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT, MEMORY_LIMIT))


def run_case(case: dict) -> dict:
    marker = case.get("marker")
    if marker and os.path.exists(marker):
        os.remove(marker)
    try:
        proc = subprocess.run([sys.executable, "-m", "tests.bad_inputs.measure", "--child", json.dumps(case)],
                              cwd=ROOT, stdin=subprocess.DEVNULL, capture_output=True, text=True,
                              timeout=TIME_LIMIT, preexec_fn=_limits)
    except subprocess.TimeoutExpired:
        return {"case": case, "verdict": "unclean", "why": f"still running after {TIME_LIMIT} s"}
    lines = [line for line in proc.stdout.splitlines() if line.startswith("{\"rss_start\"")]
    if proc.returncode != 0 or not lines:
        return {"case": case, "verdict": "unclean", "why": f"child died ({proc.returncode}): {proc.stderr[-300:]}"}
    return judge(case, json.loads(lines[-1]), proc.stdout + proc.stderr)


def judge(case: dict, r: dict, raw: str = "") -> dict:
    why = []
    loader = r.get("loader")
    if loader is not None:
        if loader["loaded"]:
            if not (case["ok"] or case.get("loader_ok")):
                why.append("loader accepted it")
        elif not loader["load_error"]:
            why.append(f"loader raised {loader['type']}: {loader['message'][:120]}")
        elif Path(case["source"]).name not in loader["message"]:
            why.append(f"loader message does not name the file: {loader['message'][:120]}")
    cli = r["cli"]
    err_lines = [line for line in cli["stderr"].splitlines() if line.strip()]
    if cli["code"] == 0 and case["ok"]:
        pass
    elif cli["code"] != 2:
        why.append(f"CLI exit {cli['code']}: {(err_lines or [''])[-1][:160]}")
    elif len(err_lines) != 1 or "Traceback" in cli["stderr"] or not err_lines[0].startswith("attnscope"):
        why.append(f"CLI printed {len(err_lines)} lines: {cli['stderr'][:160]!r}")
    if case.get("marker") and os.path.exists(case["marker"]):
        why.append("code from the input ran")
    if case.get("secret") and case["secret"] in raw + cli["stdout"] + cli["stderr"]:
        why.append("a file named in metadata was read and shown")
    if "[y/N]" in raw or "trust_remote_code" in cli["stdout"]:
        why.append("asked to run custom code")
    grew = r["rss_end"] - r["rss_start"]
    if grew > 1024:
        why.append(f"peak memory grew {grew:.0f} MiB")
    return {"case": case, "verdict": "unclean" if why else "clean", "why": "; ".join(why)}


def main(argv=None) -> int:
    p = argparse.ArgumentParser()
    p.add_argument("folder", nargs="?", default=None)
    p.add_argument("--bomb-mib", type=int, default=1024)
    p.add_argument("--jobs", type=int, default=2)
    p.add_argument("--only", default=None)
    p.add_argument("--child", default=None)
    args = p.parse_args(argv)
    if args.child:
        import torch
        torch.set_num_threads(1)
        print(json.dumps(child(json.loads(args.child))), flush=True)
        return 0
    from tests.bad_inputs.cases import build_all

    folder = Path(args.folder or tempfile.mkdtemp(prefix="attnscope-bad-"))
    cases = [c.to_json() for c in build_all(folder, args.bomb_mib) if args.only in (None, c.category)]
    counts = collections.defaultdict(lambda: {"clean": 0, "unclean": 0, "unclean_cases": []})
    with concurrent.futures.ThreadPoolExecutor(args.jobs) as pool:
        for res in pool.map(run_case, cases):
            c = counts[res["case"]["category"]]
            c[res["verdict"]] += 1
            if res["verdict"] == "unclean":
                c["unclean_cases"].append(f"{res['case']['name']}: {res['why']}")
    total = {"clean": sum(c["clean"] for c in counts.values()), "unclean": sum(c["unclean"] for c in counts.values())}
    print(json.dumps({"total": total, **counts}, indent=1, ensure_ascii=False))
    return 0


if __name__ == "__main__":
    sys.exit(main())
