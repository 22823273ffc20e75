"""ARE's `are.simulation.tests.validation_test`, unchanged, run against SyncEnvironment (see conftest)."""

from are.simulation.tests.validation_test import *  # noqa: F403
