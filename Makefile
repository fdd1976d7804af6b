# `make run` trains the synthetic identifiability experiment (quick preset);
# `make test` runs the test suite. Both create .venv and install into it first.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
EXTRAS ?= cpu,dev
RUN_ARGS ?=
# Test processes (pytest-xdist); each test module runs whole in one of them.
TEST_WORKERS ?= 2

.PHONY: install run test lint

$(BIN)/.installed: setup.cfg pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e ".[$(EXTRAS)]"
	touch $@

install: $(BIN)/.installed

run: install
	$(BIN)/python recipes/synthetic.py $(RUN_ARGS)

test: install
	$(BIN)/python -m pytest -n $(TEST_WORKERS) --dist loadscope --durations=15 -rf

lint: install
	$(BIN)/ruff check aninfonce_tf recipes tests benchmarks notebooks
	$(BIN)/ruff format --check aninfonce_tf recipes tests benchmarks notebooks
