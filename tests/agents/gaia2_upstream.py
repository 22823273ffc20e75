"""What gaia2-cli's app CLIs print, written out from upstream's source (`gaia2_cli/apps/*.py`
of gaia2-cli), and a check of a command's output against it.

A shape is: a type (`str`, `int`, `float`, `bool`), None, a tuple (any of its shapes), a dict
(exactly these keys in this order, each of its shape), a list `[shape]` (each item), `Keyed`
(an object of ids to `shape`), `TEXT` (plain text, not JSON), `ANY`.
"""

from __future__ import annotations

import dataclasses
import json
from typing import Any, Final

ANY: Final = object()
TEXT: Final = object()
NUMBER: Final = (int, float)
OPT_STR: Final = (str, None)


@dataclasses.dataclass(frozen=True)
class Keyed:
    shape: Any


def problems(output: bytes, shape: Any) -> list[str]:
    """How `output` (a command's stdout) differs from `shape`: [] when it conforms."""
    if shape is TEXT:
        return [] if output.decode() else ["empty text"]
    try:
        value = json.loads(output)
    except ValueError:
        return [f"not JSON: {output[:200]!r}"]
    return list(_check(value, shape, "$"))


def _check(value: Any, shape: Any, where: str) -> Any:
    if shape is ANY:
        return
    if isinstance(shape, tuple):
        if not any(not list(_check(value, s, where)) for s in shape):
            yield f"{where}: {value!r} is none of {shape}"
    elif shape is None:
        if value is not None:
            yield f"{where}: {value!r} is not null"
    elif isinstance(shape, dict):
        if not isinstance(value, dict):
            yield f"{where}: {value!r} is not an object"
        elif list(value) != list(shape):
            yield f"{where}: keys {list(value)} are not upstream's {list(shape)}"
        else:
            for key, inner in shape.items():
                yield from _check(value[key], inner, f"{where}.{key}")
    elif isinstance(shape, list):
        if not isinstance(value, list):
            yield f"{where}: {value!r} is not a list"
        else:
            for i, item in enumerate(value):
                yield from _check(item, shape[0], f"{where}[{i}]")
    elif isinstance(shape, Keyed):
        if not isinstance(value, dict):
            yield f"{where}: {value!r} is not an object"
        else:
            for key, item in value.items():
                yield from _check(item, shape.shape, f"{where}.{key}")
    elif not isinstance(shape, type):  # a literal: upstream's own word
        if value != shape:
            yield f"{where}: {value!r} is not {shape!r}"
    elif shape is float:
        if type(value) not in (int, float):
            yield f"{where}: {value!r} is not a number"
    elif type(value) is not shape:
        yield f"{where}: {value!r} is not {shape.__name__}"


def status(key: str, shape: Any, word: str = "success") -> dict[str, Any]:
    return {"status": word, key: shape}


# -- upstream's records (its `_event_dict`, `_contact_dict`, dataclasses' asdict) ----------

EVENT: Final = {
    "event_id": str,
    "title": str,
    "start_datetime": float,
    "end_datetime": float,
    "tag": OPT_STR,
    "description": OPT_STR,
    "location": OPT_STR,
    "attendees": [str],
    "start_strftime": str,
    "end_strftime": str,
}
EVENTS_PAGE: Final = {"events": [EVENT], "range": [int], "total": int}
CONTACT: Final = {
    "contact_id": str,
    "first_name": str,
    "last_name": str,
    "is_user": bool,
    "gender": str,
    "age": (int, None),
    "nationality": OPT_STR,
    "city_living": OPT_STR,
    "country": OPT_STR,
    "status": str,
    "job": OPT_STR,
    "description": OPT_STR,
    "phone": OPT_STR,
    "email": OPT_STR,
    "address": OPT_STR,
}
EMAIL: Final = {
    "sender": str,
    "recipients": [str],
    "subject": str,
    "content": str,
    "email_id": str,
    "parent_id": OPT_STR,
    "cc": [str],
    "attachments": Keyed(str),
    "timestamp": float,
    "is_read": bool,
}
MESSAGE: Final = {"sender_id": str, "message_id": str, "timestamp": float, "content": str}
CONVERSATION: Final = {
    "conversation_id": str,
    "title": OPT_STR,
    "participant_ids": [str],
    "last_updated": float,
    "messages": [MESSAGE],
}
APARTMENT: Final = {
    "name": str,
    "location": str,
    "zip_code": str,
    "price": float,
    "bedrooms": int,
    "bathrooms": int,
    "property_type": str,
    "square_footage": int,
    "furnished_status": OPT_STR,
    "floor_level": OPT_STR,
    "pet_policy": OPT_STR,
    "lease_term": OPT_STR,
    "apartment_id": str,
    "amenities": ([str], None),
    "saved": bool,
}
RIDE: Final = {
    "ride_id": str,
    "status": OPT_STR,
    "service_type": OPT_STR,
    "start_location": OPT_STR,
    "end_location": OPT_STR,
    "price": (float, None),
    "duration": (float, None),
    "time_stamp": (float, None),
    "distance_km": (float, None),
    "delay": (float, None),
    "delay_history": [{"delay": float, "time_stamp": float}],
}
BOOKED_RIDE: Final = {k: v for k, v in RIDE.items() if k not in ("delay", "delay_history")}
ITEM: Final = {"price": float, "available": bool, "item_id": str, "options": Keyed(ANY)}
PRODUCT: Final = {"name": str, "product_id": str, "variants": Keyed(ITEM)}
CART_ITEM: Final = {
    "item_id": str,
    "quantity": int,
    "price": float,
    "available": bool,
    "options": Keyed(ANY),
}
ORDER: Final = {
    "order_id": str,
    "order_status": str,
    "order_date": float,
    "order_total": float,
    "order_items": Keyed(CART_ITEM),
}
OK: Final = {"status": "ok", "email_id": str}
