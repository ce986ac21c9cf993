# ckpt developer tasks. `make demo` and `make test` work on a fresh machine with python3.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-$(shell cat pyproject.toml | cksum | cut -d' ' -f1)

.PHONY: demo test lint typecheck pytest bench bench-decode fuzz docs clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

$(STAMP): pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e ".[test,postgres,demo]"
	@# Editable installs get no bytecode; with PYTHONDONTWRITEBYTECODE set every run
	@# would recompile ckpt (~25 ms of each command's start-up).
	$(BIN)/python -m compileall -q src
	rm -f $(VENV)/.installed-* && touch $(STAMP)

demo: $(STAMP)
	$(BIN)/ckpt demo demo/chat.sqlite --force
	$(BIN)/ckpt threads demo/chat.sqlite
	$(BIN)/ckpt history support-1 --db demo/chat.sqlite

lint: $(STAMP)
	$(BIN)/ruff check src tests fixtures bench docs
	$(BIN)/ruff format --check src tests fixtures bench docs

typecheck: $(STAMP)
	$(BIN)/mypy

pytest: $(STAMP)
	$(BIN)/pytest -q

test: lint typecheck pytest

bench: $(STAMP)
	$(BIN)/python bench/run.py

bench-decode: $(STAMP)
	$(BIN)/python bench/decode.py

fuzz: $(STAMP)
	$(BIN)/python bench/fuzz.py

docs: $(STAMP)
	$(BIN)/python docs/gen_cli.py

clean:
	rm -rf $(VENV) demo bench/out .pytest_cache .mypy_cache .ruff_cache .hypothesis

# LangGraph.js fixture packages (fixtures/js, used by tests/test_js_fixtures.py). npm ci
# compiles better-sqlite3 (~1.5 min), so it runs again only when the npm manifests change.
JS_DIR := fixtures/js
JS_STAMP := $(JS_DIR)/node_modules/.ckpt-installed

$(JS_STAMP): $(JS_DIR)/package-lock.json $(JS_DIR)/package.json
	npm ci --prefix $(JS_DIR) --no-audit --no-fund
	touch $(JS_STAMP)

.PHONY: js-deps
js-deps: $(JS_STAMP)

pytest: js-deps
