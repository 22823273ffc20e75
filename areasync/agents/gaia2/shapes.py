"""What gaia2-cli's app CLIs print, made from what ARE's tools return.

Why: upstream's CLIs (gaia2-cli's `gaia2_cli.apps`) are written against JSON state files and
print their own shapes: an event, a contact, a ride or an apartment with its fields in their
order, a status around a write's result (`{"status": "success", "event_id": ...}`), timestamps
as floats, cloud-drive's `cat` and `tree` as plain text. An agent prompted with upstream's
documentation reads those shapes. ARE's tools return the same facts in ARE's shapes (its
dataclasses' field order, a `datetime` where upstream keeps a timestamp, None where upstream
says what happened). Each function here takes ARE's value (as the adapter returns it, JSON
already) and the command's arguments, and returns what upstream prints: `Text` for plain text,
anything else is printed as JSON (indent 2, upstream's `json_output`).

Pure functions of data: no I/O, stdlib only (a command imports nothing of ARE or the server).
"""

from __future__ import annotations

import dataclasses
import posixpath
import re
from collections.abc import Callable, Mapping
from datetime import datetime
from typing import Any, Final


@dataclasses.dataclass(frozen=True, slots=True)
class Text:
    """Output printed as it is (upstream's `cat` and `tree`), not as JSON."""

    text: str


Shape = Callable[[Any, Mapping[str, Any]], Any]
"""(ARE's value, the command's ARE arguments) -> what the command prints."""

# The fields of upstream's records, in upstream's order.
CONTACT: Final = (
    "contact_id",
    "first_name",
    "last_name",
    "is_user",
    "gender",
    "age",
    "nationality",
    "city_living",
    "country",
    "status",
    "job",
    "description",
    "phone",
    "email",
    "address",
)
EVENT: Final = (
    "event_id",
    "title",
    "start_datetime",
    "end_datetime",
    "tag",
    "description",
    "location",
    "attendees",
    "start_strftime",
    "end_strftime",
)
EMAIL: Final = (
    "sender",
    "recipients",
    "subject",
    "content",
    "email_id",
    "parent_id",
    "cc",
    "attachments",
    "timestamp",
    "is_read",
)
CONVERSATION: Final = ("conversation_id", "title", "participant_ids", "last_updated", "messages")
MESSAGE: Final = ("sender_id", "message_id", "timestamp", "content")
ATTACHMENT: Final = ("attachment", "attachment_name")  # only on a message that has one
APARTMENT: Final = (
    "name",
    "location",
    "zip_code",
    "price",
    "bedrooms",
    "bathrooms",
    "property_type",
    "square_footage",
    "furnished_status",
    "floor_level",
    "pet_policy",
    "lease_term",
    "apartment_id",
    "amenities",
    "saved",
)
RIDE: Final = (
    "ride_id",
    "status",
    "service_type",
    "start_location",
    "end_location",
    "price",
    "duration",
    "time_stamp",
    "distance_km",
    "delay",
    "delay_history",
)
BOOKED_RIDE: Final = RIDE[:-2]  # order-ride's answer: no delay, no delay history
ORDER: Final = ("order_id", "order_status", "order_date", "order_total", "order_items")
FILE_DETAIL: Final = ("name", "size", "type")


def record(fields: tuple[str, ...]) -> Callable[[Any], Any]:
    """A record of ARE's as upstream prints it: `fields` in their order (a missing one null)."""

    def shaped(value: Any) -> Any:
        if not isinstance(value, Mapping):
            return value
        return {name: value.get(name) for name in fields}

    return shaped


contact = record(CONTACT)
event = record(EVENT)
email = record(EMAIL)
apartment = record(APARTMENT)
ride = record(RIDE)


def message(value: Any) -> Any:
    if not isinstance(value, Mapping):
        return value
    shaped = {name: value.get(name) for name in MESSAGE}
    if value.get("attachment") is not None:
        shaped.update({name: value.get(name) for name in ATTACHMENT})
    return shaped


def conversation(value: Any) -> Any:
    if not isinstance(value, Mapping):
        return value
    shaped = record(CONVERSATION)(value)
    shaped["messages"] = [message(m) for m in value.get("messages") or []]
    return shaped


def order(value: Any) -> Any:
    if not isinstance(value, Mapping):
        return value
    shaped = record(ORDER)(value)
    shaped["order_date"] = timestamp(shaped["order_date"])
    return shaped


def timestamp(value: Any) -> Any:
    """A date as upstream keeps it (seconds since the epoch): ARE's `datetime` comes over the
    wire as ISO text."""
    if isinstance(value, str):
        try:
            return datetime.fromisoformat(value).timestamp()
        except ValueError:
            return value
    return value


