"""What the front's fork server imports once, so that every session worker starts with it.

Importing this module imports the session worker's handlers (the service, the bridge, ARE) and
runs ARE's scenario discovery (`registered_ids`: it imports every scenario module, about a
second), which each worker's service would otherwise do on its own at start: done once here,
it is shared by every worker (copy-on-write pages of the fork server) instead of paid and held
by each. It also reads what the standard library reads lazily from outside what a confined
worker may read (`mimetypes`' tables in `/etc`, which ARE's scenario loading consults). It
starts no thread: the fork server must have none when it forks.
"""

from __future__ import annotations

import mimetypes
import threading

import anyio._backends._asyncio  # noqa: F401  # the worker's event loop's anyio backend

from areasync.bridge.scenarios.loading import registered_ids
from areasync.sessionworker import handlers  # noqa: F401  # what a worker runs

registered_ids()
mimetypes.init()
assert threading.active_count() == 1, "the fork server must have no thread when it forks"
