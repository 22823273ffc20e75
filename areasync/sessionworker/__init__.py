"""What runs in a session worker process of `areasync serve --workers N`.

A session worker is forked from the front's preloaded fork server (`workers/pool.py`) and
runs an ordinary `Service` (`service/server.py`) that opens no port: its sessions, their
simulations, ARE and their journals live here, and its WebSocket connections are handed over,
already past their hello, by the front (`service/connection/handoff.py`). The front calls it over
the pool's channel for everything else (`handlers.py`): create, restore, list, stop. It never
holds the admin token: not in its environment, its arguments, a file it reads, nor a byte it
receives (the front strips tokens from every hello it hands over).

`confine.py` says what the kernel lets a worker reach; its pool applies it as the worker
starts, once it is forked and holds its channels.
"""
