"""Error codes and close codes: stable, documented in one table each, turned into frames."""

from __future__ import annotations

import re

import pytest

import areasync.protocol
from areasync.protocol import CloseCode, Error, ErrorCode, ProtocolError, errors
from areasync.protocol.frames import error_frame


def table_rows(doc: str, first_column: str) -> dict[str, str]:
    """Rows of the reST table whose header starts with ``first_column``: first cell -> rest."""
    tables = re.split(r"\n=+(?:  +=+)+\n", doc)
    for index, chunk in enumerate(tables):
        if chunk.strip().startswith(first_column):
            body = tables[index + 1]
            return {
                line.split()[0]: line.split(None, 1)[1]
                for line in body.splitlines()
                if line and not line.startswith(" ")
            }
    raise AssertionError(f"no table starting with {first_column!r}")


ERROR_ROWS = table_rows(errors.__doc__ or "", "code ")
CLOSE_ROWS = table_rows(errors.__doc__ or "", "code  name")


@pytest.mark.parametrize("code", list(ErrorCode), ids=lambda c: c.value)
def test_every_error_code_is_documented_with_its_retryable_flag(code: ErrorCode) -> None:
    row = ERROR_ROWS[code.value]
    assert row.split()[0] == ("yes" if code.retryable else "no")


def test_error_code_table_lists_no_code_that_does_not_exist() -> None:
    assert set(ERROR_ROWS) == {code.value for code in ErrorCode}


def test_only_rate_limited_and_capacity_are_retryable() -> None:
    retryable = {code for code in ErrorCode if code.retryable}
    assert retryable == {ErrorCode.RATE_LIMITED, ErrorCode.CAPACITY}


@pytest.mark.parametrize("code", list(CloseCode), ids=lambda c: c.name)
def test_every_close_code_is_documented_under_its_name(code: CloseCode) -> None:
    assert CLOSE_ROWS[str(code.value)].split()[0] == code.name


def test_close_code_table_lists_no_code_that_does_not_exist() -> None:
    assert set(CLOSE_ROWS) == {str(code.value) for code in CloseCode}


@pytest.mark.parametrize("code", list(CloseCode), ids=lambda c: c.name)
def test_close_codes_may_be_sent_by_an_endpoint(code: CloseCode) -> None:
    # RFC 6455 7.4: 1004-1006 and 1015 must never be sent; 4000-4999 are for applications.
    assert code in {1000, 1001, 1002, 1003, 1007, 1008, 1009, 1010, 1011} or 4000 <= code < 5000


def test_protocol_error_becomes_an_error_frame() -> None:
    error = ProtocolError(ErrorCode.CAPACITY, "too many sessions; retry later", id=3)
    assert error_frame(error) == Error(
        id=3, code="capacity", message="too many sessions; retry later", retryable=True
    )


def test_error_frame_fills_in_the_request_id_when_the_error_has_none() -> None:
    error = ProtocolError(ErrorCode.UNKNOWN_TOOL, "no tool `X`; call list_tools")
    assert error_frame(error, id=11).id == 11
    assert error_frame(ProtocolError(ErrorCode.INTERNAL, "m", id=1), id=11).id == 1


def test_error_frame_maps_unknown_codes_to_none() -> None:
    assert Error(code="tool_failed", message="m").error_code is ErrorCode.TOOL_FAILED
    assert Error(code="added_later", message="m").error_code is None


def test_protocol_error_str_names_code_and_message() -> None:
    assert str(ProtocolError(ErrorCode.BAD_STATE, "not paused")) == "bad_state: not paused"


def test_package_docstring_states_the_compatibility_rules() -> None:
    doc = areasync.protocol.__doc__ or ""
    assert "only with a default" in doc
    assert "ignore server frames whose ``type`` they" in doc
    assert "rejects unknown fields in client frames" in doc


def test_package_exports_resolve() -> None:
    for name in areasync.protocol.__all__:
        assert getattr(areasync.protocol, name) is not None


class _Refused(errors.CodedError):
    code = ErrorCode.INVALID_FIELD
    hint = "; send another"
    when_ended = ErrorCode.SESSION_ENDED


def test_a_coded_error_is_answered_with_its_code_and_its_hint_after_its_message() -> None:
    error = _Refused("no such thing").protocol_error()
    assert (error.code, error.message) == (ErrorCode.INVALID_FIELD, "no such thing; send another")


def test_a_coded_error_of_an_ended_session_is_answered_with_its_ended_code() -> None:
    assert _Refused("x").protocol_error(ended=True).code is ErrorCode.SESSION_ENDED


def test_a_coded_error_with_no_ended_code_keeps_its_own_once_the_session_ended() -> None:
    class Interrupted(errors.CodedError):
        code = ErrorCode.INTERRUPTED

    assert Interrupted("x").protocol_error(ended=True).code is ErrorCode.INTERRUPTED
