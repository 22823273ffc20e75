"""ARE's `are.simulation.tests.apps.agent_user_interface_test`, unchanged, run against SyncEnvironment (see conftest)."""

from are.simulation.tests.apps.agent_user_interface_test import *  # noqa: F403
