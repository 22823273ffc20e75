"""One client of one session, from its hello to its close: where a frame enters the service.

* `protocol.py`: `ConnectionCore`, the connection's state machine with no I/O: frames in,
  things to do out (the hello, the gate, the lanes, the replies).
* `websocket.py`: the asyncio layer around that core for a WebSocket client.
* `requests.py`: what each request does to its session: the one place a request (a tool call
  included) meets the simulation.
* `hello.py`, `door.py`: whether a hello may join, and the server's side of it (tokens, a place).
* `sessionview.py`: a session as the core sees it.
* `preempt.py`: which frames run aside (long controls) and which announce a stop early.
* `handoff.py`: an accepted socket handed from the front process to a session worker.
* `inprocess.py`: a session's client inside the server process (the adapters' way in).
* `redact.py`: the logger handed to websockets, which never logs a token.
"""
