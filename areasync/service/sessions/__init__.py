"""A server's sessions: the registry, each session, and how one is made.

* `registry.py`: creates, stops, ends and forgets the server's sessions.
* `session.py`: one session: its `Simulation`, stream hub, tokens, epoch and clients.
* `creation.py`: how the registry makes a session (a scenario that fails refused as data).
* `budget.py`: what one session may take of the server over its life.
* `view.py`: a session's state as a hello reads it (`SessionView`).
* `names.py`: ids made safe as URL path segments and file names.
"""
