"""One generated universe: every app a Gaia2 scenario carries, filled by ARE's own classes.

Rule: a universe is a pure function of (seed, preset). Every id and time is drawn from one
`random.Random(seed)`, every name, address and sentence from a `Faker` seeded with the same
seed (the bytes are the same for the same seed and the same faker version); nothing reads the
wall clock or `uuid4`. Each app's state is what ARE's own app object returns from
`get_state()` after it was filled through ARE's dataclasses (`Contact`, `Email`,
`ConversationV2`, `CalendarEvent`, `Product`, `Ride`, `Apartment`...), so ARE's importer
loads it as it loads Gaia2's. Two things are written as plain data because ARE's objects
would make them depend on the machine: the file tree (`SandboxLocalFileSystem.get_state`
lists a real temporary directory, in the file system's order, and names it) and the order of
a conversation's participants (`ConversationV2` keeps them as a `set`).

The apps, by the names Gaia2 gives them (ARE's `APP_ALIAS`): AgentUserInterface, Calendar,
Chats, Contacts, Emails, Messages, RentAFlat, Shopping, Cabs, City, Files, SystemApp.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from areasync.gaia2.worlds.presets import Preset

# 2024-10-15 08:00 UTC: Gaia2's scenarios start in October 2024; the world's past is the year
# before, its calendar runs six months either side.
START_TIME = 1728979200.0
YEAR = 365 * 86400.0
FILES_TMPDIR = "/tmp/areasync-worlds/files"  # what the Files state names as its directory
SERVICE_TYPES = ("Default", "Premium", "Van")
TAGS = ("work", "personal", "family", "health", "travel", "sport")


@dataclass(frozen=True)
class Person:
    """A contact other than the user, as the scenarios address them in each app."""

    name: str
    email: str
    phone: str
    chat_id: str  # their id in Chats
    chat_conversation: str  # the Chats conversation between them and the user


@dataclass(frozen=True)
class Universe:
    """The apps section of a Gaia2 scenario and the handles its shapes refer to."""

    apps: list[dict[str, Any]]
    user_name: str
    user_email: str
    people: list[Person]
    apartment_ids: list[str]
    addresses: list[str]


class _Draw:
    """The seeded sources: ids, numbers and times from `rng`, text from `fake`."""

    def __init__(self, seed: int) -> None:
        from faker import Faker

        self.rng = random.Random(seed)
        self.fake = Faker("en_US")
        self.fake.seed_instance(seed)

    def hex_id(self) -> str:
        return f"{self.rng.getrandbits(128):032x}"

    def past(self) -> float:
        """A whole second within the year before the start."""
        return float(int(START_TIME - self.rng.uniform(60.0, YEAR)))

    def around(self) -> float:
        """A quarter hour within six months either side of the start."""
        return float(int((START_TIME + self.rng.uniform(-YEAR / 2, YEAR / 2)) // 900 * 900))

    def sentence(self, words: int = 12) -> str:
        return str(self.fake.sentence(nb_words=words))

    def text(self, chars: int) -> str:
        return str(self.fake.text(max_nb_chars=chars))


def _email_address(first: str, last: str, taken: set[str], draw: _Draw) -> str:
    base = f"{first}.{last}".lower().replace(" ", "").replace("'", "")
    address = f"{base}@{draw.fake.free_email_domain()}"
    while address in taken:
        address = f"{base}{draw.rng.randrange(10, 100)}@{draw.fake.free_email_domain()}"
    taken.add(address)
    return address


def generate(seed: int, size: Preset) -> Universe:
    """The universe of this seed at this size (see the module docstring's rule)."""
    draw = _Draw(seed)
    user_first, user_last = draw.fake.first_name(), draw.fake.last_name()
    user_name = f"{user_first} {user_last}"
    taken: set[str] = set()
    user_email = _email_address(user_first, user_last, taken, draw)
    user_phone = draw.fake.numerify("+1##########")
    contacts, named = _contacts(draw, size, user_first, user_last, user_email, user_phone, taken)
    addresses = [draw.fake.street_address() + ", " + draw.fake.city() for _ in range(40)]
    chats, people = _chats(draw, size, user_name, named)
    apartments, apartment_ids = _rent_a_flat(draw, size)
    apps = [
        _app("AgentUserInterface", "AgentUserInterface", _plain("AgentUserInterface")),
        _app("Calendar", "CalendarApp", _calendar(draw, size, people)),
        _app("Chats", "MessagingAppV2", chats),
        _app("Contacts", "ContactsApp", contacts),
        _app("Emails", "EmailClientV2", _emails(draw, size, user_email, people)),
        _app("Messages", "MessagingAppV2", _sms(draw, size, user_name, user_phone)),
        _app("RentAFlat", "RentAFlat", apartments),
        _app("Shopping", "ShoppingApp", _shopping(draw, size)),
        _app("Cabs", "CabApp", _cabs(draw, size, addresses)),
        _app("City", "CityApp", _city(draw, size)),
        _app("Files", "SandboxLocalFileSystem", _files(draw, size)),
        _app("SystemApp", "SystemApp", _plain("SystemApp")),
    ]
    return Universe(apps, user_name, user_email, people, apartment_ids, addresses)


def _app(name: str, class_name: str, state: dict[str, Any]) -> dict[str, Any]:
    return {"name": name, "class_name": class_name, "app_state": state}


def _plain(class_name: str) -> dict[str, Any]:
    from are.simulation import apps

    state: dict[str, Any] = getattr(apps, class_name)().get_state()
    return state


def _contacts(
    draw: _Draw,
    size: Preset,
    first: str,
    last: str,
    email: str,
    phone: str,
    taken: set[str],
) -> tuple[dict[str, Any], list[tuple[str, str, str]]]:
    from are.simulation.apps.contacts import Contact, ContactsApp, Gender, Status

    fake, rng = draw.fake, draw.rng
    app = ContactsApp(name="Contacts")
    user = Contact(
        first_name=first,
        last_name=last,
        contact_id=draw.hex_id(),
        is_user=True,
        gender=rng.choice(list(Gender)),
        age=rng.randrange(22, 70),
        nationality=fake.country(),
        city_living=fake.city(),
        country=fake.country(),
        status=Status.EMPLOYED,
        job=fake.job(),
        description=draw.sentence(),
        phone=phone,
        email=email,
        address=fake.address().replace("\n", ", "),
    )
    app.contacts[user.contact_id] = user
    people: list[tuple[str, str, str]] = []
    for _ in range(size.contacts):
        first_name, last_name = fake.first_name(), fake.last_name()
        contact = Contact(
            first_name=first_name,
            last_name=last_name,
            contact_id=draw.hex_id(),
            gender=rng.choice(list(Gender)),
            age=rng.randrange(18, 90),
            nationality=fake.country(),
            city_living=fake.city(),
            country=fake.country(),
            status=rng.choice(list(Status)),
            job=fake.job(),
            description=draw.sentence(),
            phone=fake.numerify("+1##########"),
            email=_email_address(first_name, last_name, taken, draw),
            address=fake.address().replace("\n", ", "),
        )
        app.contacts[contact.contact_id] = contact
        people.append((f"{first_name} {last_name}", str(contact.email), str(contact.phone)))
    state: dict[str, Any] = app.get_state()
    return state, people


def _emails(draw: _Draw, size: Preset, user_email: str, people: list[Person]) -> dict[str, Any]:
    from are.simulation.apps.email_client import Email, EmailClientV2, EmailFolderName

    rng = draw.rng
    app = EmailClientV2(name="Emails", user_email=user_email)
    # Most mail is received; a quarter sent, a few drafts and deleted.
    shares = [
        (EmailFolderName.INBOX, 0.7),
        (EmailFolderName.SENT, 0.22),
        (EmailFolderName.DRAFT, 0.04),
        (EmailFolderName.TRASH, 0.04),
    ]
    for folder, share in shares:
        emails = []
        for _ in range(max(1, round(size.emails * share))):
            other = rng.choice(people).email
            incoming = folder in (EmailFolderName.INBOX, EmailFolderName.TRASH)
            emails.append(
                Email(
                    sender=other if incoming else user_email,
                    recipients=[user_email if incoming else other],
                    subject=draw.sentence(6).rstrip("."),
                    content=draw.text(rng.choice((200, 400, 800, 1200))),
                    email_id=draw.hex_id(),
                    cc=[rng.choice(people).email] if rng.random() < 0.15 else [],
                    attachments={},
                    timestamp=draw.past(),
                    is_read=rng.random() < 0.8,
                )
            )
        # ARE keeps each folder newest first (`EmailFolder.add_email` sorts on every add).
        app.folders[folder].emails = sorted(emails, key=lambda e: e.timestamp, reverse=True)
    state: dict[str, Any] = app.get_state()
    return state


def _conversation(
    draw: _Draw, participants: list[str], count: int, title: str | None = None
) -> Any:
    from are.simulation.apps.messaging_v2 import ConversationV2, MessageV2

    times = sorted(draw.past() for _ in range(count))
    messages = [
        MessageV2(
            sender_id=draw.rng.choice(participants),
            message_id=draw.hex_id(),
            timestamp=t,
            content=draw.sentence(draw.rng.randrange(4, 20)),
        )
        for t in times
    ]
    conversation = ConversationV2(
        participant_ids=participants,
        messages=messages,
        title=title,
        conversation_id=draw.hex_id(),
        last_updated=times[-1] if times else START_TIME - YEAR,
    )
    conversation.participant_ids = sorted(participants)  # ConversationV2 made it a set
    return conversation


def _chats(
    draw: _Draw, size: Preset, user_name: str, people: list[tuple[str, str, str]]
) -> tuple[dict[str, Any], list[Person]]:
    from are.simulation.apps.messaging_v2 import MessagingAppMode, MessagingAppV2

    user_id = draw.hex_id()
    app = MessagingAppV2(
        name="Chats",
        mode=MessagingAppMode.NAME,
        current_user_id=user_id,
        current_user_name=user_name,
    )
    ids: dict[str, str] = {}
    for name, _, _ in people:
        ids[name] = draw.hex_id()
        app.name_to_id[name] = ids[name]
        app.id_to_name[ids[name]] = name
    handles: list[Person] = []
    for k, (name, email, phone) in enumerate(people):
        conversation_id = ""
        if k < size.chats:
            pair = _conversation(draw, [user_id, ids[name]], size.chat_messages)
            app.conversations[pair.conversation_id] = pair
            conversation_id = pair.conversation_id
        handles.append(Person(name, email, phone, ids[name], conversation_id))
    # A few group chats among the people the user chats with.
    talking = [p for p in handles if p.chat_conversation]
    for _ in range(max(1, size.chats // 10)):
        group = draw.rng.sample(talking, min(3, len(talking)))
        title = draw.fake.catch_phrase()
        chat = _conversation(
            draw, [user_id, *(p.chat_id for p in group)], size.chat_messages, title
        )
        app.conversations[chat.conversation_id] = chat
    state: dict[str, Any] = app.get_state()
    return state, handles


def _sms(draw: _Draw, size: Preset, user_name: str, user_phone: str) -> dict[str, Any]:
    from are.simulation.apps.messaging_v2 import MessagingAppMode, MessagingAppV2

    app = MessagingAppV2(
        name="Messages",
        mode=MessagingAppMode.PHONE_NUMBER,
        current_user_id=user_phone,
        current_user_name=user_name,
    )
    for _ in range(size.sms):
        phone, name = draw.fake.numerify("+1##########"), draw.fake.name()
        app.name_to_id[name] = phone
        app.id_to_name[phone] = name
        thread = _conversation(draw, [user_phone, phone], size.sms_messages)
        app.conversations[thread.conversation_id] = thread
    state: dict[str, Any] = app.get_state()
    return state


def _calendar(draw: _Draw, size: Preset, people: list[Person]) -> dict[str, Any]:
    from are.simulation.apps.calendar import CalendarApp, CalendarEvent

    rng = draw.rng
    app = CalendarApp(name="Calendar")
    for _ in range(size.calendar):
        start = draw.around()
        end = start + rng.choice((1800, 3600, 5400, 7200, 28800))
        event = CalendarEvent(
            event_id=draw.hex_id(),
            title=draw.fake.bs().capitalize(),
            start_datetime=start,
            end_datetime=end,
            tag=rng.choice(TAGS),
            description=draw.sentence(10) if rng.random() < 0.6 else None,
            location=draw.fake.city() if rng.random() < 0.5 else None,
            attendees=[p.name for p in rng.sample(people, min(len(people), rng.randrange(0, 4)))],
        )
        app.events[event.event_id] = event
    state: dict[str, Any] = app.get_state()
    return state


def _shopping(draw: _Draw, size: Preset) -> dict[str, Any]:
    from are.simulation.apps.shopping import CartItem, Item, Order, Product, ShoppingApp

    rng, fake = draw.rng, draw.fake
    app = ShoppingApp(name="Shopping")
    items: list[Item] = []
    for _ in range(size.products):
        product = Product(name=fake.catch_phrase(), product_id=draw.hex_id())
        for _ in range(rng.randrange(1, 5)):
            item = Item(
                price=round(rng.uniform(3.0, 400.0), 2),
                available=rng.random() < 0.9,
                item_id=draw.hex_id(),
                options={"color": fake.color_name(), "size": rng.choice("SMLX")},
            )
            product.variants[item.item_id] = item
            items.append(item)
        app.products[product.product_id] = product
    for item in rng.sample(items, max(1, len(items) // 20)):
        app.discount_codes[item.item_id] = {
            fake.bothify("????-##").upper(): rng.choice((5, 10, 20))
        }
    for _ in range(size.orders):
        bought = rng.sample(items, min(len(items), rng.randrange(1, 4)))
        lines = {
            i.item_id: CartItem(i.item_id, rng.randrange(1, 3), i.price, True, dict(i.options))
            for i in bought
        }
        order = Order(
            order_status=rng.choice(("delivered", "shipped", "processed", "cancelled")),
            order_date=datetime.fromtimestamp(draw.past(), tz=UTC),
            order_total=round(sum(c.price * c.quantity for c in lines.values()), 2),
            order_id=draw.hex_id(),
            order_items=lines,
        )
        app.orders[order.order_id] = order
    state: dict[str, Any] = app.get_state()
    return state


def _cabs(draw: _Draw, size: Preset, addresses: list[str]) -> dict[str, Any]:
    from are.simulation.apps.cab import CabApp, Ride

    rng = draw.rng
    app = CabApp(name="Cabs")

    def ride(status: str) -> Ride:
        start, end = rng.sample(addresses, 2)
        distance = round(rng.uniform(1.0, 25.0), 2)
        service = rng.choice(SERVICE_TYPES)
        return Ride(
            ride_id=draw.hex_id(),
            status=status,
            service_type=service,
            start_location=start,
            end_location=end,
            price=round(distance * app.d_service_config[service]["price_per_km"], 2),
            duration=round(distance * 120.0, 1),
            time_stamp=draw.past(),
            distance_km=distance,
            delay=round(rng.uniform(60.0, 900.0), 1),
        )

    app.ride_history = sorted(
        (ride(rng.choice(("DELIVERED", "CANCELLED"))) for _ in range(size.rides)),
        key=lambda r: r.time_stamp or 0.0,
    )
    app.quotation_history = [ride("QUOTED") for _ in range(max(1, size.rides // 5))]
    state: dict[str, Any] = app.get_state()
    return state


def _city(draw: _Draw, size: Preset) -> dict[str, Any]:
    from are.simulation.apps.city import CityApp, CrimeDataPoint

    app = CityApp(name="City")
    codes = sorted({draw.fake.zipcode() for _ in range(size.zip_codes * 2)})[: size.zip_codes]
    for code in codes:
        app.crime_data[code] = CrimeDataPoint(
            violent_crime=round(draw.rng.uniform(0.5, 50.0), 2),
            property_crime=round(draw.rng.uniform(5.0, 120.0), 2),
        )
    state: dict[str, Any] = app.get_state()
    return state


def _rent_a_flat(draw: _Draw, size: Preset) -> tuple[dict[str, Any], list[str]]:
    from are.simulation.apps.apartment_listing import Apartment, RentAFlat

    rng, fake = draw.rng, draw.fake
    app = RentAFlat()
    amenities = ("Gym", "Pool", "Parking", "Laundry", "Elevator", "Balcony", "Doorman")
    for _ in range(size.apartments):
        bedrooms = rng.randrange(0, 5)
        apartment = Apartment(
            name=f"{fake.last_name()} {rng.choice(('Residences', 'Lofts', 'Court', 'House'))}",
            location=fake.city(),
            zip_code=fake.zipcode(),
            price=float(rng.randrange(800, 6000, 25)),
            bedrooms=bedrooms,
            bathrooms=max(1, bedrooms - rng.randrange(0, 2)),
            property_type=rng.choice(("Apartment", "Condo", "Home")),
            square_footage=rng.randrange(350, 3000, 10),
            furnished_status=rng.choice(("Furnished", "Unfurnished", "Semi-furnished")),
            floor_level=rng.choice(("Ground floor", "Upper floors", "Penthouse", "Basement")),
            pet_policy=rng.choice(("Pets allowed", "No pets", "Cats allowed", "Dogs allowed")),
            lease_term=rng.choice(("Month-to-month", "6 months", "1 year", "Long term lease")),
            apartment_id=draw.hex_id(),
            amenities=sorted(rng.sample(amenities, rng.randrange(0, 4))),
        )
        app.apartments[apartment.apartment_id] = apartment
    app.saved_apartments = sorted(rng.sample(list(app.apartments), min(3, size.apartments)))
    for apartment_id in app.saved_apartments:
        app.apartments[apartment_id].saved = True
    state: dict[str, Any] = app.get_state()
    return state, list(app.apartments)


def _files(draw: _Draw, size: Preset) -> dict[str, Any]:
    """`SandboxLocalFileSystem.get_state`'s shape, written directly (see the module docstring)."""
    folders: dict[str, list[str]] = {}
    names = ("Documents", "Downloads", "Pictures", "Music", "Projects", "Notes", "Travel")
    for k in range(size.folders):
        folders[f"{names[k % len(names)]}{'' if k < len(names) else k}"] = []
    taken: set[str] = set()
    for _ in range(size.files):
        name = draw.fake.file_name()
        while name in taken:
            name = draw.fake.file_name()
        taken.add(name)
        folders[draw.rng.choice(sorted(folders))].append(name)
    children = [
        {
            "name": folder,
            "type": "directory",
            "children": [{"name": name, "type": "file"} for name in sorted(inside)],
        }
        for folder, inside in sorted(folders.items())
    ]
    return {
        "files": {"name": "", "type": "directory", "children": children},
        "tmpdir": FILES_TMPDIR,
    }
