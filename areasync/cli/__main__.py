"""`python -m areasync.cli ...`: the `areasync` command, as its console script runs it."""

from __future__ import annotations

import sys

from areasync.cli import main

if __name__ == "__main__":
    sys.exit(main())
