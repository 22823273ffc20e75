"""ARE's `are.simulation.tests.scheduling_test`, unchanged, run against SyncEnvironment (see conftest)."""

from are.simulation.tests.scheduling_test import *  # noqa: F403
