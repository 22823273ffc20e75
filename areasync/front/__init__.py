"""The front process of `areasync serve --workers N`: one public port, no session.

The front accepts every connection, answers HTTP and the dashboard, checks every token (it
alone holds the admin token), and creates sessions on the least loaded session worker
(`areasync/sessionworker/`, processes of a `workers.WorkerPool`). A WebSocket's hello is read
here, its token checked and removed, then the socket itself is handed to the session's worker
(`service/connection/handoff.py`): no frame passes through the front after that, but an admin's.

* `hello.py`: the sans-I/O verdict on a hello (which session, which role, or why not).
* `seats.py`: which worker holds which session, and placement (the least loaded).
* `server.py`: `Front`, the asyncio layer: the port, hand-offs, the pool, restores.
* `routes.py`: the HTTP routes, merging the workers' answers (`metrics.py`: `/metrics`).
* `admin.py`: an admin's WebSocket, relayed; its create, stop and fork carried out here.
* `supervisor.py`: the heartbeat that kills a worker whose event loop is held.
* `ports.py`: gaia2-cli's port per session (`--gaia2-ports`), each connection handed unread.
* `mcp.py`: the MCP port (`--mcp-port`): a connection's first head judged, then handed.
"""
