"""An MCP endpoint per session, on the official `mcp` SDK's Streamable HTTP server.

It serves the tool calls OpenEnv's episodes already make (`openenv/tools.py`: a session's tools
as MCP tools; `openenv/toolcalls.py`: `tools/list` and `tools/call` as the session's agent,
shared with OpenEnv's own `/mcp` route), so it sits above the OpenEnv adapter.

- `port.py`: the port (`--mcp-port`): screens, bearer tokens, the SDK's transport;
  `asgi.py`: one aiohttp request served by the SDK's ASGI application; `listening.py`: MCP
  session ids and the GET stream that carries notifications as they arrive.
"""
