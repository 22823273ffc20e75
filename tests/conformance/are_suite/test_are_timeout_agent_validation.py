"""ARE's `are.simulation.tests.timeout_agent_validation_test`, unchanged, run against SyncEnvironment (see conftest)."""

from are.simulation.tests.timeout_agent_validation_test import *  # noqa: F403
