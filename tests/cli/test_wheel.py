"""The installed attnscope, as a user gets it: a wheel in a fresh venv, run from elsewhere.

Why: a checkout finds engine/ and resources/ through its own folders, so a packaging slip (a
resource left out, a second top-level name, a module that reads a path next to the repository)
only shows once attnscope stands alone in site-packages. No network: the venv gets the wheel with
--no-index and borrows the project's dependencies by one .pth line (a folder added that way has
its own .pth files left unrun, so the project's editable finder stays off and attnscope can only
come from the wheel).
"""
from __future__ import annotations

import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[2]
VENV_PY = Path(sys.executable)


def _run(cmd: list, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([str(c) for c in cmd], cwd=cwd, capture_output=True, text=True, timeout=500)


def _checkout_copy(dest: Path) -> Path:
    """The checkout's files as git sees them (tracked and new, not ignored), copied to ``dest``:
    a wheel built in the checkout itself reuses setuptools' build/ and *.egg-info left by an
    earlier build, and would carry files since moved away."""
    import shutil

    listed = _run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], ROOT).stdout
    for name in filter(None, listed.split("\0")):
        source = ROOT / name
        if not source.exists() and not source.is_symlink():      # deleted in the tree, not yet in git
            continue
        target = dest / name
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(source, target, follow_symlinks=False)
    return dest


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    """(the fresh venv, the wheel's path, a working folder away from the checkout)."""
    base = tmp_path_factory.mktemp("wheel")
    src = _checkout_copy(base / "src")
    built = _run([VENV_PY, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", ".", "-w", base / "dist"], src)
    assert built.returncode == 0, built.stderr[-2000:]
    wheel = next((base / "dist").glob("attnscope-*.whl"))
    venv = base / "V"
    assert _run(["python3", "-m", "venv", venv], base).returncode == 0
    put = _run([venv / "bin" / "pip", "install", "--no-deps", "--no-index", wheel], base)
    assert put.returncode == 0, put.stderr[-2000:]
    site = Path(_run([venv / "bin" / "python", "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                     base).stdout.strip())
    (site / "zz_project_deps.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    work = base / "elsewhere"
    work.mkdir()
    return venv, wheel, site, work


def test_version_is_pyprojects(installed):
    venv, _, _, work = installed
    from attnscope.engine import version

    said = _run([venv / "bin" / "attnscope", "--version"], work)
    assert said.returncode == 0, said.stderr
    assert said.stdout.strip() == f"attnscope {version()}"
    where = _run([venv / "bin" / "python", "-c", "import attnscope; print(attnscope.__file__, attnscope.__version__)"],
                 work).stdout.split()
    assert str(venv) in where[0] and where[1] == version()


def test_only_attnscope_lands_in_site_packages(installed):
    _, wheel, _, _ = installed
    tops = {name.split("/")[0] for name in zipfile.ZipFile(wheel).namelist()}
    assert tops == {"attnscope", wheel.name.split("-")[0] + "-" + wheel.name.split("-")[1] + ".dist-info"}


def test_bundled_models_and_corpora_found(installed):
    venv, _, _, work = installed
    said = _run([venv / "bin" / "attnscope", "translate", "translator", "the cat sleeps ."], work)
    assert said.returncode == 0, said.stderr
    assert '"' in said.stdout
    corpora = _run([venv / "bin" / "python", "-c",
                    "from attnscope.engine.resources import resource; "
                    "print(resource('corpora','shakespeare.txt.gz').is_file(), "
                    "resource('corpora','handwritten_en_de.tsv').is_file())"], work)
    assert corpora.stdout.split() == ["True", "True"], corpora.stderr


def test_export_equals_the_checkouts(installed, tmp_path):
    venv, _, _, work = installed
    args = ["--device", "cpu", "export", "gpt", "--text", "to be or not", "--format", "npz"]
    mine = _run([venv / "bin" / "attnscope", *args, "--out", tmp_path / "wheel"], work)
    theirs = _run([VENV_PY, ROOT / "main.py", *args, "--out", tmp_path / "repo"], ROOT)
    assert mine.returncode == 0 and theirs.returncode == 0, mine.stderr + theirs.stderr
    a, b = next((tmp_path / "wheel").glob("*.npz")), next((tmp_path / "repo").glob("*.npz"))
    with np.load(a) as x, np.load(b) as y:
        assert sorted(x.files) == sorted(y.files)
        for key in x.files:
            assert np.array_equal(x[key], y[key]), key


def test_sdist_carries_resources_and_builds_the_same_wheel(installed, tmp_path):
    _, wheel, _, _ = installed
    tree = _checkout_copy(tmp_path / "tree")
    made = _run([VENV_PY, "-c", f"from setuptools import build_meta as b; b.build_sdist({str(tmp_path)!r})"], tree)
    assert made.returncode == 0, made.stderr[-2000:]
    sdist = next(tmp_path.glob("attnscope-*.tar.gz"))
    import tarfile

    with tarfile.open(sdist) as tar:
        names = tar.getnames()
        tar.extractall(tmp_path / "src", filter="data")
    assert any(n.endswith("resources/checkpoints/gpt.safetensors") for n in names)
    assert any(n.endswith("resources/corpora/shakespeare.txt.gz") for n in names)
    src = next((tmp_path / "src").iterdir())
    again = _run([VENV_PY, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", ".", "-w", tmp_path / "d"], src)
    assert again.returncode == 0, again.stderr[-2000:]
    second = next((tmp_path / "d").glob("attnscope-*.whl"))
    assert sorted(zipfile.ZipFile(second).namelist()) == sorted(zipfile.ZipFile(wheel).namelist())
