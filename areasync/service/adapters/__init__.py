"""Other agents' protocols onto the same sessions, each through `connection/inprocess.py`.

* `openenv/`: OpenEnv's `/ws` and HTTP routes (with its `/mcp` JSON-RPC and Task API).
* `gaia2cli/`: gaia2-cli's HTTP+SSE adapter (`--gaia2-port`, `--gaia2-ports`), its artifacts.
* `mcp/`: an MCP endpoint per session (`--mcp-port`), the mcp SDK's Streamable HTTP.
"""
