"""Every knob of the service in one frozen record, with the defaults `areasync serve` uses.

The limits live here rather than as constants in the modules that enforce them so that a test
can shrink a bound (a send backlog of 8 items, a burst of 5 requests) and watch it trip, and an
operator can see every limit in one place. Each field says what it bounds and what happens when
the bound is hit.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

from areasync.bridge.judge.options import JudgeOptions
from areasync.journal import Durability
from areasync.policies import DEFAULT_MAX_FILE_BYTES, MAX_JUMP_S, MAX_TICKS, LeasePolicy
from areasync.protocol.frames import ImportMode, Mode
from areasync.service.gate.memory import default_memory_limit
from areasync.service.gate.origin import normalize_hosts, normalize_origins
from areasync.service.ports import port_range_problems


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

    # -- durability (service/durability/state_dir.py) ----------------------------------------------
    # Where every session's journal is kept (`DIR/sessions/<id>.journal`, plus the admin token
    # in `DIR/admin-token`); None: no journal, sessions live in memory only.
    state_dir: Path | None = None
    # When a journal record is durable: `every` (one fdatasync per record) or group commit
    # (`group:MS`; 0: records that arrive while a sync runs share the next one). A reply, and
    # any stream item an input caused, leaves the server only once that input is durable.
    durability: Durability | str = "group:0"
    # Wall seconds an ended session's journal is kept before a sweep removes it.
    retention: float = 7 * 86400.0
    # Every session's seed (ids, app seeds), 0 <= seed < SEED_LIMIT; None: a random 63-bit one
    # per session. Two servers given the same seed and scenario generate the same ids.
    seed: int | None = None

    # -- sessions created at start-up (and the defaults of create_session) -----------------
    mode: Mode = Mode.REALTIME
    speed: float = 1.0
    oracle: bool = False
    # How JSON scenarios are imported (`create_session` may say otherwise): auto picks Gaia2's
    # benchmark import for a multi-turn Gaia2 scenario run without the oracle, else plain.
    import_mode: ImportMode = ImportMode.AUTO
    lease_timeout: float = 300.0  # wall seconds an agent may keep its turn (fast mode)
    lease_policy: LeasePolicy = LeasePolicy.RELEASE  # what an expired lease does
    # Gaia2's LLM judge: `areasync serve --judge_model/--judge_provider/--judge_endpoint`,
    # with `are-benchmark run`'s meanings (`JudgeOptions`: the provider is needed with any of
    # them, the model defaults to ARE's, `local` needs the endpoint). With them, a JSON
    # scenario imported the benchmark way (which `auto` then picks for every scenario with
    # oracle events, outside oracle mode) is prepared and judged exactly as `are-benchmark
    # run` would (`areasync.bridge.judge.llm`); all None: no judge, as before. `judge` is the
    # three, checked.
    judge_model: str | None = None
    judge_provider: str | None = None
    judge_endpoint: str | None = None
    # Judge LLM calls in flight at once, server-wide, each in a worker thread (the sessions
    # whose judge must wait for a place stand still meanwhile; other sessions never wait).
    judge_calls: int = 16
    # The judge the three options above ask for, checked in `__post_init__` (see `judge`).
    _judge: JudgeOptions | None = dataclasses.field(
        default=None, init=False, repr=False, compare=False
    )

    # -- limits -----------------------------------------------------------------------------
    max_sessions: int = 64  # live sessions; create_session beyond it answers `capacity`
    keep_ended: int = 32  # ended sessions kept for replay; the oldest beyond it is discarded
    # Snapshots a session takes of itself for forks to start from (simulation/snapshots.py):
    # spaced so that a fork at any cut takes about `fork_within` wall seconds, as densely as
    # `snapshot_overhead` (the most of a session's wall time they may take) allows. 0: no
    # snapshots as sessions run (a fork with no cut still takes one).
    fork_within: float = 1.0
    snapshot_overhead: float = 0.1
    # Authenticated connections (those whose hello was accepted) server-wide; beyond it the
    # handshake gets 503 (and a hello that races past it, `capacity` + 4503).
    max_connections: int = 1024
    # Sockets that have not said hello yet (in their WebSocket handshake, or waiting to send
    # hello), counted apart from max_connections (admission.py). When all are taken, a new
    # socket is admitted by evicting the oldest: closed with 4408 (dropped, if it is still in
    # its handshake), or parks it until a place frees up (admission.py).
    max_pending_hellos: int = 512
    max_connections_per_session: int = 256  # attached clients; beyond it: `capacity` + 4503
    # Requests with a body in flight on one port (OpenEnv's POSTs on the main port, gaia2-cli's
    # on its adapter's, the router's POST /api/sessions), counted from their head until they
    # are answered: on the port, and per token. Beyond either, a request is refused from its
    # head (503, 429), its body unread (screens.py): a token cannot hold more than
    # max_bodies_per_token bodies of at most max_frame_bytes in memory at once.
    max_bodies: int = 64
    max_bodies_per_token: int = 4
    # An OpenEnv connection (`/openenv/<token>/ws`) that sends nothing for this many wall
    # seconds is reaped: its fresh session is stopped and the socket closed, saying why
    # (OpenEnv's trainers leak environments when they die without closing). A token's HTTP
    # episode (POST /reset, /step) with no request for as long leaves its session too.
    openenv_idle_timeout: float = 300.0
    # The directory whose `.json` scenario files OpenEnv's clients may start by path
    # (`initialize{scenario_path}`, relative to it) and enumerate by split (the Task API):
    # `openenv/catalog.py`; None: registered scenario ids only. No other file is ever read.
    scenario_dir: Path | None = None
    # A client frame above this many bytes gets `too_large` and close 4009; the WebSocket layer
    # reads at most twice this much before refusing outright (1009, message too big).
    max_frame_bytes: int = 16 * 1024 * 1024
    # An inline scenario (`create_session.scenario_json`) above this many bytes of JSON text
    # gets `too_large` before it is parsed; the connection stays open. The operator's own
    # scenario files (`--scenario FILE`) are held to it too, never to `max_file_bytes`
    # (`areasync.bridge.operator_files`).
    max_scenario_bytes: int = 8 * 1024 * 1024
    # What one session may take over its life (budget.py; docs/topics/security.md says why
    # these defaults). One `call_tool` or `send_user_message` frame above `max_call_bytes` gets
    # `too_large`; a request that would take its session past its bytes of input (tool calls,
    # user messages, controls), of journal, or of records and stream items held in memory gets
    # `session_limit_exceeded` (nothing runs, the connection and the session go on); a session
    # that gets past one on its own (a tool's large result, realtime ticks) is stopped, the
    # bound named in its `ended.reason`.
    max_call_bytes: int = 1024 * 1024
    max_session_input_bytes: int = 16 * 1024 * 1024
    max_session_journal_bytes: int = 64 * 1024 * 1024
    max_session_memory_bytes: int = 128 * 1024 * 1024
    # The server's resident memory at which it starts no new session or fork (`capacity`;
    # memory.py): by default 3/4 of the machine's memory or of its control group's limit.
    # None: no ceiling.
    memory_limit: int | None = dataclasses.field(default_factory=default_memory_limit)
    # The largest file a session's code may open for reading, in bytes (an attachment, a
    # document read from its Files app; `areasync.bridge.sandbox.audit`): a larger one is refused,
    # and the tool call fails saying so. 0 refuses every non-empty file.
    max_file_bytes: int = DEFAULT_MAX_FILE_BYTES
    # Requests per connection: a token bucket refilled at `rate` per second, holding `burst`.
    # A request finding it empty is answered `rate_limited` and dropped, and costs a strike:
    # `rate_strikes` of them, forgiven at a tenth of `rate` per second (limits.py); a request
    # refused with no strike left closes the connection with 4029 (it and later frames go
    # unanswered).
    rate: float | None = 2000.0  # None: no rate limit
    burst: int = 4000
    rate_strikes: int = 1000
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
    # The most ticks one `tick{n}` may run, and the most simulated seconds one `jump` (to, by
    # or next_event) may move the clock; beyond them the control is refused (`invalid_field`,
    # nothing changes). A Gaia2 scenario lasts 1,800 s; the bounds stop a control from holding
    # a session's lane for hours on a scenario without a duration (a stop interrupts it anyway).
    max_ticks: int = MAX_TICKS
    max_jump: float = MAX_JUMP_S
    # What one tool call (or scenario event) may cost, since the whole server waits while it
    # runs (`areasync.bridge.budget`): wall seconds, after which it is stopped and answered
    # `tool_budget_exceeded` (pure-Python code only: docs/topics/security.md, "CPU"); directory
    # entries listed by its file-system code (tree, ls, recursive cat/rm/mv), beyond which it
    # is refused the same way. And the files and directories a session's code may create over
    # its run (beyond it: `tool_failed`, saying so).
    tool_budget: float = 5.0
    max_listing: int = 5_000
    max_files_created: int = 5_000
    # Wall seconds `shutdown()` waits for sessions to stop before it ends the rest itself
    # (outside their lane) and writes their traces; the CLI exits at most this plus the
    # close grace later after SIGINT/SIGTERM.
    shutdown_timeout: float = 10.0
    # Wall seconds to complete the WebSocket opening handshake after connecting (else the
    # socket is dropped), then to send `hello` (else close 4408).
    handshake_timeout: float = 5.0
    hello_timeout: float = 5.0
    close_timeout: float = 5.0  # wall seconds a close handshake may take before the TCP abort
    shutdown_grace: float = 2.0  # wall seconds to flush `ended` to clients at shutdown
    write_limit: int = 64 * 1024  # bytes websockets buffers before `send` waits for the peer
    ping_interval: float | None = 10.0  # WebSocket keepalive (the client must answer pings)
    # A socket that takes no bytes for this many wall seconds is closed with 4008: its
    # user-space buffer made no progress, or a keepalive ping waited this long for its pong
    # (stalls.py; a client that stops reading on a quiet session goes within ping_interval +
    # write_timeout).
    write_timeout: float = 20.0

    # -- the MCP endpoint (service/adapters/mcp/) --------------------------------------------------
    # Serve each session's tools over MCP's Streamable HTTP on this port (0: any free port);
    # None: no MCP endpoint. A session's URL is http://HOST:PORT/mcp/<session id>.
    mcp_port: int | None = None
    # The most wall seconds one call of the MCP wait tool (areasync__wait_for_notifications)
    # waits; a longer `timeout` is refused, saying so.
    mcp_max_wait: float = 60.0
    # A listening MCP session's GET stream with nothing to send for this many wall seconds
    # gets a comment (a client's read timeout is longer: the SDK's is 300 s).
    mcp_sse_keepalive: float = 15.0

    # -- gaia2-cli's HTTP adapter (service/adapters/gaia2cli/) -------------------------------------
    # Its port (0: any free port; None: not served). Harnesses POST bodies and read server-sent
    # events, which the WebSocket port cannot serve (gaia2cli/http.py says why).
    gaia2_port: int | None = None
    # A port per session from this range (first, last), as gaia2-cli's runner reaches an
    # adapter: at the bare root of http://127.0.0.1:PORT, the user's role, no token (so only
    # on loopback: `gaia2cli/bare.py`). A session holds its port until it is discarded.
    gaia2_ports: tuple[int, int] | None = None
    # Bytes of messages an SSE client may leave unread before the server ends its stream
    # (with a last `event: end` saying where to resume); the session never waits for it.
    gaia2_sse_bytes: int = 1024 * 1024
    # Event streams (`GET /events`) open at once on the adapter's port, and per token; beyond
    # either, `/events` is answered 503 / 429 with a JSON body naming the bound.
    gaia2_max_streams: int = 256
    gaia2_streams_per_token: int = 8
    # An event stream with nothing to send for this many wall seconds gets a keep-alive comment
    # (`: keep-alive`); one open this long is ended with `event: end` saying where to resume
    # (`/events?after=<lastSeq>`), so no stream holds its socket and slot for ever.
    gaia2_sse_keepalive: float = 15.0
    gaia2_sse_lifetime: float = 3600.0
    # Sockets open at once on the adapter's port: one accepted beyond it is reset at once. A
    # socket with no request under way for `http_idle_timeout` wall seconds (a keep-alive
    # connection between requests, or one that never sends a request) is closed.
    gaia2_max_connections: int = 1024
    http_idle_timeout: float = 15.0

    def __post_init__(self) -> None:
        problems = [*self._coerce(), *self._bounds()]
        judge: JudgeOptions | None = None
        try:
            judge = JudgeOptions.from_options(
                self.judge_model, self.judge_provider, self.judge_endpoint
            )
        except ValueError as exc:
            problems.append(str(exc))
        object.__setattr__(self, "_judge", judge)
        if self.admin_token is not None and not self.admin_token:
            problems.append("admin_token must not be empty; omit it to generate a random one")
        if problems:
            raise ValueError("invalid service configuration: " + "; ".join(problems))

    def _coerce(self) -> list[str]:
        """Accept plain strings where enums and paths are meant ("fast", "traces"), as the CLI
        and tests pass them (a frozen dataclass needs object.__setattr__ for that); the
        problems with those that are not one."""
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
        if self.state_dir is not None and not isinstance(self.state_dir, Path):
            object.__setattr__(self, "state_dir", Path(self.state_dir))
        try:
            object.__setattr__(self, "durability", parse_durability(self.durability))
        except ValueError as exc:
            problems.append(str(exc))
        return problems

    def _bounds(self) -> list[str]:
        """The problems with numbers out of their range."""
        problems = []
        if self.speed <= 0:
            problems.append(f"speed must be > 0, got {self.speed}")
        for name in _AT_LEAST_ONE:
            if getattr(self, name) < 1:
                problems.append(f"{name} must be >= 1, got {getattr(self, name)}")
        if not isinstance(self.max_file_bytes, int) or self.max_file_bytes < 0:
            problems.append(
                f"max_file_bytes must be a whole number >= 0, got {self.max_file_bytes!r}"
            )
        if self.keep_ended < 0:
            problems.append(f"keep_ended must be >= 0, got {self.keep_ended}")
        problems += port_range_problems(self.gaia2_ports)
        if not 0 < self.fork_within < float("inf"):
            problems.append(
                f"fork_within must be a number of seconds > 0 (what a fork should take at "
                f"most), got {self.fork_within}"
            )
        if not 0 <= self.snapshot_overhead <= 1:
            problems.append(
                f"snapshot_overhead must be from 0 (no snapshots as sessions run) to 1 (as "
                f"much of a session's time as its snapshots need), got {self.snapshot_overhead}"
            )
        for name in _SECONDS:
            if not getattr(self, name) > 0:
                problems.append(f"{name} must be > 0 seconds, got {getattr(self, name)}")
        if self.tool_budget == float("inf"):
            problems.append("tool_budget must be a finite number of wall seconds")
        if self.max_jump == float("inf"):
            problems.append("max_jump must be a finite number of simulated seconds")
        if not (isinstance(self.retention, int | float) and 0 < self.retention < float("inf")):
            problems.append(
                f"retention must be a number of seconds > 0 (how long an ended session's "
                f"journal is kept), got {self.retention!r}"
            )
        if self.seed is not None and not (
            isinstance(self.seed, int)
            and not isinstance(self.seed, bool)
            and 0 <= self.seed < SEED_LIMIT
        ):
            problems.append(
                f"seed must be a whole number from 0 to 2**63-1 (or None: random), got "
                f"{self.seed!r}"
            )
        if self.memory_limit is not None and not (
            isinstance(self.memory_limit, int) and self.memory_limit > 0
        ):
            problems.append(
                f"memory_limit must be a number of bytes > 0 (or None: no ceiling), got "
                f"{self.memory_limit!r}"
            )
        if self.rate is not None and self.rate <= 0:
            problems.append(f"rate must be > 0 requests per second (or None), got {self.rate}")
        return problems

    @property
    def judge(self) -> JudgeOptions | None:
        """The judge `judge_model`, `judge_provider` and `judge_endpoint` ask for, checked;
        None without one."""
        return self._judge


# Seeds are journaled as msgpack integers, and random ones are 63-bit: the same range.
SEED_LIMIT = 2**63

DURABILITY_CHOICES = "`every` (one sync per record) or `group:MS` (group commit, MS >= 0 ms)"


def parse_durability(value: Durability | str) -> Durability:
    """`every`, `group:MS` (or a `Durability`) as a `Durability`; ValueError saying what is
    accepted otherwise."""
    if isinstance(value, Durability):
        return value
    text = str(value).strip().lower()
    if text == "every":
        return Durability.every()
    kind, _, ms = text.partition(":")
    if kind == "group" and ms:
        try:
            window = float(ms)
        except ValueError:
            window = float("nan")
        if 0 <= window < float("inf"):
            return Durability.group(window)
    raise ValueError(f"durability must be {DURABILITY_CHOICES}, got {value!r}")


# Counts and sizes that must be at least 1.
_AT_LEAST_ONE = (
    "max_sessions",
    "max_connections",
    "max_connections_per_session",
    "max_frame_bytes",
    "max_scenario_bytes",
    "max_call_bytes",
    "max_session_input_bytes",
    "max_session_journal_bytes",
    "max_session_memory_bytes",
    "burst",
    "rate_strikes",
    "max_pending_hellos",
    "max_lag",
    "max_pending_replies",
    "max_pending_reply_bytes",
    "max_ticks",
    "judge_calls",
    "gaia2_sse_bytes",
    "max_bodies",
    "max_bodies_per_token",
    "gaia2_max_streams",
    "gaia2_streams_per_token",
    "gaia2_max_connections",
    "max_listing",
    "max_files_created",
)
# Durations that must be positive.
_SECONDS = (
    "handshake_timeout",
    "hello_timeout",
    "openenv_idle_timeout",
    "mcp_max_wait",
    "mcp_sse_keepalive",
    "close_timeout",
    "write_timeout",
    "step_budget",
    "control_budget",
    "max_jump",
    "shutdown_timeout",
    "http_idle_timeout",
    "gaia2_sse_keepalive",
    "gaia2_sse_lifetime",
    "tool_budget",
)
