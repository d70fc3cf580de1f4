# Dafka: install, run, test, bench, lint. Everything installs into .venv.
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed-$(shell cat setup.cfg pyproject.toml | cksum | cut -d' ' -f1)
SRC    := dafka tower tests benchmarks examples
PYTEST_ARGS ?=

.PHONY: install run test test-unit test-integration bench lint format clean

install: $(STAMP)

$(STAMP): setup.cfg pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip setuptools wheel
	$(BIN)/python -m pip install --quiet -e '.[test,dev]'
	rm -f $(VENV)/.installed-*
	touch $@

run: install  ## a tower and a store on 127.0.0.1, data under .dafka/
	$(BIN)/dafka-local

test: install  ## the whole suite: unit, integration (real processes), end-to-end CLI
	$(BIN)/python -m pytest $(PYTEST_ARGS)

test-unit: install
	$(BIN)/python -m pytest tests/unit $(PYTEST_ARGS)

test-integration: install
	$(BIN)/python -m pytest tests/integration tests/e2e $(PYTEST_ARGS)

bench: install  ## throughput benchmarks; JSON in benchmarks/results/
	$(BIN)/python -m benchmarks.throughput

lint: install
	$(BIN)/ruff format --check --line-length 100 $(SRC)
	$(BIN)/ruff check --line-length 100 --select E,F,W,I,B,UP --ignore E501,B008 $(SRC)

format: install
	$(BIN)/ruff format --line-length 100 $(SRC)
	$(BIN)/ruff check --fix --line-length 100 --select E,F,W,I,B,UP --ignore E501,B008 $(SRC)

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache *.egg-info
