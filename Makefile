# areasync: every target installs what it needs first, so a fresh machine needs only `make`.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: install test lint unit conformance bench serve soak fuzz clean schema

$(STAMP): pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[dev]'
	touch $(STAMP)

install: $(STAMP)

lint: $(STAMP)
	$(VENV)/bin/ruff check areasync tests bench server.py
	$(VENV)/bin/ruff format --check areasync tests bench server.py
	$(VENV)/bin/mypy

unit: $(STAMP)
	$(PY) -m pytest -q

conformance: $(STAMP)
	$(PY) -m pytest -q tests/conformance

test: lint unit

bench: $(STAMP)
	$(PY) bench/loop.py

serve: $(STAMP)
	$(PY) server.py

schema: $(STAMP)
	$(VENV)/bin/areasync schema > areasync/protocol/schema.json

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache
