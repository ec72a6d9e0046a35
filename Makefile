# Set-up and the two commands the README starts with. Everything installs into .venv,
# made with the first Python >= 3.11 found on PATH (newest first; `make PY=/path/to/python`
# to choose). What is installed depends on the command: `make demo` only the package
# (the demo is SQLite only: click and rich), `make test` the dev and bench extras (the
# tests, and the quick benchmark test). One venv serves both: each set has its own stamp,
# so `make test` after `make demo` upgrades the venv, and `make demo` after `make test`
# finds everything it needs.
PY_CANDIDATES := python3.13 python3.12 python3.11 python3
# Each candidate is run, not just looked up: a pyenv shim exists for every installed
# version but fails unless that version is selected.
ifndef PY
PY := $(shell for p in $(PY_CANDIDATES); do \
	$$p -c 'import sys; sys.exit(sys.version_info < (3, 11))' >/dev/null 2>&1 && { echo $$p; break; }; \
	done)
endif
VENV := .venv
BIN := $(VENV)/bin
DEMO_ARGS ?=

# The benchmark's own environment: every arm (conveyor and its peers) on one Python 3.12,
# because qler, the seed-000 system, needs Python >= 3.12. `python3.12` if it runs here
# (a pyenv shim may exist without the version being selected), else pyenv's 3.12.1.
PYBENCH ?= $(shell python3.12 --version >/dev/null 2>&1 && echo python3.12 || echo $(HOME)/.pyenv/versions/3.12.1/bin/python)
VENV_BENCH := .venv-bench
BIN_BENCH := $(VENV_BENCH)/bin

.PHONY: demo test lint setup setup-demo check-python print-python bench-venv bench-venv-arq bench-venv-dbos faults

check-python:
	@if [ -z "$(PY)" ]; then \
	  echo "make: no Python >= 3.11 found on PATH (tried: $(PY_CANDIDATES))." >&2; \
	  echo "      Install one, or name it: make PY=/path/to/python3.12 $(MAKECMDGOALS)" >&2; \
	  exit 1; \
	fi
	@$(PY) -c 'import sys; sys.exit(sys.version_info < (3, 11))' 2>/dev/null || { \
	  echo "make: PY=$(PY) is not a Python >= 3.11 ($$($(PY) --version 2>&1 | head -n1))." >&2; \
	  exit 1; }

print-python:
	@echo $(PY)

$(BIN)/python: | check-python
	$(PY) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip

# The package alone: what `conveyor demo` imports (click, rich, the stdlib's sqlite3).
$(VENV)/.installed-demo: pyproject.toml | $(BIN)/python
	$(BIN)/pip install -q -e .
	touch $@

# Everything the test suite needs: the dev extra, and the bench extra for
# tests/integration/test_bench_quick.py (which fails without it when CI=true).
$(VENV)/.installed-test: pyproject.toml | $(BIN)/python
	$(BIN)/pip install -q -e '.[dev,bench]'
	touch $@

setup-demo: $(VENV)/.installed-demo
setup: $(VENV)/.installed-test

demo: setup-demo
	$(BIN)/conveyor demo $(DEMO_ARGS)

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

# arq's own environment (arq 0.28 wants redis-py < 6, the bench venv has 8 for
# taskiq-redis): the harness runs the arq arm's producer and worker from it.
$(VENV_BENCH)-arq/bin/arq:
	$(PYBENCH) -m venv $(VENV_BENCH)-arq
	$(VENV_BENCH)-arq/bin/pip install -q 'arq==0.28.0'

bench-venv-arq: $(VENV_BENCH)-arq/bin/arq

# DBOS Transact's environment, the durable-steps peer (python -m bench.durable_peer).
# Python 3.11, as .venv where conveyor's arm runs: DBOS 3.4 on Python >= 3.12 stamps its
# SQLite rows with unixepoch('subsec'), which needs SQLite >= 3.42, and this box's 3.12
# links 3.40 (DBOS's launch fails on a NOT NULL timestamp).
$(VENV_BENCH)-dbos/bin/dbos:
	python3.11 -m venv $(VENV_BENCH)-dbos
	$(VENV_BENCH)-dbos/bin/pip install -q 'dbos==3.4.0'

bench-venv-dbos: $(VENV_BENCH)-dbos/bin/dbos

# The fault tests alone (real workers, real signals; ~1 min). The long version, which
# writes RELIABILITY.md: .venv/bin/python -m tests.faults --long (several minutes).
faults: setup
	$(BIN)/python -m pytest -q tests/faults
