"""The last module the workers' fork server imports (`boot.PRELOAD`): it freezes what was
imported before it.

The fork server imports ARE and LiteLLM once, then forks every worker from that heap. Frozen
out of the garbage collector there (`gc.freeze`, CPython's advice before forking), those
millions of long-lived objects are walked by no collection again: not by a worker's full
collections, which would also touch (and so copy) the pages it shares with the fork server,
and not by the fork server's own exit, when the command ends and CPython's finalisation
collects the whole heap (seconds, while the fork server still holds the command's stdout and
stderr, so a pipeline reading them waited that long for their end).

Importing this module freezes the importing process's heap: only the fork server imports it.
"""

from __future__ import annotations

import gc

gc.freeze()
