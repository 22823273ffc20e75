"""gaia2-cli's ten app CLIs, command by command: names, options, the ARE call, what is printed.

Why: an agent prompted with upstream's documentation types upstream's commands and reads
upstream's outputs. Upstream's CLIs (gaia2-cli's `gaia2_cli.apps`, Click groups) name their
commands and options their own way (calendar's `get-events --start-date`, emails'
`--folder` for `--folder-name`, cloud-drive's `mv --source --destination`), take defaults of
their own (cloud-drive's `mkdir` makes no parents unless `--create-parents`), and print their
own shapes (`shapes.py`). This table writes each visible command down as upstream
documents it, and says which ARE function it calls with which arguments and how ARE's value
is printed. Upstream's hidden `[ENV]` commands (the simulation's own actions) are not here:
an agent cannot take them.

Where upstream prints what ARE's call does not return, a command reads it after the call with
ARE's own read tools (`Then`): shopping's `add-to-cart` (the item's quantity in the cart),
`checkout` (the order's total), `get-all-discount-codes` (each code's items and percentages).
Those reads are the agent's, and show on the session's stream as READ events.

Stdlib only: a command imports nothing of ARE or of the server.
"""

from __future__ import annotations

import dataclasses
import enum
from collections.abc import Callable, Mapping
from typing import Any, Final

from areasync.agents.gaia2 import shapes as s


class Kind(enum.Enum):
    """How an option's word becomes ARE's argument."""

    TEXT = "text"
    INT = "integer"
    FLOAT = "float"
    JSON = "json"  # JSON text: a list or an object
    LIST = "list"  # a JSON list, or words separated by commas (rent-a-flat's --amenities)
    FLAG = "boolean"

    @property
    def click_type(self) -> str:
        """The type upstream's `schema` names (Click's): JSON is text to Click."""
        return "text" if self in (Kind.JSON, Kind.LIST) else self.value


@dataclasses.dataclass(frozen=True, slots=True)
class Option:
    """One option: its flags (the first is its name, the rest aliases) and ARE's argument."""

    flags: tuple[str, ...]
    arg: str
    kind: Kind = Kind.TEXT
    required: bool = False
    default: Any = None  # upstream's, passed to ARE when the option is not given
    help: str = ""


@dataclasses.dataclass(frozen=True, slots=True)
class Then:
    """A read after the call: ARE's `function` with arguments made from the call's arguments
    and value, and what is printed from the call's value, its arguments and the read's
    value(s)."""

    reads: Callable[[Any, Mapping[str, Any]], list[tuple[str, dict[str, Any]]]]
    printed: Callable[[Any, Mapping[str, Any], list[Any]], Any]


@dataclasses.dataclass(frozen=True, slots=True)
class Command:
    name: str
    function: str  # ARE's (also the name upstream logs, but for cloud-drive's rmdir)
    help: str
    options: tuple[Option, ...] = ()
    shape: s.Shape = s.plain
    write: bool = False
    then: Then | None = None
    # Upstream's words for ARE's failures: (a phrase of ARE's error, upstream's message, a
    # format of the arguments and `parent`, the path's folder). cloud-drive's, whose ARE
    # errors are the file system's.
    errors: tuple[tuple[str, str], ...] = ()
    fixed: tuple[tuple[str, Any], ...] = ()  # arguments always passed (rmdir's recursive)
    guard: Guard | None = None


@dataclasses.dataclass(frozen=True, slots=True)
class Guard:
    """A read before the call, whose value may refuse it (upstream's rmdir: the folder must
    be empty): `refusal(value, args)` is upstream's message, or None to go on."""

    function: str
    refusal: Callable[[Any, Mapping[str, Any]], str | None]


def opt(
    flags: str,
    arg: str | None = None,
    kind: Kind = Kind.TEXT,
    *,
    required: bool = False,
    default: Any = None,
    help: str = "",
) -> Option:
    """`opt("--folder-name --folder", ...)`: the flags, the first naming ARE's argument
    unless `arg` does."""
    names = tuple(flags.split())
    if kind is Kind.FLAG and default is None:
        default = False
    name = arg if arg is not None else names[0][2:].replace("-", "_")
    return Option(names, name, kind, required, default, help)


