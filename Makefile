# Two commands on a fresh machine: `make demo` and `make test`.
# Each creates the virtual environment from nothing when it is missing.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: demo test test-all test-fast test-next coverage bench study screenshots venv venv-next clean

# Extra pytest arguments (CI passes "-n 2": the suite on two workers).
TEST_ARGS ?=
# CI's second interpreter (PyMC 6 / ArviZ 1) gets an environment of its own.
NEXT_VENV ?= .venv-next

venv: $(STAMP)

# The editable install maps models/ to bayespriv.models (pyproject.toml), which setuptools can
# only do with an import finder, and for every such install the build backend emits an
# InformationOnly "Editable installation." warning (a note on folders that shadow the package).
# Nothing in our metadata causes it, so that one message, and nothing else, is filtered here.
EDITABLE_NOTE := ignore:Editable installation:UserWarning

# The install goes through uv when pip can fetch it (the same releases from PyPI, bytecode compiled as pip does,
# in about a minute where pip takes over two on a cold machine: benchmarks/RESULTS_setup.md); through pip alone
# when uv cannot be had or fails. INSTALLER=pip forces pip.
INSTALLER ?= uv

$(STAMP): pyproject.toml
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	@if [ "$(INSTALLER)" = uv ] && $(PY) -m pip install --quiet uv \
	    && PYTHONWARNINGS="$(EDITABLE_NOTE)" $(PY) -m uv pip install --quiet --compile-bytecode --python $(PY) -e ".[test]"; then \
	    echo "installed with uv"; \
	else \
	    echo "installing with pip"; \
	    PYTHONWARNINGS="$(EDITABLE_NOTE)" $(PY) -m pip install --quiet -e ".[test]"; \
	fi
	@touch $(STAMP)

demo: $(STAMP)
	$(VENV)/bin/bayespriv demo

# MARKERS, when set, selects tests by marker among those of `make test` (pytest -m; the long coverage harness stays
# out, as pyproject's default -m, which this one replaces, keeps it); empty: every test.
MARKERS ?=

test: $(STAMP)
	$(PY) -m pytest -q --durations=25 $(if $(MARKERS),-m "not coverage_long and ($(MARKERS))") $(TEST_ARGS)

# Every test, the long coverage harness among them, in one session (CI's first run). Measured on a fresh clone: the
# same time as `make test` then `make coverage` (1 458 s against 1 004 + 457 s); one command instead of two.
test-all: $(STAMP)
	$(PY) -m pytest -q --durations=30 -m "" $(TEST_ARGS)

# The fast tier (under three minutes on two cores; its workers steal queued tests from each other, which evens out
# their ends: 183 s against 198 s measured here): every test folder, without the long statistical runs (slow,
# coverage_long), the tests that start a Python subprocess or process pool (subprocess), execute notebooks
# (notebook), build the docs (docs) or need the Adult data (adult). `make test` still runs all of them.
FAST_MARKERS := not (slow or coverage_long or adult or docs or subprocess or notebook)

test-fast: $(STAMP)
	$(PY) -m pytest -q -n 2 --dist worksteal -m "$(FAST_MARKERS)"

# The suite on Python 3.12 (or 3.13), where pip resolves PyMC 6 / ArviZ 1 (.ci/next-python finds it).
# NEXT_MARKERS selects by marker there (empty: every test; CI leaves out the numeric long runs, which reach no
# PyMC, ArviZ or pgmpy and give the same numbers on every Python, and the full-size demo, whose quiet run makes the
# same PyMC calls: tests/conftest.py, pyproject.toml's markers).
NEXT_MARKERS ?=

# The second interpreter's environment alone (CI builds it beside .venv, their downloads overlapping).
venv-next:
	@next=$$(.ci/next-python) || { echo "venv-next: no CPython 3.12 or 3.13 found (pyenv, PATH): skipped"; exit 0; }; \
	$(MAKE) venv PYTHON="$$next" VENV=$(NEXT_VENV)

test-next:
	@next=$$(.ci/next-python) || { echo "test-next: no CPython 3.12 or 3.13 found (pyenv, PATH): skipped"; exit 0; }; \
	echo "test-next: $$next ($$($$next --version))"; \
	$(MAKE) test PYTHON="$$next" VENV=$(NEXT_VENV) TEST_ARGS="$(TEST_ARGS)" MARKERS="$(NEXT_MARKERS)"

# The long coverage harness (tests/audit/test_coverage.py): 100 calibrations per law, on two workers (its laws are
# independent and CPU-bound); CI runs it with the suite (`make test-all`).
coverage: $(STAMP)
	$(PY) -m pytest -q -n 2 tests/audit/test_coverage.py -m coverage_long --durations=15

bench: $(STAMP)
	for b in benchmarks/bench_*.py; do $(PY) $$b || exit 1; done

study: $(STAMP)
	$(PY) examples/census_study.py --out benchmarks/census-study

# Executes the four example notebooks and redraws docs/screenshots/*.png from their outputs.
screenshots: $(STAMP)
	$(PY) examples/notebooks/screenshots.py

clean:
	rm -rf $(VENV) $(NEXT_VENV) build *.egg-info .pytest_cache