def each(shape: Callable[[Any], Any]) -> Callable[[Any], Any]:
    """`shape` on every item of a list, or every value of a dict."""

    def shaped(value: Any) -> Any:
        if isinstance(value, list):
            return [shape(v) for v in value]
        if isinstance(value, Mapping):
            return {k: shape(v) for k, v in value.items()}
        return value

    return shaped


# -- shapes: (value, args) -> printed ---------------------------------------------------


def plain(value: Any, _args: Mapping[str, Any]) -> Any:
    """ARE's value as it is (upstream prints the same thing)."""
    return value


def of(shape: Callable[[Any], Any]) -> Shape:
    """ARE's value shaped by `shape`."""
    return lambda value, _args: shape(value)


def status(key: str, word: str = "success", shape: Callable[[Any], Any] = lambda v: v) -> Shape:
    """`{"status": word, key: ARE's value}` (shaped)."""
    return lambda value, _args: {"status": word, key: shape(value)}


def said(message: str) -> Shape:
    """`{"status": "success", "message": message}`: upstream's words where ARE returns None."""
    return lambda _value, _args: {"status": "success", "message": message}


def spread(value: Any, _args: Mapping[str, Any]) -> Any:
    """`{"status": "success", **ARE's dict}` (shopping's list-all-products)."""
    return {"status": "success", **value} if isinstance(value, Mapping) else value


def with_page(key: str, shape: Callable[[Any], Any]) -> Callable[[Any], Any]:
    """A page of ARE's (`{key: [...], ...}`) with each item of `key` shaped."""

    def shaped(value: Any) -> Any:
        if isinstance(value, Mapping) and key in value:
            return {**value, key: each(shape)(value[key])}
        return value

    return shaped


def email_page(value: Any, _args: Mapping[str, Any]) -> Any:
    """list-emails: `total_returned_emails` is the page's length (upstream's; ARE's counts one
    more than it returns)."""
    if not isinstance(value, Mapping):
        return value
    emails = [email(e) for e in value.get("emails") or []]
    return {
        "emails": emails,
        "emails_range": value.get("emails_range"),
        "total_returned_emails": len(emails),
        "total_emails": value.get("total_emails"),
    }


def discount_info(value: Any, args: Mapping[str, Any]) -> Any:
    return {"status": "success", "discount_code": args.get("discount_code"), "info": value}


# -- cloud-drive: paths as upstream prints them -------------------------------------------


def drive_path(path: Any) -> Any:
    """A cloud-drive path as upstream prints it: absolute from the drive's root, normalized;
    `~` is the user's home, `/home/userhome` (upstream's and ARE's rule)."""
    if not isinstance(path, str):
        return path
    path = re.sub(r"^~([^/]+)/?", r"home/\1/", re.sub(r"^~/?", "home/userhome/", path))
    normal = posixpath.normpath("/" + path.lstrip("/"))
    return "/" if normal in ("/", "//") else normal


def path_done(value: Any, args: Mapping[str, Any]) -> Any:
    return {"status": "success", "path": drive_path(args.get("path"))}


def path_given(value: Any, args: Mapping[str, Any]) -> Any:
    """rm: the path as it was given (upstream's)."""
    return {"status": "success", "path": args.get("path")}


def moved(value: Any, args: Mapping[str, Any]) -> Any:
    return {
        "status": "success",
        "source": drive_path(args.get("path1")),
        "destination": drive_path(args.get("path2")),
    }


def listing(value: Any, args: Mapping[str, Any]) -> Any:
    """ls: the entries' paths, sorted; with --detail each `{name, size, type}`."""
    if not isinstance(value, list):
        return value
    if args.get("detail"):
        rows = [
            {k: drive_path(v) if k == "name" else v for k, v in record(FILE_DETAIL)(e).items()}
            for e in value
        ]
        return sorted(rows, key=lambda row: str(row["name"]))
    return sorted(drive_path(e) for e in value)


def file_info(value: Any, _args: Mapping[str, Any]) -> Any:
    if not isinstance(value, Mapping):
        return value
    return {
        "name": drive_path(value.get("name")),
        "size": value.get("size"),
        "type": value.get("type"),
        "created": value.get("created"),
        "modified": value.get("mtime", value.get("modified")),
    }


def text(value: Any, _args: Mapping[str, Any]) -> Any:
    """Plain text as upstream writes it, no newline added: `cat`'s file contents, and `tree`
    (ARE draws the tree as upstream does: the root's line, a line per entry)."""
    return Text(value if isinstance(value, str) else str(value))