def _req(flags: str, arg: str | None = None, kind: Kind = Kind.TEXT, help: str = "") -> Option:
    return opt(flags, arg, kind, required=True, help=help)


def _int(flags: str, default: int, help: str = "") -> Option:
    return opt(flags, kind=Kind.INT, default=default, help=help)


OFFSET_LIMIT_5: Final = (_int("--offset", 0, "Starting index"), _int("--limit", 5, "Count"))
DATES: Final = (
    opt("--min-date", help="Min date (YYYY-MM-DD HH:MM:SS)"),
    opt("--max-date", help="Max date (YYYY-MM-DD HH:MM:SS)"),
)
FOLDER: Final = opt("--folder-name --folder", default="INBOX", help="Folder (INBOX, SENT, ...).")
EVENT_FIELDS: Final = (
    opt("--title", default="Event", help="Title of the event."),
    opt("--start-datetime", help="Start datetime in YYYY-MM-DD HH:MM:SS format."),
    opt("--end-datetime", help="End datetime in YYYY-MM-DD HH:MM:SS format."),
    opt("--tag", help="Tag of the event."),
    opt("--description", help="Description of the event."),
    opt("--location", help="Location of the event."),
    opt("--attendees", kind=Kind.JSON, help="JSON list of attendees full names."),
)
CONTACT_FIELDS: Final = tuple(
    opt(f"--{f.replace('_', '-')}", kind=Kind.INT if f == "age" else Kind.TEXT)
    for f in s.CONTACT[4:]
    if f != "is_user"
)
RIDE_WHERE: Final = (
    _req("--start-location", help="Starting point of the ride"),
    _req("--end-location", help="Ending point of the ride"),
)
SERVICE: Final = _req("--service-type", help="Type of service (Default, Premium, Van)")
RIDE_TIME: Final = opt("--ride-time", help="Ride time in YYYY-MM-DD HH:MM:SS format")
PAGE_10: Final = (_int("--offset", 0), _int("--limit", 10))


def _messaging() -> tuple[Command, ...]:
    """messages and chats: the same commands (upstream's two copies differ in title rules)."""
    conv = _req("--conversation-id")
    msgs = (
        _int("--offset-recent-messages-per-conversation", 0),
        _int("--limit-recent-messages-per-conversation", 10),
    )
    return (
        Command(
            "get-user-id",
            "get_user_id",
            "Get user id for a given user name.",
            (_req("--user-name"),),
        ),
        Command(
            "get-user-name-from-id",
            "get_user_name_from_id",
            "Get user name for a given user id.",
            (_req("--user-id"),),
        ),
        Command(
            "lookup-user-id",
            "lookup_user_id",
            "Fuzzy lookup of user id by name.",
            (_req("--user-name"),),
        ),
        Command(
            "send-message",
            "send_message",
            "Send a message to a user. Creates conversation if none exists.",
            (_req("--user-id"), opt("--content", default=""), opt("--attachment-path")),
            write=True,
        ),
        Command(
            "send-message-to-group-conversation",
            "send_message_to_group_conversation",
            "Send a message to an existing group conversation (3+ participants).",
            (conv, opt("--content", default=""), opt("--attachment-path")),
            write=True,
        ),
        Command(
            "create-group-conversation",
            "create_group_conversation",
            "Create a new group conversation.",
            (_req("--user-ids", kind=Kind.JSON), opt("--title")),
            write=True,
        ),
        Command(
            "get-existing-conversation-ids",
            "get_existing_conversation_ids",
            "Get conversation ids matching the exact set of participants.",
            (_req("--user-ids", kind=Kind.JSON),),
        ),
        Command(
            "list-recent-conversations",
            "list_recent_conversations",
            "List conversations ordered by most recent update.",
            (*OFFSET_LIMIT_5, *msgs),
            s.of(s.each(s.conversation)),
        ),
        Command(
            "list-conversations-by-participant",
            "list_conversations_by_participant",
            "List conversations that include the given participant.",
            (
                _req("--user-id"),
                *OFFSET_LIMIT_5,
                msgs[0],
                _int("--limit-recent-messages-per-conversation", 5),
            ),
            s.of(s.each(s.conversation)),
        ),
        Command(
            "download-attachment",
            "download_attachment",
            "Download an attachment from a message.",
            (conv, _req("--message-id"), opt("--download-path", default="Downloads/")),
            write=True,
        ),
        Command(
            "read-conversation",
            "read_conversation",
            "Read messages from a conversation (most recent first).",
            (conv, *PAGE_10, *DATES),
            s.of(s.with_page("messages", s.message)),
        ),
        Command(
            "add-participant-to-conversation",
            "add_participant_to_conversation",
            "Add a user to a conversation.",
            (conv, _req("--user-id")),
            write=True,
        ),
        Command(
            "remove-participant-from-conversation",
            "remove_participant_from_conversation",
            "Remove a user from a conversation.",
            (conv, _req("--user-id")),
            write=True,
        ),
        Command(
            "change-conversation-title",
            "change_conversation_title",
            "Change the title of a conversation.",
            (conv, _req("--title")),
            write=True,
        ),
        Command(
            "search",
            "search",
            "Search conversations by participants, title, and message content.",
            (_req("--query"), *DATES),
        ),
        Command(
            "regex-search",
            "regex_search",
            "Search conversations using a regex pattern.",
            (_req("--query"), *DATES),
        ),
    )


