# ckpt developer tasks. `make demo` and `make test` work on a fresh machine with python3.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
EXTRAS := test,postgres,demo,dev,tui,mcp
# The versions the tests run against (CI installs exactly these). `make lock` rewrites it
# on purpose; `make test-latest` runs the suite on the newest releases to see drift first.
CONSTRAINTS := requirements/ci-constraints.txt
PIP_INSTALL := -c $(CONSTRAINTS)
# A new pyproject.toml or lock means a new stamp, hence a reinstall.
STAMP := $(VENV)/.installed-$(shell cat pyproject.toml $(CONSTRAINTS) | cksum | cut -d' ' -f1)
LATEST := .venv-latest
# e.g. make pytest PYTEST_ARGS='-m "not postgres"' (the tests that need no PostgreSQL server)
PYTEST_ARGS ?=
# Test processes (pytest-xdist): two per core, at most 8. A test spends part of its time
# waiting on a server or on a ckpt it started, so two per core keep the cores busy (the
# suite on this quiet 2-core machine: 217 s with 2 processes, 197 s with 4; 528 s and
# 372 s while other work loaded it; one server of each kind serves them all,
# tests/runs.served_once). TEST_PROCESSES=0 runs it in this one.
TEST_PROCESSES ?= $(shell n=$$(nproc 2>/dev/null || echo 1); n=$$((2 * n)); echo $$((n > 8 ? 8 : n)))

.PHONY: demo test test-long lint typecheck pytest test-latest lock bench bench-decode bench-stats bench-browse fuzz docs clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	@# Python 3.13's venv does this itself: git never sees a venv, whatever its name.
	echo '*' > $(VENV)/.gitignore

$(STAMP): pyproject.toml $(CONSTRAINTS) | $(BIN)/python
	@# A venv made before the distribution was renamed (ckpt -> langgraph-ckpt) holds both.
	@$(BIN)/python -m pip uninstall --quiet --yes ckpt 2>/dev/null || true
	@# uv installs what pip would, from the same pins, in a fifth of the time (a fresh
	@# clone's install: 36 s with pip, 8 s with uv, most of make test's set-up).
	test -x $(BIN)/uv || $(BIN)/python -m pip install --quiet -c $(CONSTRAINTS) uv
	$(BIN)/uv pip install --quiet --compile-bytecode --python $(BIN)/python $(PIP_INSTALL) -e ".[$(EXTRAS)]"
	@# Packages the lock does not pin at that version: new in pyproject.toml (make lock),
	@# installed by hand, or, under test-latest, the drift from the lock.
	@$(BIN)/python -m pip freeze --all --exclude pip --exclude-editable --exclude langgraph-ckpt \
		| grep -vxFf $(CONSTRAINTS) | sed 's|^|not as in $(CONSTRAINTS): |' || true
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
	$(BIN)/pytest -q -n $(TEST_PROCESSES) --dist worksteal $(PYTEST_ARGS)

# npm ci (about a minute: it compiles better-sqlite3) runs beside the Python install, lint
# and typecheck; the suite starts once all four are done.
test:
	$(MAKE) --no-print-directory -j3 --output-sync=target lint typecheck js-deps
	$(MAKE) --no-print-directory pytest

# The suite at full size: the exhaustive variants make test leaves out (tests marked
# `long`), whole matrices where make test runs a sample, five times the Hypothesis
# examples. `make test-long PYTEST_ARGS='-m long'` runs only the marked tests.
test-long: $(STAMP) js-deps
	CKPT_TEST_LONG=1 $(BIN)/pytest -q -n $(TEST_PROCESSES) --dist worksteal $(PYTEST_ARGS)

# The same checks in $(LATEST), with the newest releases pyproject.toml allows and no lock.
# The old stamp goes first so that every run upgrades (every package, dependencies too).
test-latest:
	rm -f $(LATEST)/.installed-*
	$(MAKE) --no-print-directory test VENV=$(LATEST) \
		PIP_INSTALL="--upgrade"

# Rewrite the lock from a fresh resolve: a new $(LATEST) venv with the newest releases, frozen.
# Run `make test` (and commit the lock) afterwards; `git diff $(CONSTRAINTS)` shows what moved.
lock:
	rm -rf $(LATEST)
	$(MAKE) --no-print-directory $(LATEST)/bin/python VENV=$(LATEST)
	$(LATEST)/bin/python -m pip install --quiet uv
	$(LATEST)/bin/uv pip install --quiet --python $(LATEST)/bin/python -e ".[$(EXTRAS)]"
	{ echo "# The versions CI tests ckpt against (make test: uv pip install -c this file)."; \
	  echo "# Written by make lock: pip freeze of a fresh venv holding the newest releases"; \
	  echo "# pyproject.toml allows, with every extra, ckpt left out. Do not edit by hand."; \
	  $(LATEST)/bin/python -m pip freeze --all --exclude pip --exclude-editable --exclude langgraph-ckpt; } > $(CONSTRAINTS).new
	mv $(CONSTRAINTS).new $(CONSTRAINTS)

bench: $(STAMP)
	$(BIN)/python bench/run.py

# Throughput, then the wall-clock speed guards (exit 1 when one fails): machine-dependent
# ratios, so they are a benchmark, not a unit test.
bench-decode: $(STAMP)
	$(BIN)/python bench/decode.py

# `ckpt stats` against LangGraph's loads_typed on a 248 MB store (bench/stats.py STORE for
# another, e.g. one from bench/make_store.py --turns 25).
bench-stats: $(STAMP)
	$(BIN)/python bench/stats.py

# `ckpt browse` in tmux: launch to threads table and to the first checkpoint (goal < 1 s).
bench-browse: $(STAMP)
	$(BIN)/python bench/browse.py

# The property tests with new random examples (make test runs the same ones every time),
# the decoder fuzzer, then every read command on generated hostile stores (a failing
# case's name goes into tests/hostile_corpus.txt, which make test runs).
fuzz: $(STAMP)
	HYPOTHESIS_PROFILE=fuzz $(BIN)/pytest -q -n auto $$(grep -l '@given' tests/test_*.py)
	$(BIN)/python bench/fuzz.py
	$(BIN)/python bench/fuzz_stores.py $(FUZZ_ARGS)

docs: $(STAMP)
	$(BIN)/python docs/gen_cli.py
	$(BIN)/python docs/gen_readme.py

clean:
	rm -rf $(VENV) $(LATEST) demo bench/out build .pytest_cache .mypy_cache .ruff_cache .hypothesis

# LangGraph.js fixture packages (fixtures/js, used by tests/test_js_fixtures.py). npm ci
# compiles better-sqlite3, so it runs again only when the npm manifests change. It is
# compiled at -O0 (CFLAGS come after node-gyp's -O3): the tests write a few hundred rows
# with it, and an optimised SQLite amalgamation costs over a minute of a core that lint
# and mypy need meanwhile.
JS_DIR := fixtures/js
JS_STAMP := $(JS_DIR)/node_modules/.ckpt-installed

$(JS_STAMP): $(JS_DIR)/package-lock.json $(JS_DIR)/package.json
	CFLAGS=-O0 CXXFLAGS=-O0 npm ci --prefix $(JS_DIR) --no-audit --no-fund
	touch $(JS_STAMP)

.PHONY: js-deps
js-deps: $(JS_STAMP)

pytest: js-deps
