# Two entry points (see README): `make lesson` opens the lesson, `make test` runs the tests.
# Both create .venv on first use. torch==2.13.0 is installed first: on the course machines it is a
# local CPU build; pyproject.toml itself only asks for torch>=2.3. `make lesson TORCH=torch` takes
# PyPI's default build instead (CUDA on Linux).
# While working: `make lint` (ruff, which CI runs before `make test`) and `make test-fast` (the tests
# not marked slow, browser or postgres).
PYTHON ?= python3
TORCH ?= torch==2.13.0
VENV := .venv
PY := $(VENV)/bin/python

# The lesson server, one command for `make lesson` and its test (tests/browser/test_first_run.py runs
# `make lesson` with another LESSON, a copy in a temporary folder, and LAB_ARGS for its port and token).
LESSON ?= lessons/lesson20/lesson20.ipynb
LAB_ARGS ?=
# Jupyter will not start as root without --allow-root (CI and the course machines run as root).
ALLOW_ROOT := $(if $(filter 0,$(shell id -u)),--allow-root)
# Lab is rooted at the lesson's folder, outside the nbgrader course root (the repository), where
# formgrader would log an error; students have no use for it. Instructors grade from the grading
# folder (docs/instructors.md, "Grading a class"), where formgrader stays on.
NO_FORMGRADER := --ServerApp.jpserver_extensions="{'nbgrader.server_extensions.formgrader': False}"
# Extra pytest arguments for `make test`, e.g. PYTEST_ARGS='-m "not browser"' (`make test-fast` takes them
# too, after its own -m, so an -m there replaces its selection)
PYTEST_ARGS ?=

.PHONY: setup lesson lint test test-fast release benchmarks clean

setup: $(VENV)/.installed

$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet "$(TORCH)"
	$(PY) -m pip install --quiet -e ".[dev]"
	$(PY) -m ipykernel install --sys-prefix --name python3 > /dev/null
	touch $@

lesson: setup
	$(VENV)/bin/jupyter lab $(ALLOW_ROOT) $(NO_FORMGRADER) $(LAB_ARGS) $(LESSON)

lint: setup
	$(VENV)/bin/ruff check .

test: setup
	$(PY) -m pytest $(PYTEST_ARGS)

# the unit tests and the integration tests that take seconds: what a change should pass before `make test`
test-fast: setup
	$(PY) -m pytest -m "not slow and not browser and not postgres" $(PYTEST_ARGS)

release: setup
	$(PY) -m autograder release

benchmarks: setup
	$(PY) -m benchmarks

clean:
	rm -rf $(VENV) build dist *.egg-info
