"""An MCP endpoint per session, on the official `mcp` SDK's Streamable HTTP server.

- `tools.py`: the session's tools as MCP tools (ARE's names, descriptions, JSON Schemas) and
  areasync's bounded wait tool; no I/O.
- `calls.py`: what `tools/list` and `tools/call` do to a session, as its agent (shared with
  OpenEnv's `/mcp` route).
- `port.py`: the port (`--mcp-port`): screens, bearer tokens, the SDK's transport;
  `asgi.py`: one aiohttp request served by the SDK's ASGI application; `listening.py`: MCP
  session ids and the GET stream that carries notifications as they arrive.
"""
