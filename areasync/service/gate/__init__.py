"""What may come in, and who may do what: the checks before a request reaches a session.

* `screens.py`: the screens every port applies to a request's head (`origin.py`: the Host and
  Origin checks).
* `screened.py`: those screens in front of websockets' request parser (a request with a body
  read only once admitted; `methods.py`: the methods served), and a message's bound before
  the hello.
* `sockets.py`: the socket beneath websockets: every use of websockets' internals.
* `admission.py`: the pool of sockets that have not said hello, idle ones out first.
* `auth.py`: the tokens: one per role of each session, and the admin token.
* `roles.py`: the role x frame-type matrix, in one table.
* `limits.py`: a connection's request-rate limit.
* `memory.py`: the memory ceiling past which no session or fork is made.
"""
