"""OpenEnv's `/mcp` route: the session's tools for OpenEnv's `MCPToolClient` (production mode).

OpenEnv's client does not speak MCP's Streamable HTTP there: it POSTs one JSON-RPC 2.0 request
per call to `<base>/mcp` and reads one JSON answer (HTTP 200, a JSON-RPC `error` when it
failed), with OpenEnv's own methods around MCP's:

==========================  ===================================  ================================
method                      params                               result
==========================  ===================================  ================================
openenv/session/create                                           `{"session_id"}` (the session)
tools/list                  `{"session_id"?}`                    `{"tools": [{name, description,
                                                                 inputSchema}]}`
tools/call                  `{"name", "arguments", ...}`         `{"data", "content", "isError",
                                                                 "notifications"}`
openenv/session/close       `{"session_id"}`                     `{"session_id", "closed"}`
==========================  ===================================  ================================

The client then opens `<base>/ws?session_id=...`, which is the same session's `/ws`. Tools,
calls and errors are the MCP endpoint's (`toolcalls.py`), on the credential's HTTP
episode (`held.py`, shared with `POST /step`); a failed call is a JSON-RPC error (code -32000)
whose message says why, which `MCPToolClient.call_tool` raises. Like OpenEnv's other HTTP
routes here, it serves a session's token only (`routes.py`).
"""

from __future__ import annotations

import json
from typing import Any

from areasync.service.adapters.openenv import toolcalls
from areasync.service.adapters.openenv.credential import Credential
from areasync.service.adapters.openenv.held import HeldEpisodes
from areasync.service.adapters.openenv.messages import OpenEnvError

PARSE_ERROR = -32700
INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
SERVER_ERROR = -32000

METHODS = ("openenv/session/create", "tools/list", "tools/call", "openenv/session/close")


def _error(request_id: Any, code: int, message: str) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "error": {"code": code, "message": message}, "id": request_id}


def failure(message: str) -> dict[str, Any]:
    """A request that could not be answered (it ran past the HTTP bound): a server error."""
    return _error(None, SERVER_ERROR, message)


def _success(request_id: Any, result: Any) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "result": result, "id": request_id}


async def answer(
    held: HeldEpisodes, credential: Credential, body: bytes, max_wait: float
) -> dict[str, Any]:
    """The JSON-RPC answer to one `/mcp` request."""
    try:
        request = json.loads(body or b"null")
    except ValueError as exc:
        return _error(None, PARSE_ERROR, f"Parse error: {exc}")
    if not isinstance(request, dict) or not isinstance(request.get("method"), str):
        return _error(None, INVALID_REQUEST, "a request is a JSON-RPC 2.0 object with `method`")
    request_id = request.get("id")
    method = request["method"]
    params = request.get("params") or {}
    if not isinstance(params, dict):
        return _error(request_id, INVALID_PARAMS, "Params must be an object")
    if method not in METHODS:
        return _error(
            request_id,
            METHOD_NOT_FOUND,
            f"Method not found: {method[:60]}; this route answers {', '.join(METHODS)}",
        )
    if credential.fresh:
        return _error(
            request_id,
            SERVER_ERROR,
            "<base>/mcp serves one session's tools: use a session's OpenEnv URL (its token), "
            "printed by `areasync serve`",
        )
    key = credential.key
    if method == "openenv/session/close":
        await held.drop(key)
        return _success(request_id, {"session_id": credential.session_id, "closed": True})
    held.restart(key)
    episode = held.episode(key, credential)
    async with held.using(episode):
        if method == "openenv/session/create":
            try:
                await toolcalls.joined(episode)
            except OpenEnvError as refused:
                return _error(request_id, SERVER_ERROR, refused.message)
            return _success(request_id, {"session_id": credential.session_id})
        if method == "tools/list":
            try:
                return _success(
                    request_id, {"tools": await toolcalls.list_tools(episode, max_wait)}
                )
            except OpenEnvError as refused:
                return _error(request_id, SERVER_ERROR, refused.message)
        name = params.get("name")
        arguments = params.get("arguments", {})
        if not isinstance(name, str) or not isinstance(arguments, dict):
            return _error(
                request_id, INVALID_PARAMS, "tools/call takes `name` (a string) and `arguments`"
            )
        outcome = await toolcalls.call_tool(episode, name, arguments, max_wait)
    if outcome.error:
        return _error(request_id, SERVER_ERROR, outcome.text)
    return _success(
        request_id,
        {
            "data": outcome.value,
            "content": [{"type": "text", "text": outcome.text}],
            "isError": False,
            "notifications": outcome.notifications,
        },
    )
