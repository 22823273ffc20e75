"""How long the suite waits before a test fails instead of hanging.

A bound is never a speed claim: nothing asserts that anything is fast. It is set for a shared
2-core machine with both cores busy with other work, where a child Python process can spend tens
of seconds importing ARE alone, so that only a real hang reaches it.
"""

from __future__ import annotations

# A child process that imports ARE and plays a short session (an agent command, `areasync run`,
# a server until its banner): seconds on a quiet machine, over a minute at a load average of 15.
PROCESS_S = 240.0

# What a page in the headless browser is expected to show (Playwright's `expect` and actions):
# a server round trip and the page's script, on a loaded machine. Playwright's own default (5 s)
# is a speed claim there.
BROWSER_S = 60.0
