"""Every knob of the service in one frozen record, with the defaults `areasync serve` uses.

The limits live here rather than as constants in the modules that enforce them so that a test
can shrink a bound (a send backlog of 8 items, a burst of 5 requests) and watch it trip, and an
operator can see every limit in one place. Each field says what it bounds and what happens when
the bound is hit.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

from areasync.protocol.frames import ImportMode, Mode
from areasync.service.origin import normalize_hosts, normalize_origins
from areasync.simulation import LeasePolicy


@dataclasses.dataclass(frozen=True, kw_only=True)
class ServiceConfig:
    """How the service listens, runs its sessions and protects itself."""

    # -- where ------------------------------------------------------------------------------
    host: str = "127.0.0.1"  # loopback by default: exposing sessions is an explicit choice
    port: int = 8765  # 0 picks a free port (tests); the bound port is Service.port
    admin_token: str | None = None  # None: a random one is generated at start-up
    trace_dir: Path | None = Path("traces")  # None: no trace files are written
    # Browsers (see origin.py): pages of these origins ("http://host:port") may open sockets
    # and call the HTTP routes, besides the server's own origins and clients sending no Origin;
    # and these names ("host" any port, or "host:port") are accepted in the Host header, besides
    # the names the server is bound as (a guard against DNS rebinding).
    allow_origins: tuple[str, ...] = ()
    allow_hosts: tuple[str, ...] = ()

    # -- sessions created at start-up (and the defaults of create_session) -----------------
    mode: Mode = Mode.REALTIME
    speed: float = 1.0
    oracle: bool = False
    # How JSON scenarios are imported (`create_session` may say otherwise): auto picks Gaia2's
    # benchmark import for a multi-turn Gaia2 scenario run without the oracle, else plain.
    import_mode: ImportMode = ImportMode.AUTO
    lease_timeout: float = 300.0  # wall seconds an agent may keep its turn (fast mode)
    lease_policy: LeasePolicy = LeasePolicy.RELEASE  # what an expired lease does

    # -- limits -----------------------------------------------------------------------------
    max_sessions: int = 64  # live sessions; create_session beyond it answers `capacity`
    keep_ended: int = 32  # ended sessions kept for replay; the oldest beyond it is discarded
    max_connections: int = 1024  # open sockets server-wide; beyond it the handshake gets 503
    max_connections_per_session: int = 256  # attached clients; beyond it: `capacity` + 4503
    # A client frame above this many bytes gets `too_large` and close 4009; the WebSocket layer
    # reads at most twice this much before refusing outright (1009, message too big).
    max_frame_bytes: int = 16 * 1024 * 1024
    # An inline scenario (`create_session.scenario_json`) above this many bytes of JSON text
    # gets `too_large` before it is parsed; the connection stays open.
    max_scenario_bytes: int = 8 * 1024 * 1024
    # Requests per connection: a token bucket refilled at `rate` per second, holding `burst`.
    # A request finding it empty is answered `rate_limited` and dropped; after `burst` such
    # answers in a row the connection is closed with 4029.
    rate: float | None = 2000.0  # None: no rate limit
    burst: int = 4000
    # Slow consumers: a subscriber whose socket stays full while `max_lag` stream items are
    # appended (it has stopped draining; see hub.py) is closed with 4008 (it resumes losslessly
    # with `since`); so is one with more than
    # `max_pending_replies` replies, or `max_pending_reply_bytes` of them, it has not read.
    max_lag: int = 10_000
    max_pending_replies: int = 1024
    max_pending_reply_bytes: int = 16 * 1024 * 1024
    # Fast mode runs a session's steps for at most this many wall seconds before it yields to
    # the event loop, which then hands subscribers what was logged: the stream's latency under
    # a flat-out run (the library's default is 2 ms, tuned for events per second).
    step_budget: float = 0.001
    # A long control (jump, next_event, tick{n}) yields to the event loop after this many wall
    # seconds of firing items: the longest other sessions and sockets wait for it.
    control_budget: float = 0.02
    # Wall seconds to complete the WebSocket opening handshake after connecting (else the
    # socket is dropped), then to send `hello` (else close 4408).
    handshake_timeout: float = 10.0
    hello_timeout: float = 10.0
    close_timeout: float = 5.0  # wall seconds a close handshake may take before the TCP abort
    shutdown_grace: float = 2.0  # wall seconds to flush `ended` to clients at shutdown
    write_limit: int = 64 * 1024  # bytes websockets buffers before `send` waits for the peer
    ping_interval: float | None = 20.0  # WebSocket keepalive (the client must answer pings)

    def __post_init__(self) -> None:
        # Accept plain strings where enums and paths are meant ("fast", "traces"), as the CLI
        # and tests pass them; a frozen dataclass needs object.__setattr__ for that.
        problems = []
        try:
            object.__setattr__(self, "mode", Mode(self.mode))
        except ValueError:
            problems.append(f"mode must be one of {', '.join(m.value for m in Mode)}")
        try:
            object.__setattr__(self, "import_mode", ImportMode(self.import_mode))
        except ValueError:
            problems.append(
                f"import_mode must be one of {', '.join(m.value for m in ImportMode)}, "
                f"got {self.import_mode!r}"
            )
        try:
            object.__setattr__(self, "lease_policy", LeasePolicy(self.lease_policy))
        except ValueError:
            problems.append(f"lease_policy must be one of {', '.join(p for p in LeasePolicy)}")
        try:
            object.__setattr__(self, "allow_origins", normalize_origins(self.allow_origins))
            object.__setattr__(self, "allow_hosts", normalize_hosts(self.allow_hosts))
        except ValueError as exc:
            problems.append(str(exc))
        if self.trace_dir is not None and not isinstance(self.trace_dir, Path):
            object.__setattr__(self, "trace_dir", Path(self.trace_dir))
        if self.speed <= 0:
            problems.append(f"speed must be > 0, got {self.speed}")
        for name in (
            "max_sessions",
            "max_connections",
            "max_connections_per_session",
            "max_frame_bytes",
            "max_scenario_bytes",
            "burst",
            "max_lag",
            "max_pending_replies",
            "max_pending_reply_bytes",
        ):
            if getattr(self, name) < 1:
                problems.append(f"{name} must be >= 1, got {getattr(self, name)}")
        if self.keep_ended < 0:
            problems.append(f"keep_ended must be >= 0, got {self.keep_ended}")
        for name in (
            "handshake_timeout",
            "hello_timeout",
            "close_timeout",
            "step_budget",
            "control_budget",
        ):
            if not getattr(self, name) > 0:
                problems.append(f"{name} must be > 0 seconds, got {getattr(self, name)}")
        if self.rate is not None and self.rate <= 0:
            problems.append(f"rate must be > 0 requests per second (or None), got {self.rate}")
        if self.admin_token is not None and not self.admin_token:
            problems.append("admin_token must not be empty; omit it to generate a random one")
        if problems:
            raise ValueError("invalid service configuration: " + "; ".join(problems))
