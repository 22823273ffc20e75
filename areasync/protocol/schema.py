"""The published JSON Schema of the areasync/1 wire protocol, generated from the frame Structs.

A client in any language needs only this document: ``$defs.ClientFrame`` is what it may send,
``$defs.ServerFrame`` what it will receive, both discriminated by ``type``. The checked-in copy,
``areasync/protocol/schema.json``, is tested to equal :func:`render_schema`; regenerate it with
``python -m areasync.protocol.schema > areasync/protocol/schema.json`` (or ``areasync schema``).
"""

from __future__ import annotations

import inspect
import json
import sys
from pathlib import Path
from typing import Any, Final

import msgspec

from areasync.protocol.frames import (
    JSON_SCHEMA_EXTRA,
    PROTOCOL,
    RESULT_RECORDS,
    ClientFrame,
    ServerFrame,
)

SCHEMA_PATH: Final = Path(__file__).with_name("schema.json")
"""The checked-in schema (shipped as package data)."""

_REF_TEMPLATE: Final = "#/$defs/{name}"


def generate_schema() -> dict[str, Any]:
    """The protocol's JSON Schema (draft 2020-12): any frame, client or server."""
    (client, server, *_), defs = msgspec.json.schema_components(
        (ClientFrame, ServerFrame, *RESULT_RECORDS), ref_template=_REF_TEMPLATE
    )
    for cls, extra in JSON_SCHEMA_EXTRA.items():
        defs[cls.__name__].update(extra)
    _clean_descriptions(defs)
    defs["ClientFrame"] = {
        "description": "A frame a client sends: JSON in a text frame or msgpack in a binary one.",
        **client,
    }
    defs["ServerFrame"] = {
        "description": "A frame the server sends, in the encoding of the client's hello.",
        **server,
    }
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": f"{PROTOCOL} wire protocol",
        "description": (
            f"Frames of the areasync WebSocket protocol ({PROTOCOL}). Clients send ClientFrame, "
            "the server sends ServerFrame; both are objects discriminated by `type`. Fields "
            "are only ever added with defaults: clients ignore unknown fields and unknown frame "
            "types; the server rejects unknown fields in client frames."
        ),
        "anyOf": [{"$ref": "#/$defs/ClientFrame"}, {"$ref": "#/$defs/ServerFrame"}],
        "$defs": defs,
    }


def _clean_descriptions(node: Any) -> None:
    """Every description as `inspect.cleandoc` makes it: msgspec releases differ in how much of
    a docstring's indentation they keep (an Enum's, up to 0.22), and the schema must not."""
    if isinstance(node, dict):
        for key, value in node.items():
            if key == "description" and isinstance(value, str):
                node[key] = inspect.cleandoc(value)
            else:
                _clean_descriptions(value)
    elif isinstance(node, list):
        for item in node:
            _clean_descriptions(item)


def render_schema() -> str:
    """The schema as stable text: sorted keys, indent 2, trailing newline."""
    return json.dumps(generate_schema(), indent=2, sort_keys=True) + "\n"


def main() -> None:
    sys.stdout.write(render_schema())


if __name__ == "__main__":
    main()
