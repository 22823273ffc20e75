"""A session's stream to every subscriber, and what each connection still owes its client.

* `frames.py`: a WebSocket frame's bytes, built once, and the bytes of one write (`batch`).
* `hub.py`: each stream item encoded once, the same bytes handed to every subscriber.
* `outbox.py`: a connection's stream cursor and replies, written in order.
* `stalls.py`: a socket that takes no bytes for `write_timeout` is closed with 4008.
"""
