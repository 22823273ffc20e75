"""HTTP methods: GET and HEAD are served; every other method gets 405 with `Allow: GET, HEAD`.

The answer itself is `HttpRoutes`' (the first check of every request). This module makes sure
such requests reach it. websockets' request parser reads any method, but refuses a request that
has a body (`Content-Length` other than 0, or `Transfer-Encoding`) by closing the connection
without a word, and a browser's POST (a form, a `fetch` with a body) always has one. So
`screened.ScreenedConnection` puts a screen in front of websockets' parser: when a request's method
is neither GET nor HEAD, the screen reads the request line and headers itself, ignores the body,
and hands websockets the request, which `process_request` answers 405; everything the client
sends after it is discarded. GET and HEAD requests (and anything that does not start like an
HTTP request) go to websockets' parser untouched, byte for byte.

The exceptions are the port's routes with a body (its `PortScreen`'s `BodyRule`s: OpenEnv's
`POST <base>/reset` and `POST <base>/step` under `/openenv/`, see `openenv/routes.py`; a
cluster's router's `POST /api/sessions`): the screen judges such a request by its head first
(`screens.py`: Host, Origin, token, Content-Length, bodies in flight), and reads its body only
once admitted, handing it to `process_request` as a `screened.PostRequest`; a refused one goes to
`process_request` as a `screened.RefusedRequest`, its body never read.

The screen relies on websockets' internals, so it lives in screened.py, beside sockets.py.
"""

from __future__ import annotations

ALLOWED_METHODS: tuple[str, ...] = ("GET", "HEAD")
ALLOW = ", ".join(ALLOWED_METHODS)

OPENENV_PREFIX = "/openenv/"  # OpenEnv's base URLs: /openenv/<token>
