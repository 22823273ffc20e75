"""ARE's `are.simulation.tests.apps.reminder_test`, unchanged, run against SyncEnvironment (see conftest)."""

from are.simulation.tests.apps.reminder_test import *  # noqa: F403
