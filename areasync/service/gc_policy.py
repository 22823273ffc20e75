"""The garbage-collector policy of a long-running server process.

ARE and the start-up sessions leave about a million long-lived objects. Every full collection
would scan them all, pausing the stream mid-burst (docs/topics/performance.md, "Design
measurements"), and stream items in flight wait them out. After start-up those objects are
frozen out of collection, and full collections are made ten times rarer than CPython's default
(young collections are unchanged, so garbage cycles are still found; only the oldest generation
is visited less often). A fork from a snapshot moves what it copied to the oldest generation
(`bridge/state_copy.py`), and what was frozen here with it: from then on full collections walk
the start-up objects too.
"""

from __future__ import annotations

import gc

# CPython's default is (700, 10, 10): a full collection every 100 young ones.
SERVER_THRESHOLDS = (700, 10, 100)


def settle() -> None:
    """Collect once, freeze what survives, and make full collections rarer. Process-wide."""
    gc.collect()
    gc.freeze()
    gc.set_threshold(*SERVER_THRESHOLDS)
