# Two commands on a fresh machine: `make demo` and `make test`.
# Each creates the virtual environment from nothing when it is missing.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: demo test coverage bench study screenshots venv clean

venv: $(STAMP)

# The editable install maps models/ to bayespriv.models (pyproject.toml), which setuptools can
# only do with an import finder, and for every such install the build backend emits an
# InformationOnly "Editable installation." warning (a note on folders that shadow the package).
# Nothing in our metadata causes it, so that one message, and nothing else, is filtered here.
EDITABLE_NOTE := ignore:Editable installation:UserWarning

$(STAMP): pyproject.toml
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	PYTHONWARNINGS="$(EDITABLE_NOTE)" $(PY) -m pip install --quiet -e ".[test]"
	@touch $(STAMP)

demo: $(STAMP)
	$(VENV)/bin/bayespriv demo

test: $(STAMP)
	$(PY) -m pytest -q --durations=25

# The long coverage harness (tests/audit/test_coverage.py): 100 calibrations per law, on two workers (its laws are
# independent and CPU-bound); CI runs it after `make test`.
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
	rm -rf $(VENV) build *.egg-info .pytest_cache
