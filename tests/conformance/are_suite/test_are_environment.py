"""ARE's `are.simulation.tests.environment_test`, unchanged, run against SyncEnvironment (see conftest)."""

from are.simulation.tests.environment_test import *  # noqa: F403
