"""ARE's own default agent playing a live session: the one agent here that imports ARE.

* `cli.py`: `areasync agent are`, its options (no ARE imported) and its run.
* `agent.py`: ARE's agent, built by ARE's own builder, with its tools calling the session.
* `session.py`: the live session, seen by that agent as the in-process environment it expects.
* `results.py`: a tool's result and failure over the socket, turned back into ARE's.
"""
