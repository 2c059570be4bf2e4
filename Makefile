# Genesis: `make demo` runs the main job, `make test` runs the test suite. Both set up .venv themselves.
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.genesis-installed

.PHONY: demo test lint bench docs clean

$(STAMP): pyproject.toml
	python3 -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	# CPU build of PyTorch, pinned: it backs Genesis's CPU backend and serves as the test oracle.
	$(PY) -m pip install -q torch==2.13.0
	$(PY) -m pip install -q -e ".[test]"
	touch $(STAMP)

demo: $(STAMP)
	$(PY) examples/demo.py

lint: $(STAMP)
	$(VENV)/bin/ruff check genesis tests benchmark examples

test: lint
	$(PY) -m pytest -n 2 tests

bench: $(STAMP)
	$(PY) benchmark/bench_overhead.py

docs: $(STAMP)
	$(PY) -m pip install -q -e ".[docs]"
	$(VENV)/bin/mkdocs build --strict

clean:
	rm -rf $(VENV) site
