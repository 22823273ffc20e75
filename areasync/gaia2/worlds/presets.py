"""How big a generated world is: one `Preset` per size, named in `PRESETS`.

Rule: the `gaia2` preset is what Gaia2's own scenarios hold - a phone's worth of content in each
of the apps its scenarios carry, hundreds to a few thousand items per app, a few MB of JSON per
scenario - so that what areasync costs at that size is what users pay. Its counts follow a year
of one person's use: ~300 contacts, a few emails a day (1,200), ~3 calendar entries a working
day (800), chat and SMS threads with the people one talks to (90 + 70 threads, 20 and 15
messages each), a shop's catalogue (250 products, 1-4 variants each) and a year's orders,
a city's zip codes, a rental site's listings, a home folder of ~400 files. `medium` is a
quarter of it, `small` a few items per app (what the tests use: every app filled, fast).
docs/topics/performance.md has the bytes each preset writes.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Preset:
    """Items per app of one universe, and how many universes a dataset spreads its scenarios on."""

    name: str
    contacts: int
    emails: int
    chats: int  # conversations in Chats (by name)
    chat_messages: int  # messages per Chats conversation
    sms: int  # conversations in Messages (by phone number)
    sms_messages: int  # messages per Messages conversation
    calendar: int
    products: int
    orders: int
    rides: int
    zip_codes: int
    apartments: int
    folders: int
    files: int
    universes: int = 1


SMALL = Preset(
    "small",
    contacts=12,
    emails=20,
    chats=4,
    chat_messages=5,
    sms=3,
    sms_messages=4,
    calendar=15,
    products=8,
    orders=3,
    rides=5,
    zip_codes=10,
    apartments=8,
    folders=3,
    files=10,
)
MEDIUM = Preset(
    "medium",
    contacts=75,
    emails=300,
    chats=22,
    chat_messages=20,
    sms=18,
    sms_messages=15,
    calendar=200,
    products=60,
    orders=10,
    rides=40,
    zip_codes=100,
    apartments=75,
    folders=10,
    files=100,
    universes=2,
)
GAIA2 = Preset(
    "gaia2",
    contacts=300,
    emails=1200,
    chats=90,
    chat_messages=20,
    sms=70,
    sms_messages=15,
    calendar=800,
    products=250,
    orders=40,
    rides=150,
    zip_codes=400,
    apartments=300,
    folders=40,
    files=400,
    universes=10,
)
PRESETS: dict[str, Preset] = {p.name: p for p in (SMALL, MEDIUM, GAIA2)}


def preset(name: str) -> Preset:
    """The preset called `name`, or a ValueError naming the known ones."""
    try:
        return PRESETS[name]
    except KeyError:
        raise ValueError(f"no world preset {name!r}: choose one of {sorted(PRESETS)}") from None
