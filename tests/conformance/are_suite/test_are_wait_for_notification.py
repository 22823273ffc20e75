"""ARE's `are.simulation.tests.wait_for_notification_test`, unchanged, run against SyncEnvironment (see conftest)."""

from are.simulation.tests.wait_for_notification_test import *  # noqa: F403
