"""Benchmarks: areasync against ARE's own loop and against ARE's event-execution floor.

Run `make bench` (or `python bench/loop.py`); it prints JSON. See `bench/loop.py`.
"""
