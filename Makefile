# Genesis: `make demo` runs the main job, `make test` runs the test suite. Both set up their virtual environment.
# `make demo DEVICE=cuda` sets up .venv-cuda with the GPU packages (the `cuda` extra) and runs the demo on the GPU.
DEVICE ?=
ifneq ($(filter cuda%,$(DEVICE)),)
VENV ?= .venv-cuda
# The GPU suite's oracle: torch 2.11.0's Linux wheel pins the triton, cuDNN, cuBLAS and NCCL the `cuda` extra allows.
TORCH := torch==2.11.0
EXTRAS := test,docs,cuda
else
VENV ?= .venv
# CPU build of PyTorch, pinned: it backs Genesis's CPU backend and serves as the test oracle.
TORCH := torch==2.13.0
EXTRAS := test,docs
endif
PY := $(VENV)/bin/python
STAMP := $(VENV)/.genesis-installed

.PHONY: demo test lint bench docs clean

$(STAMP): pyproject.toml
	python3 -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q $(TORCH)
	$(PY) -m pip install -q -e ".[$(EXTRAS)]"
	touch $(STAMP)

demo: $(STAMP)
	$(PY) examples/demo.py $(if $(DEVICE),--device $(DEVICE))

lint: $(STAMP)
	$(VENV)/bin/ruff check genesis tests benchmark examples

test: lint
	$(PY) -m pytest -n 2 tests

bench: $(STAMP)
	$(PY) benchmark/bench_overhead.py

docs: $(STAMP)
	$(PY) scripts/docs_check.py --build

clean:
	rm -rf $(VENV) .venv-cuda site
