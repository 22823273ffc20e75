"""A process that journals inputs under `every` and prints each seq once it is acknowledged;
tests/journal/test_crash.py kills it with SIGKILL at a random moment.

Usage: python -m tests.journal.crash_child STATE_DIR
"""

from __future__ import annotations

import sys

import anyio

from areasync.journal import Durability, JournalStore
from tests.journal.support import created, tool_call


async def main(directory: str) -> None:
    async with JournalStore(directory).create(created("crash"), Durability.every()) as writer:
        print("created", flush=True)
        seq = 0
        while True:
            # A few appends in flight at once, so the kill can land with records queued.
            tickets = [writer.append(tool_call(seq + i)) for i in range(3)]
            for i, ticket in enumerate(tickets):
                await ticket
                print(seq + i, flush=True)
            seq += len(tickets)


if __name__ == "__main__":
    anyio.run(main, sys.argv[1])
