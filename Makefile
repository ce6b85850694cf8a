# Two entry points (see README): `make lesson` opens the lesson, `make test` runs the tests.
# Both create .venv on first use. torch==2.13.0 is installed first: on the course machines it is a
# local CPU build; pyproject.toml itself only asks for torch>=2.2. `make lesson TORCH=torch` takes
# PyPI's default build instead (CUDA on Linux).
PYTHON ?= python3
TORCH ?= torch==2.13.0
VENV := .venv
PY := $(VENV)/bin/python

.PHONY: setup lesson test release benchmarks clean

setup: $(VENV)/.installed

$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet "$(TORCH)"
	$(PY) -m pip install --quiet -e ".[dev]"
	$(PY) -m ipykernel install --sys-prefix --name python3 > /dev/null
	touch $@

lesson: setup
	$(VENV)/bin/jupyter lab lessons/lesson20/lesson20.ipynb

test: setup
	$(PY) -m pytest

release: setup
	$(PY) -m autograder release

benchmarks: setup
	$(PY) -m benchmarks

clean:
	rm -rf $(VENV) build dist *.egg-info
