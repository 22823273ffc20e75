"""OpenEnv's protocol on areasync's port: RL trainers' `EnvClient` drives a session unchanged.

OpenEnv (PyPI `openenv-core`) is what TRL, TorchRL, SkyRL, NeMo Gym and verifiers speak: an
environment server with `WS /ws` (one environment per connection, strictly request/response),
`POST /reset`, `POST /step`, `GET /state`, `/schema`, `/metadata` and `/health`. Its client takes
nothing but a base URL, so the credential travels in it: `http://HOST:PORT/openenv/<token>`.

- `messages.py`: the sans-I/O translator: an OpenEnv message or action into the areasync frames
  it means, and the observation, state and error answered (OpenEnv's shapes).
- `episode.py`: one OpenEnv episode on a session: runs those frames through the session's own
  gate (`ConnectionCore`) and `requests.perform`, the one path to the simulation.
- `socket.py`: the `/ws` loop; `routes.py`: the URL layout and the HTTP routes.
- `tools.py`: a session's tools as MCP tools (ARE's names, descriptions, JSON Schemas) and
  areasync's bounded wait tool; no I/O. `toolcalls.py`: what MCP's `tools/list` and
  `tools/call` do to a session through an episode, as its agent; `mcp.py`: OpenEnv's `/mcp`
  JSON-RPC route on them (the MCP adapter's Streamable HTTP port uses them too).
"""
