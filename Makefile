# graphrag-assets: every target creates/updates its own virtual environment in .venv.
PYTHON ?= $(shell command -v python3.11 2>/dev/null || command -v python3)
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: run test test-fast dev install bench clean-index

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[test]'
	touch $(STAMP)

install: $(STAMP)

## Index the bundled sample corpus, print its status and answer a sample question.
run: $(STAMP)
	$(BIN)/graphrag-assets index --root .
	$(BIN)/graphrag-assets status --root .
	$(BIN)/graphrag-assets query "Who is Søren Holm, and what did he do during Storm Odile?" --method local --root .

LINTED := graphrag_assets graphrag_assets_tests graphrag_assets_testkit bench

## Check the layer contracts (import-linter, see pyproject.toml), lint and format (ruff), then run the test suite.
test: $(STAMP)
	$(BIN)/lint-imports --no-logo
	$(BIN)/ruff check --quiet $(LINTED)
	$(BIN)/ruff format --check --quiet $(LINTED)
	$(BIN)/python -m pytest -q

## The inner loop: layer contracts, lint, and the unit tests (no end-to-end indexing, browser or servers).
test-fast: $(STAMP)
	$(BIN)/lint-imports --no-logo
	$(BIN)/ruff check --quiet $(LINTED)
	$(BIN)/ruff format --check --quiet $(LINTED)
	$(BIN)/python -m pytest -q -m "not slow"

## Start the Dagster UI on http://127.0.0.1:3000 for this project.
dev: $(STAMP)
	$(BIN)/graphrag-assets dev --root $(CURDIR) --port 3000

## Delete the generated index (DuckDB, LanceDB, Dagster state); keeps data/input.
clean-index:
	rm -rf data/graphrag.duckdb data/graphrag.duckdb.wal data/graphrag.duckdb.walk data/graphrag.duckdb.wait data/lancedb data/dagster
