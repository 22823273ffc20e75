"""Client requests against a scripted server: typed results and errors, ids matched to replies."""

from __future__ import annotations

import anyio
import pytest

from areasync.client import (
    AreasyncError,
    ConnectionClosedError,
    InvalidArgsError,
    RateLimitedError,
    ToolError,
    UnauthorizedError,
    UnknownToolError,
    connect,
    error_class,
)
from areasync.protocol import CallTool, ClientFrame, ErrorCode, ProtocolError, ToolInfo
from tests.client.fake_server import TOKEN, FakeServer


async def test_list_tools_returns_tool_infos() -> None:
    async def tools(frame: ClientFrame) -> object:
        return [{"name": "App__do", "description": "does", "args": [{"name": "x"}]}]

    async with FakeServer() as fake:
        fake.handlers["list_tools"] = tools
        async with connect(fake.url, token=TOKEN) as client:
            with anyio.fail_after(5):
                result = await client.list_tools()
    assert result == [ToolInfo(name="App__do", description="does", args=result[0].args)]
    assert result[0].args[0].name == "x"


@pytest.mark.parametrize("code", list(ErrorCode))
async def test_each_error_code_raises_its_own_class(code: ErrorCode) -> None:
    async def fail(frame: ClientFrame) -> object:
        raise ProtocolError(code, f"failed with {code.value}")

    async with FakeServer() as fake:
        fake.handlers["call_tool"] = fail
        async with connect(fake.url, token=TOKEN) as client:
            with anyio.fail_after(5), pytest.raises(error_class(code.value)) as caught:
                await client.call_tool("App__do")
    assert caught.value.code == code.value
    assert caught.value.retryable is code.retryable
    assert caught.value.message == f"failed with {code.value}"


async def test_tool_errors_share_a_base_class() -> None:
    assert issubclass(UnknownToolError, ToolError)
    assert issubclass(InvalidArgsError, ToolError)
    assert issubclass(ToolError, AreasyncError)


async def test_an_unknown_error_code_keeps_the_servers_code_and_retryable_flag() -> None:
    error = error_class("brand_new_code")("later", code="brand_new_code", retryable=True)
    assert type(error) is AreasyncError
    assert (error.code, error.retryable, error.error_code) == ("brand_new_code", True, None)


async def test_retryable_errors_say_so() -> None:
    assert RateLimitedError("slow down").retryable is True
    assert UnknownToolError("no").retryable is False


async def test_concurrent_calls_each_get_their_own_reply_when_replies_come_out_of_order() -> None:
    # Each request is answered once every later one has been: the first is answered last.
    answered = [anyio.Event() for _ in range(11)]
    answered[10].set()

    async def reverse_echo(frame: ClientFrame) -> object:
        assert isinstance(frame, CallTool)
        n = frame.args["n"]
        await answered[n + 1].wait()
        answered[n].set()
        return n

    results: dict[int, object] = {}
    async with FakeServer() as fake:
        fake.handlers["call_tool"] = reverse_echo
        async with connect(fake.url, token=TOKEN) as client:

            async def call(n: int) -> None:
                results[n] = await client.call_tool("App__echo", n=n)

            with anyio.fail_after(10):
                async with anyio.create_task_group() as tg:
                    for n in range(10):
                        tg.start_soon(call, n)
    assert results == {n: n for n in range(10)}


async def test_call_tool_takes_a_mapping_and_keywords() -> None:
    async def echo(frame: ClientFrame) -> object:
        assert isinstance(frame, CallTool)
        return frame.args

    async with FakeServer() as fake:
        fake.handlers["call_tool"] = echo
        async with connect(fake.url, token=TOKEN) as client:
            with anyio.fail_after(5):
                value = await client.call_tool("App__do", {"a": 1, "name": "x"}, b=2)
    assert value == {"a": 1, "name": "x", "b": 2}


async def test_a_wrong_token_raises_unauthorized_when_connecting() -> None:
    async with FakeServer() as fake:
        with anyio.fail_after(5), pytest.raises(UnauthorizedError):
            async with connect(fake.url, token="wrong"):
                pass
        assert len(fake.hellos) == 1  # not retried: the same hello would fail again


async def test_msgpack_encoding_round_trips() -> None:
    async def echo(frame: ClientFrame) -> object:
        assert isinstance(frame, CallTool)
        return frame.args

    async with FakeServer() as fake:
        fake.handlers["call_tool"] = echo
        async with connect(fake.url, token=TOKEN, encoding="msgpack") as client:
            with anyio.fail_after(5):
                value = await client.call_tool("App__do", data=[1, 2.5, "x", None])
    assert value == {"data": [1, 2.5, "x", None]}


async def test_requests_after_close_raise_connection_closed() -> None:
    async with FakeServer() as fake:
        client = await connect(fake.url, token=TOKEN)
        await client.aclose()
        with pytest.raises(ConnectionClosedError):
            await client.ping()


async def test_no_server_raises_connection_closed_after_the_attempts() -> None:
    async with FakeServer() as fake:
        url = fake.url
    with anyio.fail_after(10), pytest.raises(ConnectionClosedError):
        await connect(url, token=TOKEN, max_reconnect_attempts=2, backoff_initial=0.01)
