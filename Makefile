# Two commands for a fresh machine: `make demo` runs the main job, `make test` runs the tests.
# Each installs what it needs into .venv (Python) and node_modules (Node) first.
# While working: `make test-core` (core and conformance, under a minute), `make test-fast`
# (the whole fast tier), `make lint`, `make docs`.
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python

.PHONY: demo test test-core test-fast bench lint docs mutate clean

# The slow tiers (markers registered in pyproject.toml, applied in tests/conftest.py and the
# modules): everything but these is the fast tier, the core, conformance and unit tests.
SLOW_TIERS := browser or anvil or postgres or redis or fuzz or node or slow

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

# The core and conformance suites. The core is the rules themselves, each in the folder of
# the subpackage it tests (tests/ mirrors src/paycore): the domain's machines and limits,
# attribution, the facade, the wire, settings, and the house rules (layers, file sizes,
# docstrings). Most of the time is fixture setup: each conformance test builds its own
# Litestar app (0.14 s: 147 handlers, and Litestar re-maps a router's routes on every
# registration).
CORE_TESTS := tests/domain tests/accounting tests/facade tests/api tests/config tests/house
test-core: $(VENV)/.installed
	$(PY) -m pytest -n auto -p no:schemathesis -p no:faker $(CORE_TESTS) tests/conformance \
		-m "not ($(SLOW_TIERS))"

# Every fast test, about two minutes on two cores. The fuzz folder is not even collected, and schemathesis' and
# faker's pytest plugins are not loaded: building the fuzzer's tests alone takes longer.
test-fast: $(VENV)/.installed
	$(PY) -m pytest -n auto -p no:schemathesis -p no:faker --ignore=tests/fuzz \
		-m "not ($(SLOW_TIERS))"

bench: $(VENV)/.installed
	$(PY) bench/auth_bench.py

lint: $(VENV)/.installed
	$(VENV)/bin/ruff check src tests bench scripts
	$(VENV)/bin/mypy src

# The documentation site (mkdocs.yml) into site/; --strict makes any warning an error.
docs: $(VENV)/.installed
	NO_MKDOCS_2_WARNING=1 $(VENV)/bin/mkdocs build --strict

# Mutation testing of the money, attribution, auth and address-guard modules against the fast
# tests ([tool.mutmut] in pyproject.toml; docs/mutation.md): mutmut for the code in functions,
# then the module-level limits mutmut leaves alone, then a second mutator with the operators
# mutmut lacks (statement deletion, return swaps, boundary flips, and/or, constants +-1),
# AST_SAMPLE mutants per module (0: all, about 630). About 40 minutes on two cores, so it is not
# part of `make test` or CI. Starts from scratch each time; fails below MUTATE_MIN under
# either mutator or when a limit's mutant survives.
MUTATE_MIN ?= 95
AST_SAMPLE ?= 45
mutate: $(VENV)/.installed
	rm -rf mutants
	$(VENV)/bin/mutmut run --max-children 2 > mutants.log 2>&1 || (tail -n 40 mutants.log; exit 1)
	$(PY) scripts/mutation_score.py --min $(MUTATE_MIN)
	$(PY) scripts/constant_mutants.py
	$(PY) scripts/ast_mutants.py --min $(MUTATE_MIN) --sample $(AST_SAMPLE)

clean:
	rm -rf $(VENV) node_modules demo.sqlite3 .pytest_cache .hypothesis site mutants mutants.log
