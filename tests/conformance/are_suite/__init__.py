"""ARE's own test suite, run against `SyncEnvironment` (see conftest.py)."""
