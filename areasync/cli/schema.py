"""`areasync schema`: print the areasync/1 protocol's JSON Schema (`make schema` writes it)."""

from __future__ import annotations

import argparse
import sys

__all__ = ["schema"]


def schema(args: argparse.Namespace) -> int:
    """Write the protocol's JSON Schema to stdout; 0."""
    from areasync.protocol.schema import render_schema

    sys.stdout.write(render_schema())
    return 0
