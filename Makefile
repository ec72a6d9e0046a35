# Set-up and the two commands the README starts with. Everything installs into .venv
# (Python 3.11); the benchmark has its own .venv-bench (Python 3.12), below.
PY ?= python3.11
VENV := .venv
BIN := $(VENV)/bin

# The benchmark's own environment: every arm (conveyor and its peers) on one Python 3.12,
# because qler, the seed-000 system, needs Python >= 3.12. `python3.12` if it runs here
# (a pyenv shim may exist without the version being selected), else pyenv's 3.12.1.
PYBENCH ?= $(shell python3.12 --version >/dev/null 2>&1 && echo python3.12 || echo $(HOME)/.pyenv/versions/3.12.1/bin/python)
VENV_BENCH := .venv-bench
BIN_BENCH := $(VENV_BENCH)/bin

.PHONY: demo test lint setup bench-venv

$(BIN)/conveyor: pyproject.toml
	$(PY) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -e '.[dev,bench]'
	touch $@

setup: $(BIN)/conveyor

demo: setup
	$(BIN)/conveyor demo

lint: setup
	$(BIN)/ruff check src tests bench
	$(BIN)/ruff format --check src tests bench
	$(BIN)/mypy

test: setup
	bash scripts/test

$(BIN_BENCH)/conveyor: pyproject.toml
	$(PYBENCH) -m venv $(VENV_BENCH)
	$(BIN_BENCH)/pip install -q --upgrade pip
	$(BIN_BENCH)/pip install -q -e '.[bench]'
	touch $@

# Then: .venv-bench/bin/python -m bench run [--quick] [--arms ...]
bench-venv: $(BIN_BENCH)/conveyor
