"""Shared test setup: make `tests/scenarios.py` importable as `tests.scenarios`."""
