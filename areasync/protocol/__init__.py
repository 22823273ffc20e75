"""The areasync/1 wire protocol: frames, codecs, error codes and the published JSON Schema.

Everything that crosses a socket is defined here and nowhere else, so that a client in any
language can be written from the schema alone and the server, the Python client and the tests
agree byte for byte. A text WebSocket frame carries JSON, a binary frame msgpack; the messages
are the same either way, and the server answers in the encoding of the client's ``hello``.

Modules:

- :mod:`~areasync.protocol.records`: plain records the simulation produces (events,
  notifications, tools, clock state);
- :mod:`~areasync.protocol.frames`: one msgspec Struct per frame, in two tagged unions;
- :mod:`~areasync.protocol.sessions`: the admin's answers about sessions (created, stopped,
  listed), built by the server and decoded by the client;
- :mod:`~areasync.protocol.merged`: a front's and a cluster router's own answers (their merged
  session listings) and every server's ``/health``;
- :mod:`~areasync.protocol.codec`: decode client frames, encode server frames (and the reverse,
  for clients), each stream item encoded once per encoding;
- :mod:`~areasync.protocol.errors`: error codes, :class:`ProtocolError`, WebSocket close codes;
- :mod:`~areasync.protocol.values`: what a value in a request may be (JSON that every encoding
  and a session's journal carry unchanged);
- :mod:`~areasync.protocol.schema`: the JSON Schema (``python -m areasync.protocol.schema``).

Compatibility rules (what may change within ``areasync/1``):

1. Fields are only ever *added*, and only with a default. Existing fields keep their name, type
   and meaning. Anything else is a new protocol version, announced in ``welcome.protocol``. A
   field added to a client frame is left off the wire while it has its default (the frame is
   ``omit_defaults``: ``hello.batch``, ``jump.inclusive``), so a client that does not use it
   still works with servers older than the field, and one that does gets a clear
   ``invalid_field`` from them (rule 3) rather than a silently different behaviour. A server
   lists the optional features it offers in ``welcome.capabilities``; clients read that list,
   never an error's text, to know what they may ask for.
2. Clients ignore unknown fields in server frames and ignore server frames whose ``type`` they
   do not know (:func:`decode_server_frame` returns None for those). A client treats an error
   ``code`` it does not know like ``internal`` and decides on ``retryable``.
3. The server rejects unknown fields in client frames with an ``invalid_field`` error naming
   the field (a typo must never be silently ignored), and unknown frame types with
   ``unknown_type``. A rejected frame changes nothing.
"""

from areasync.protocol.codec import (
    EncodedFrame,
    Encoding,
    decode_client_frame,
    decode_server_frame,
    encode_client_frame,
    encode_server_bytes,
    encode_server_frame,
    encoding_of,
)
from areasync.protocol.errors import CloseCode, ErrorCode, ProtocolError
from areasync.protocol.frames import (
    CLIENT_FRAME_TYPES,
    PROTOCOL,
    SERVER_CAPABILITIES,
    SERVER_FRAME_TYPES,
    Batch,
    BatchedFrame,
    CallTool,
    Capability,
    ClientFrame,
    ClockItem,
    CreateSession,
    EndedItem,
    Error,
    EventItem,
    ForkedFrom,
    ForkSession,
    GetState,
    Hello,
    Idle,
    ImportMode,
    Jump,
    ListTools,
    Mode,
    NotificationItem,
    Pause,
    Ping,
    Pong,
    Replay,
    Result,
    Resume,
    Role,
    SendUserMessage,
    ServerFrame,
    SetSpeed,
    Stop,
    StopSession,
    StreamItem,
    Tick,
    Welcome,
    frame_tag,
)
from areasync.protocol.records import (
    GENERATED_ID,
    WAIT_TOOL,
    ClockState,
    EventRecord,
    NotificationRecord,
    ToolArg,
    ToolInfo,
    Validation,
)

__all__ = [
    "CLIENT_FRAME_TYPES",
    "GENERATED_ID",
    "PROTOCOL",
    "SERVER_CAPABILITIES",
    "SERVER_FRAME_TYPES",
    "WAIT_TOOL",
    "Batch",
    "BatchedFrame",
    "CallTool",
    "Capability",
    "ClientFrame",
    "ClockItem",
    "ClockState",
    "CloseCode",
    "CreateSession",
    "EncodedFrame",
    "Encoding",
    "EndedItem",
    "Error",
    "ErrorCode",
    "EventItem",
    "EventRecord",
    "ForkSession",
    "ForkedFrom",
    "GetState",
    "Hello",
    "Idle",
    "ImportMode",
    "Jump",
    "ListTools",
    "Mode",
    "NotificationItem",
    "NotificationRecord",
    "Pause",
    "Ping",
    "Pong",
    "ProtocolError",
    "Replay",
    "Result",
    "Resume",
    "Role",
    "SendUserMessage",
    "ServerFrame",
    "SetSpeed",
    "Stop",
    "StopSession",
    "StreamItem",
    "Tick",
    "ToolArg",
    "ToolInfo",
    "Validation",
    "Welcome",
    "decode_client_frame",
    "decode_server_frame",
    "encode_client_frame",
    "encode_server_bytes",
    "encode_server_frame",
    "encoding_of",
    "frame_tag",
]
