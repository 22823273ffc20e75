"""gaia2-cli's HTTP+SSE adapter over areasync sessions, so a harness written for it runs here.

`translate.py` decides (no I/O), `feed.py` keeps a session's messages from its stream,
`http.py` serves them on the port `ServiceConfig.gaia2_port`.
"""
