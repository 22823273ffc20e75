"""ARE's `are.simulation.tests.notification_test`, unchanged, run against SyncEnvironment (see conftest)."""

from are.simulation.tests.notification_test import *  # noqa: F403
