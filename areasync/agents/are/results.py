"""A tool's result and failure over the socket, turned back into what ARE's agent gets in-process.

ARE's default agent shows the model ``str(result)`` of the Python object the app returned
(``JsonActionExecutor``: ``get_observation_log(..., str(observation))``), and on failure the
app's exception text inside ``"Error in tool call execution: {e} ..."``. Over the socket the
server sends the result as JSON data (``areasync.bridge.convert.to_plain``: a dataclass becomes
a dict) and a failure as a protocol error whose message wraps the app's text. So:

* :func:`rebuild` converts the JSON value back into the tool's declared return type (ARE's
  annotations: ``ReturnedEmails``, ``list[Email]``, ``str | None``), so that ``str()`` of it is
  ARE's in-process text. It leaves the value as it came where the declared type cannot describe
  it: a tool with an ``llm_formatter`` (the server already applied it), ``Any`` inside a
  container (``dict[str, Any]`` holding ARE objects shows as the objects' JSON form), a type
  that does not resolve or convert.
* :func:`app_error_text` recovers the app's own exception text from the server's message
  (``"{tool} failed: {text}; ARE logged ..."`` and ``"invalid arguments for {tool}: {text};
  ..."``, see ``areasync.service.connection.websocket``), so that the agent's error observation
  reads as in-process.
"""

from __future__ import annotations

import inspect
import logging
import typing
from typing import Any, Final

import msgspec

logger = logging.getLogger("areasync.agents.are")

# The server's wording around an app's own exception text (areasync.service.connection.websocket and
# areasync.bridge.tools); only these exact frames are taken apart.
_FAILED_SUFFIX: Final = "; ARE logged the call with its exception (an AGENT event on the stream)"
_INVALID_SUFFIX: Final = "; nothing was run (list_tools gives the arguments)"
_EXPECTED: Final = "; expected: "


def return_type(function: Any) -> Any:
    """The declared return type of an app's tool function, resolved; None when unknown."""
    if function is None or getattr(function, "llm_formatter", None) is not None:
        return None  # the server formatted the result already: nothing to rebuild
    inner = inspect.unwrap(function)
    try:
        hints = typing.get_type_hints(inner)
    except Exception:
        return None
    declared = hints.get("return")
    if declared is None or declared is type(None) or declared is Any:
        return None
    return declared


def rebuild(value: Any, declared: Any) -> Any:
    """``value`` (JSON data) as an instance of ``declared``, or ``value`` itself if it will not
    convert (see the module docstring)."""
    if declared is None or value is None:
        return value
    try:
        return msgspec.convert(value, declared, strict=False)
    except (msgspec.ValidationError, TypeError, ValueError) as exc:
        logger.debug("result kept as JSON (%s does not take it: %s)", declared, exc)
        return value


def app_error_text(tool: str, message: str) -> str:
    """The app's own exception text inside the server's error ``message`` for ``tool``."""
    failed = f"{tool} failed: "
    if message.startswith(failed):
        text = message[len(failed) :]
        return text.removesuffix(_FAILED_SUFFIX)
    invalid = f"invalid arguments for {tool}: "
    if message.startswith(invalid):
        text = message[len(invalid) :].removesuffix(_INVALID_SUFFIX)
        # The server's up-front check adds the expected names; ARE's TypeError has none.
        cut = text.rfind(_EXPECTED)
        return text if cut < 0 else text[:cut]
    return message
