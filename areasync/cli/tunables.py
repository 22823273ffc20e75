"""`areasync serve`'s limits and tuning: ServiceConfig fields taken as `--kebab-case` options.

One table, so that the parser (`add_tunable_options`) and the command (`tunables_given`) cannot
disagree on a field: each option defaults to None, so that the field keeps ServiceConfig's
default unless the option is given, and its help shows that default.
"""

from __future__ import annotations

import argparse
from typing import Any, NamedTuple

__all__ = ["SERVE_TUNABLES", "Tunable", "add_tunable_options", "tunables_given"]


class Tunable(NamedTuple):
    """One ServiceConfig field `serve` exposes: its name, argparse's type for it, what it bounds."""

    field: str
    kind: type
    meaning: str


SERVE_TUNABLES: tuple[Tunable, ...] = (
    Tunable(
        "max_connections",
        int,
        "authenticated clients server-wide; beyond it the handshake gets 503",
    ),
    Tunable(
        "max_pending_hellos",
        int,
        "sockets not yet past hello; when full the oldest idle is closed 4408",
    ),
    Tunable("max_connections_per_session", int, "clients attached to one session"),
    Tunable("max_bodies", int, "requests with a body in flight on a port; beyond it 503"),
    Tunable("max_bodies_per_token", int, "requests with a body in flight per token; beyond it 429"),
    Tunable("gaia2_max_streams", int, "gaia2-cli /events streams open at once; beyond it 503"),
    Tunable("gaia2_streams_per_token", int, "gaia2-cli /events streams per token; beyond it 429"),
    Tunable("gaia2_max_connections", int, "sockets open on the gaia2-cli port; beyond it reset"),
    Tunable(
        "gaia2_sse_lifetime", float, "wall seconds an /events stream lasts, then ends to resume"
    ),
    Tunable(
        "http_idle_timeout", float, "wall seconds a gaia2-cli socket may wait between requests"
    ),
    Tunable(
        "keep_ended",
        int,
        "ended sessions kept for replay and their artifacts (each holds its --gaia2-ports "
        "port); beyond it the oldest is discarded",
    ),
    Tunable(
        "openenv_idle_timeout",
        float,
        "wall seconds an OpenEnv client (a /ws, or a token's HTTP episode) may send nothing, "
        "then it is reaped",
    ),
    Tunable(
        "fork_within",
        float,
        "wall seconds a fork at any cut should take: sessions take snapshots this far apart",
    ),
    Tunable(
        "snapshot_overhead",
        float,
        "the most of a session's wall time its snapshots may take (0: none as it runs)",
    ),
    Tunable("max_frame_bytes", int, "largest client frame, in bytes"),
    Tunable(
        "max_scenario_bytes",
        int,
        "largest scenario, in bytes of JSON: a --scenario file, or a create_session's inline one",
    ),
    Tunable(
        "max_file_bytes", int, "largest file a session's tools may read (attachment, document)"
    ),
    Tunable("max_call_bytes", int, "largest call_tool or send_user_message frame, in bytes"),
    Tunable(
        "max_session_input_bytes",
        int,
        "bytes of input (tool calls, user messages, controls) one session may take in its life",
    ),
    Tunable("max_session_journal_bytes", int, "bytes one session's journal may hold"),
    Tunable(
        "max_session_memory_bytes",
        int,
        "bytes of records and stream items one session may hold (weighed: see "
        "docs/topics/security.md)",
    ),
    Tunable("rate", float, "requests per second per connection (token bucket refill)"),
    Tunable("burst", int, "requests a connection may make at once (token bucket size)"),
    Tunable("rate_strikes", int, "rate_limited refusals (forgiven at rate/10 per s), then 4029"),
    Tunable(
        "max_lag", int, "stream items appended while a client's socket does not drain, then 4008"
    ),
    Tunable("handshake_timeout", float, "wall seconds to finish the WebSocket handshake"),
    Tunable("hello_timeout", float, "wall seconds to send hello after the handshake"),
    Tunable("write_timeout", float, "wall seconds a socket may take no bytes, then 4008"),
    Tunable(
        "ping_interval", float, "wall seconds between keepalive pings (unanswered: write_timeout)"
    ),
    Tunable(
        "step_budget", float, "wall seconds of fast-mode steps between hand-outs to subscribers"
    ),
    Tunable("control_budget", float, "wall seconds a long jump/tick runs between yields"),
    Tunable("max_ticks", int, "ticks one tick{n} may run; more is refused (split it)"),
    Tunable("max_jump", float, "simulated seconds one jump may move the clock; more is refused"),
    Tunable(
        "tool_budget",
        float,
        "wall seconds one tool call or event may hold the server; then it is stopped "
        "(tool_budget_exceeded)",
    ),
    Tunable(
        "max_listing", int, "directory entries one tool call may list (tree, ls); more is refused"
    ),
    Tunable("max_files_created", int, "files and directories a session's tools may create"),
    Tunable(
        "shutdown_timeout", float, "wall seconds sessions get to stop at shutdown, then forced"
    ),
)


def add_tunable_options(serve: argparse.ArgumentParser) -> None:
    """Add the group "limits and tuning" to `serve`'s parser: an option per `SERVE_TUNABLES`."""
    from areasync.service.config import ServiceConfig

    limits = serve.add_argument_group(
        "limits and tuning",
        "ServiceConfig fields (defaults in parentheses; see docs/reference/limits.md)",
    )
    defaults = ServiceConfig()
    for tunable in SERVE_TUNABLES:
        limits.add_argument(
            "--" + tunable.field.replace("_", "-"),
            type=tunable.kind,
            default=None,
            metavar="N",
            help=f"{tunable.meaning} ({getattr(defaults, tunable.field)})",
        )


def tunables_given(args: argparse.Namespace) -> dict[str, Any]:
    """The ServiceConfig fields given on the command line, by name."""
    given = {t.field: getattr(args, t.field) for t in SERVE_TUNABLES}
    return {field: value for field, value in given.items() if value is not None}
