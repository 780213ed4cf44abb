# Two newcomer commands: `make demo` and `make test`. Each creates .venv and installs what it needs.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin

.PHONY: demo test lint bench venv clean

# PYTHONWARNINGS on the install: setuptools warns on every editable install of a package-dir mapping (the folders
# install as sdpa_analyzer.*, docs/development.md); the warning is generic, not about this checkout
$(BIN)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	PYTHONWARNINGS=ignore $(BIN)/python -m pip install -q -e '.[dev]'
	touch $@

venv: $(BIN)/.installed

demo: venv
	$(BIN)/sdpa-analyzer demo

# `make test` leaves out the tests marked slow (fuzz campaigns, SIGKILL loops, million-event runs);
# SDPA_TEST_ALL=1 make test (what CI runs) includes them.
PYTEST_SELECT := $(if $(SDPA_TEST_ALL),,-m "not slow")

test: venv
	$(BIN)/ruff check .
	$(BIN)/python -m pytest -n auto $(PYTEST_SELECT)

bench: venv
	$(BIN)/python bench/run_all.py

clean:
	rm -rf $(VENV) demo-out bench/out
