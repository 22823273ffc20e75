"""The logger handed to websockets: its records never carry a token.

At DEBUG, websockets logs every request line (`< GET /?token=... HTTP/1.1`), every header
(`< Authorization: Bearer ...`) and the start and end of every frame (the `hello` carries a
token, a `create_session` result carries the new session's tokens), and an unparsable request
is logged with its request line in the exception. `RedactingLogger` rewrites each record before
it is emitted: the value of a `token` query field, the token segment of an OpenEnv path
(`/openenv/<token>/...`), and the values of `Authorization`, `Proxy-Authorization`
and `Cookie` headers become `[redacted]`, a frame's content is replaced by its size, and a
`"token": "..."` JSON field loses its value; an exception is formatted and redacted the same way.
areasync's own loggers never log paths, headers or frames.

It also moves websockets' per-connection INFO lines ("connection open", "connection closed",
"connection rejected (200 OK)", "HTTP response sent (200 OK)") to DEBUG: every HTTP request on
the port (a dashboard polls `/api/sessions` every 2 s, a health check, `/metrics`) and every
WebSocket would otherwise be a line of `areasync serve`'s log at its default level, burying the
banner and the lines that matter. The server's own start and stop lines stay at INFO.
"""

from __future__ import annotations

import logging
import re
import traceback
from typing import Any

REDACTED = "[redacted]"

_RULES: tuple[tuple[re.Pattern[str], str], ...] = (
    # A data frame: "< TEXT '{...}' [123 bytes]" -> "< TEXT [content not logged] [123 bytes]".
    (
        re.compile(r"^([<>] (?:TEXT|BINARY|CONT)) .*( \[[^\]]*\])$", re.DOTALL),
        r"\1 [content not logged]\2",
    ),
    (re.compile(r"(?i)(\btoken=)[^&\s'\"#]*"), rf"\1{REDACTED}"),
    # An OpenEnv base URL carries its token as a path segment: /openenv/<token>/ws.
    (re.compile(r"(/openenv/)[^/?#\s'\"]+"), rf"\1{REDACTED}"),
    (
        re.compile(r"(?im)^([<>]?\s*(?:proxy-)?authorization:|[<>]?\s*cookie:).*$"),
        rf"\1 {REDACTED}",
    ),
    (re.compile(r"(?i)(authorization['\"]?\s*[:,=]\s*['\"]?)[^'\"\n]*"), rf"\1{REDACTED}"),
    (re.compile(r"(?i)(bearer\s+)\S+"), rf"\1{REDACTED}"),
    (re.compile(r"(?i)(\"tokens?\"\s*:\s*)(\"[^\"]*\"?|\{[^}]*\}?)"), rf'\1"{REDACTED}"'),
)


def redact(text: str) -> str:
    """`text` with every token-bearing part replaced (see the module docstring)."""
    for pattern, replacement in _RULES:
        text = pattern.sub(replacement, text)
    return text


# websockets' message templates logged at INFO once per connection or HTTP request.
PER_CONNECTION: frozenset[str] = frozenset(
    {
        "connection open",
        "connection closed",
        "connection rejected (%d %s)",
        "HTTP response sent (%d %s)",
    }
)


class RedactingLogger(logging.LoggerAdapter[logging.Logger]):
    """A logger adapter that emits `redact(message)`, exceptions included, and nothing else."""

    def __init__(self, logger: logging.Logger) -> None:
        super().__init__(logger, {})

    def log(self, level: int, msg: object, *args: object, **kwargs: Any) -> None:
        if level == logging.INFO and msg in PER_CONNECTION:
            level = logging.DEBUG  # one line per request: see the module docstring
        if not self.isEnabledFor(level):
            return
        try:
            text = str(msg) % args if args else str(msg)
        except (TypeError, ValueError):
            text = " ".join(str(part) for part in (msg, *args))
        exc_info = kwargs.pop("exc_info", None)
        if exc_info:
            if exc_info is True or not isinstance(exc_info, (tuple, BaseException)):
                import sys

                exc_info = sys.exc_info()
            if isinstance(exc_info, BaseException):
                exc_info = (type(exc_info), exc_info, exc_info.__traceback__)
            if exc_info[0] is not None:
                text += "\n" + "".join(traceback.format_exception(*exc_info)).rstrip()
        kwargs.pop("stack_info", None)
        self.logger.log(level, "%s", redact(text), **kwargs)
