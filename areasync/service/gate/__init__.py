"""What may come in, and who may do what: the checks before a request reaches a session.

* `screens.py`: the screens every port applies to a request's head (`origin.py`: the Host and
  Origin checks).
* `admission.py`: the pool of sockets that have not said hello, idle ones out first.
* `auth.py`: the tokens: one per role of each session, and the admin token.
* `roles.py`: the role x frame-type matrix, in one table.
* `limits.py`: a connection's request-rate limit.
* `memory.py`: the memory ceiling past which no session or fork is made.
"""