def _missing(message: str) -> tuple[str, str]:
    return ("No such file or directory", message)


_OUTSIDE: Final = ("not allowed outside", "Operation not allowed outside sandbox: {path}")


def _not_empty(value: Any, args: Mapping[str, Any]) -> str | None:
    """rmdir's refusal: a file (ls lists it alone, as itself), or a folder with entries."""
    path = s.drive_path(args.get("path"))
    entries = [s.drive_path(e) for e in value] if isinstance(value, list) else []
    if entries == [path] and path != "/":
        return f"Not a directory: {args.get('path')}"
    return f"Directory not empty: {args.get('path')}" if entries else None


def _cart_quantity(value: Any, args: Mapping[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    return [("list_cart", {})]


def _with_quantity(value: Any, args: Mapping[str, Any], read: list[Any]) -> Any:
    cart = read[0] if read and isinstance(read[0], Mapping) else {}
    item = cart.get(args.get("item_id"), {})
    quantity = item.get("quantity") if isinstance(item, Mapping) else None
    return {"status": "success", "item_id": value, "quantity": quantity}


def _the_order(value: Any, args: Mapping[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    return [("get_order_details", {"order_id": value})]


def _with_total(value: Any, args: Mapping[str, Any], read: list[Any]) -> Any:
    order = read[0] if read and isinstance(read[0], Mapping) else {}
    return {"status": "success", "order_id": value, "total": order.get("order_total")}


def _each_code(value: Any, args: Mapping[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    codes = value if isinstance(value, Mapping) else {}
    return [("get_discount_code_info", {"discount_code": code}) for code in codes]


def _codes_by_item(value: Any, args: Mapping[str, Any], read: list[Any]) -> Any:
    """upstream's `{item_id: {code: percent}}` from ARE's `{code: [item_id]}` and each code's
    `{item_id: percent}`."""
    by_item: dict[str, dict[str, Any]] = {}
    codes = value if isinstance(value, Mapping) else {}
    for code, info in zip(codes, read, strict=False):
        for item, percent in (info if isinstance(info, Mapping) else {}).items():
            by_item.setdefault(item, {})[code] = percent
    return {"status": "success", "discount_codes": by_item}


# Each CLI's commands, as upstream's `--help` lists them (its order).
CLIS: Final[dict[str, tuple[Command, ...]]] = {
    "calendar": (
        Command(
            "add-event",
            "add_calendar_event",
            "Add a calendar event to the calendar.",
            EVENT_FIELDS,
            s.status("event_id"),
            write=True,
        ),
        Command(
            "get-event",
            "get_calendar_event",
            "Read a calendar event from the calendar.",
            (_req("--event-id", help="Id of the event to read."),),
            s.of(s.event),
        ),
        Command(
            "delete-event",
            "delete_calendar_event",
            "Delete a calendar event from the calendar.",
            (_req("--event-id", help="Id of the event to delete."),),
            s.status("message"),
            write=True,
        ),
        Command(
            "get-events",
            "get_calendar_events_from_to",
            "Get calendar events that have any time overlap with the specified date range.",
            (
                _req(
                    "--start-date", "start_datetime", help="Start datetime (YYYY-MM-DD HH:MM:SS)."
                ),
                _req("--end-date", "end_datetime", help="End datetime (YYYY-MM-DD HH:MM:SS)."),
                *PAGE_10,
            ),
            s.of(s.with_page("events", s.event)),
        ),
        Command(
            "today-events",
            "read_today_calendar_events",
            "Read today's calendar events from the calendar.",
            (),
            s.of(s.with_page("events", s.event)),
        ),
        Command("get-all-tags", "get_all_tags", "Get all tags from the calendar."),
        Command(
            "get-events-by-tag",
            "get_calendar_events_by_tag",
            "Get calendar events from the calendar by tag.",
            (_req("--tag"),),
            s.of(s.each(s.event)),
        ),
        Command(
            "search-events",
            "search_events",
            "Searches for calendar events based on a query string.",
            (_req("--query"),),
            s.of(s.each(s.event)),
        ),
    ),
    "contacts": (
        Command(
            "get-contacts",
            "get_contacts",
            "Get the list of contacts.",
            (_int("--offset", 0),),
            s.of(s.with_page("contacts", s.contact)),
        ),
        Command(
            "get-contact",
            "get_contact",
            "Get a contact by its id.",
            (_req("--contact-id"),),
            s.of(s.contact),
        ),
        Command(
            "get-current-user-details",
            "get_current_user_details",
            "Get the current user's details.",
            (),
            s.of(s.contact),
        ),
        Command(
            "add-new-contact",
            "add_new_contact",
            "Add a new contact.",
            (_req("--first-name"), _req("--last-name"), *CONTACT_FIELDS),
            s.status("contact_id"),
            write=True,
        ),
        Command(
            "edit-contact",
            "edit_contact",
            "Edit a contact.",
            (_req("--contact-id"), _req("--updates", kind=Kind.JSON)),
            s.status("message"),
            write=True,
        ),
        Command(
            "delete-contact",
            "delete_contact",
            "Delete a contact.",
            (_req("--contact-id"),),
            s.status("message"),
            write=True,
        ),
        Command(
            "search-contacts",
            "search_contacts",
            "Search contacts by name, phone or email.",
            (_req("--query"),),
            s.of(s.each(s.contact)),
        ),
    ),
    "emails": (
        Command(
            "list-emails",
            "list_emails",
            "List emails in a folder with pagination.",
            (FOLDER, *PAGE_10),
            s.email_page,
        ),
        Command(
            "get-email-by-id",
            "get_email_by_id",
            "Get an email by its ID, marking it as read.",
            (_req("--email-id"), FOLDER),
            s.of(s.email),
        ),
        Command(
            "get-email-by-index",
            "get_email_by_index",
            "Get an email by its index in a folder.",
            (_req("--idx", kind=Kind.INT), FOLDER),
            s.of(s.email),
        ),
        Command(
            "send-email",
            "send_email",
            "Send an email to the specified recipients.",
            (
                _req("--recipients", kind=Kind.JSON),
                opt("--subject", default=""),
                opt("--content", default=""),
                opt("--cc", kind=Kind.JSON),
                opt("--attachment-paths", kind=Kind.JSON),
            ),
            s.status("email_id", "ok"),
            write=True,
        ),
        Command(
            "forward-email",
            "forward_email",
            "Forward an email to new recipients.",
            (_req("--email-id"), _req("--recipients", kind=Kind.JSON), FOLDER),
            s.status("email_id", "ok"),
            write=True,
        ),
        Command(
            "download-attachments",
            "download_attachments",
            "Download attachments from an email to the local filesystem.",
            (
                _req("--email-id"),
                FOLDER,
                opt("--path-to-save --download-path", default="Downloads/"),
            ),
            s.status("downloaded", "ok"),
            write=True,
        ),
        Command(
            "reply-to-email",
            "reply_to_email",
            "Reply to an email.",
            (
                _req("--email-id"),
                opt("--content", default=""),
                FOLDER,
                opt("--attachment-paths", kind=Kind.JSON),
            ),
            s.status("email_id", "ok"),
            write=True,
        ),
        Command(
            "move-email",
            "move_email",
            "Move an email from one folder to another.",
            (
                _req("--email-id"),
                _req("--source-folder-name --source-folder"),
                _req("--dest-folder-name --dest-folder"),
            ),
            s.status("email_id", "ok"),
            write=True,
        ),
        Command(
            "delete-email",
            "delete_email",
            "Delete an email (moves it to TRASH).",
            (_req("--email-id"), FOLDER),
            s.status("email_id", "ok"),
            write=True,
        ),
        Command(
            "search-emails",
            "search_emails",
            "Search emails by query string.",
            (_req("--query"), FOLDER),
            s.of(s.each(s.email)),
        ),
    ),
    "messages": _messaging(),
    "chats": _messaging(),
    "rent-a-flat": (
        Command(
            "list-all-apartments",
            "list_all_apartments",
            "List all apartments in the catalog.",
            (),
            s.status("data", shape=s.each(s.apartment)),
        ),
        Command(
            "get-apartment-details",
            "get_apartment_details",
            "Get apartment details for a given apartment id.",
            (_req("--apartment-id"),),
            s.status("data", shape=s.apartment),
        ),
        Command(
            "save-apartment",
            "save_apartment",
            "Save an apartment to favorites.",
            (_req("--apartment-id"),),
            s.said("Successfully saved apartment"),
            write=True,
        ),
        Command(
            "remove-saved-apartment",
            "remove_saved_apartment",
            "Remove an apartment from favorites.",
            (_req("--apartment-id"),),
            s.said("Successfully removed apartment from favorites"),
            write=True,
        ),
        Command(
            "list-saved-apartments",
            "list_saved_apartments",
            "List apartments saved to favorites.",
            (),
            s.status("data", shape=s.each(s.apartment)),
        ),
        Command(
            "search-apartments",
            "search_apartments",
            "Search for apartments based on multiple filters.",
            (
                opt("--name"),
                opt("--location"),
                opt("--zip-code"),
                opt("--min-price", kind=Kind.FLOAT),
                opt("--max-price", kind=Kind.FLOAT),
                opt("--number-of-bedrooms", kind=Kind.INT),
                opt("--number-of-bathrooms", kind=Kind.INT),
                opt("--property-type"),
                opt("--square-footage", kind=Kind.INT),
                opt("--furnished-status"),
                opt("--floor-level"),
                opt("--pet-policy"),
                opt("--lease-term"),
                opt("--amenities", kind=Kind.LIST),
                opt("--saved-only", kind=Kind.FLAG),
            ),
            s.status("data", shape=s.each(s.apartment)),
        ),
    ),
    "city": (
        Command(
            "get-crime-rate",
            "get_crime_rate",
            "Get crime rate for a given zip code (rate-limited).",
            (_req("--zip-code"),),
            s.status("data"),
        ),
        Command(
            "get-api-call-count",
            "get_api_call_count",
            "Get the current API call count.",
            (),
            s.status("data"),
        ),
        Command(
            "get-api-call-limit",
            "get_api_call_limit",
            "Get the API call limit for the service.",
            (),
            s.status("data"),
        ),
    ),
    "cabs": (
        Command(
            "get-quotation",
            "get_quotation",
            "Calculate price and estimated delay for a ride.",
            (*RIDE_WHERE, SERVICE, RIDE_TIME),
            s.status("data", shape=s.ride),
        ),
        Command(
            "list-rides",
            "list_rides",
            "List all rides available between two locations.",
            (*RIDE_WHERE, RIDE_TIME),
            s.status("data", shape=s.each(s.ride)),
        ),
        Command(
            "order-ride",
            "order_ride",
            "Order a ride and return ride details.",
            (*RIDE_WHERE, SERVICE, RIDE_TIME),
            s.status("data", shape=s.record(s.BOOKED_RIDE)),
            write=True,
        ),
        Command(
            "user-cancel-ride",
            "user_cancel_ride",
            "Cancel the current ride.",
            (),
            s.status("message"),
            write=True,
        ),
        Command(
            "get-current-ride-status",
            "get_current_ride_status",
            "Check the status of the current ride.",
            (),
            s.status("data", shape=s.ride),
        ),
        Command(
            "get-ride",
            "get_ride",
            "Get a specific ride from ride history by index.",
            (_req("--idx", kind=Kind.INT),),
            s.status("data", shape=s.ride),
        ),
        Command(
            "get-ride-history",
            "get_ride_history",
            "Get ride history with pagination.",
            PAGE_10,
            s.status("data", shape=s.with_page("rides", s.ride)),
        ),
        Command(
            "get-ride-history-length",
            "get_ride_history_length",
            "Get the total number of rides in history.",
            (),
            s.status("data"),
        ),
    ),
    "shopping": (
        Command(
            "list-all-products",
            "list_all_products",
            "List all products in the catalog.",
            PAGE_10,
            s.spread,
        ),
        Command(
            "get-product-details",
            "get_product_details",
            "Get product details for a given product ID.",
            (_req("--product-id"),),
            s.status("product"),
        ),
        Command(
            "search-products",
            "search_product",
            "Search for products by name (case-insensitive substring match).",
            (_req("--product-name"), *PAGE_10),
            s.status("products"),
        ),
        Command(
            "add-to-cart",
            "add_to_cart",
            "Add an item to the cart.",
            (_req("--item-id"), _int("--quantity", 1)),
            write=True,
            then=Then(_cart_quantity, _with_quantity),
        ),
        Command(
            "remove-from-cart",
            "remove_from_cart",
            "Remove an item from the cart.",
            (_req("--item-id"), _int("--quantity", 1)),
            s.status("item_id"),
            write=True,
        ),
        Command("list-cart", "list_cart", "List the contents of the cart.", (), s.status("cart")),
        Command(
            "checkout",
            "checkout",
            "Checkout the current cart and create an order.",
            (opt("--discount-code"),),
            write=True,
            then=Then(_the_order, _with_total),
        ),
        Command(
            "get-discount-code-info",
            "get_discount_code_info",
            "Get information about a specific discount code.",
            (_req("--discount-code"),),
            s.discount_info,
        ),
        Command(
            "get-all-discount-codes",
            "get_all_discount_codes",
            "List all available discount codes.",
            (),
            then=Then(_each_code, _codes_by_item),
        ),
        Command(
            "list-orders",
            "list_orders",
            "List all orders.",
            (),
            s.status("orders", shape=s.each(s.order)),
        ),
        Command(
            "get-order-details",
            "get_order_details",
            "Get details for a specific order.",
            (_req("--order-id"),),
            s.status("order", shape=s.order),
        ),
        Command(
            "cancel-order",
            "cancel_order",
            "Cancel an order.",
            (_req("--order-id"),),
            s.status("order_id"),
            write=True,
        ),
    ),
    "cloud-drive": (
        Command(
            "cat",
            "cat",
            "Read the contents of a file and print to stdout.",
            (_req("--path"),),
            s.text,
            errors=(
                _missing("File not found: {path}"),
                ("Is a directory", "Is a directory: {path}"),
                _OUTSIDE,
            ),
        ),
        Command(
            "ls",
            "ls",
            "List the contents of a directory.",
            (_req("--path"), opt("--detail", kind=Kind.FLAG)),
            s.listing,
            errors=(_missing("Directory not found: {path}"), _OUTSIDE),
        ),
        Command(
            "exists",
            "exists",
            "Check if a file or directory exists.",
            (_req("--path"),),
            errors=(_OUTSIDE,),
        ),
        Command(
            "info",
            "info",
            "Get metadata about a file or directory.",
            (_req("--path"),),
            s.file_info,
            errors=(_missing("Path not found: {path}"), _OUTSIDE),
        ),
        Command(
            "tree",
            "tree",
            "Generate a directory tree listing.",
            (opt("--path", default="/"),),
            s.text,
            errors=(
                _missing("Path not found: {path}"),
                ("Not a directory", "Not a directory: {path}"),
                _OUTSIDE,
            ),
        ),
        Command(
            "mkdir",
            "mkdir",
            "Create a directory.",
            (_req("--path"), opt("--create-parents", kind=Kind.FLAG)),
            s.path_done,
            write=True,
            errors=(_missing("Parent directory does not exist: {parent}"), _OUTSIDE),
        ),
        Command(
            "makedirs",
            "makedirs",
            "Create nested directories (like mkdir -p).",
            (_req("--path"), opt("--exist-ok", kind=Kind.FLAG)),
            s.path_done,
            write=True,
            errors=(("File exists", "Directory already exists: {path}"), _OUTSIDE),
        ),
        Command(
            "mv",
            "mv",
            "Move a file or directory.",
            (_req("--source --path1", "path1"), _req("--destination --path2", "path2")),
            s.moved,
            write=True,
            errors=(_missing("Source not found: {path1}"),),
        ),
        Command(
            "rm",
            "rm",
            "Remove a file or directory.",
            (_req("--path"), opt("--recursive", kind=Kind.FLAG)),
            s.path_given,
            write=True,
            errors=(
                _missing("Path not found: {path}"),
                ("recursive=True", "Is a directory (use --recursive): {path}"),
                _OUTSIDE,
            ),
        ),
        Command(  # ARE's file system has no rmdir tool: its rm, once `ls` found the folder empty
            "rmdir",
            "rm",
            "Remove an empty directory.",
            (_req("--path"),),
            s.path_done,
            write=True,
            errors=(_missing("Path not found: {path}"), _OUTSIDE),
            fixed=(("recursive", True),),
            guard=Guard("ls", _not_empty),
        ),
    ),
}

HELP: Final[dict[str, str]] = {
    "calendar": "Calendar - Gaia2 Calendar app CLI.",
    "contacts": "Contacts - Gaia2 Contacts app CLI.",
    "emails": "EmailClientV2 — manage emails, folders, and attachments.",
    "messages": "Messages - Gaia2 messaging app CLI.",
    "chats": "Chats - Gaia2 messaging app CLI.",
    "rent-a-flat": "RentAFlat - apartment listing app.",
    "city": "CityApp - city information app.",
    "cabs": "CabApp - cab/ride service.",
    "shopping": "Shopping - Gaia2 app CLI",
    "cloud-drive": "CloudDrive - Gaia2 filesystem app CLI.",
}


def command(cli: str, name: str) -> Command | None:
    return next((c for c in CLIS[cli] if c.name == name), None)


def schema(cli: str) -> list[dict[str, Any]]:
    """upstream's `schema` command: each command, its function and its options."""
    return [
        {
            "command": c.name,
            "function": c.name.replace("-", "_"),
            "oracle_function": c.function,
            "description": c.help,
            "parameters": [_parameter(o) for o in c.options],
        }
        for c in CLIS[cli]
    ]


def _parameter(option: Option) -> dict[str, Any]:
    shown: dict[str, Any] = {
        "name": option.arg,
        "type": option.kind.click_type,
        "description": option.help,
        "required": option.required,
    }
    if option.default is not None:
        shown["default"] = option.default
    return shown
