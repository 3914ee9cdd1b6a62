# Two commands for a fresh machine: `make demo` runs the main job, `make test` runs the tests.
# Each installs what it needs into .venv (Python) and node_modules (Node) first.
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python

.PHONY: demo test bench lint clean

$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[dev]'
	$(PY) -m pip check
	touch $@

node_modules/.installed: package.json package-lock.json
	npm ci --no-audit --no-fund --loglevel=error
	touch $@

# anvil comes from npm (node_modules/.bin/anvil); the demo cleans up after itself.
demo: $(VENV)/.installed node_modules/.installed
	$(VENV)/bin/paycore demo

test: $(VENV)/.installed node_modules/.installed
	$(PY) -m pytest

bench: $(VENV)/.installed
	$(PY) bench/auth_bench.py

lint: $(VENV)/.installed
	$(VENV)/bin/ruff check src tests bench

clean:
	rm -rf $(VENV) node_modules demo.sqlite3 .pytest_cache .hypothesis
