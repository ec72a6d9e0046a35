# Set-up and the two commands the README starts with. Everything installs into .venv.
PY ?= python3.11
VENV := .venv
BIN := $(VENV)/bin

.PHONY: demo test lint setup

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
