"""The real AppWorld apps in their own process: run with the interpreter of the ``appworld`` virtualenv.

This module imports only the standard library and the installed ``appworld`` package (whose
dependencies, pydantic v1 among them, conflict with the project's). The host
(:mod:`evolver_gym.appworld_apps.backend`) starts it as ``python _server.py`` and speaks JSON lines
over its stdin/stdout, one request, one reply:

* ``{"op": "build", "seed": 0, "dir": D, "people": 12}`` - generate the seeded world on the apps' own
  models and factories into ``D`` (12 SQLite files + ``world.json``) unless it is there; reply ``{"world": ...}``.
* ``{"op": "open", "dir": D}`` - load that world into memory as the base of the episodes (the package's
  own ``set_local_dbs``) and point the apps at episode databases copied from it.
* ``{"op": "reset", "task": {...}}`` - put back the base into every database the last episode changed
  (SQLite's backup API), apply the task's setup calls (``{"as": email, "app", "api", "kwargs"}``: made by
  that person, logged in), set the active task's instruction, then take a snapshot for the diff.
* ``{"op": "call", "app": A, "api": B, "kwargs": {...}}`` - one API call through the apps' FastAPI
  routes; reply ``{"status": N, "body": ...}`` as AppWorld's requester returns it. A path parameter is
  one path segment (percent-encoded; ``.``, ``..`` and empty refused), so no value reaches another route
  (``../../admin/credit`` would reach the admin app, which no API exposes).
* ``{"op": "diff"}`` - every table changed since the reset: added / updated / removed rows.
* ``{"op": "task_state"}`` - the active task's ``status`` and ``answer``.
* ``{"op": "apis"}`` - every API with its method, path and parameters (the package's own api docs).
* ``{"op": "begin"}`` / ``{"op": "rollback"}`` - keep / restore the state before a step (faults).
* ``{"op": "ping"}``, ``{"op": "stop"}``.

Agent code never runs here: only API calls arrive, already checked by the host's guard. The apps sign
their access tokens with a key published in the package; this process replaces it with a random one
(``Apps``), so code that knows the package cannot forge a token that logs in as another person.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import random
import secrets
import sqlite3
import sys
import traceback
from datetime import datetime, timedelta
from urllib.parse import quote

WORLD_VERSION = 2
NOW = datetime(2023, 5, 18, 12, 0, 0)
USER_APPS = ("amazon", "file_system", "gmail", "phone", "simple_note", "splitwise", "spotify", "todoist", "venmo")
ALL_APPS = ("admin", "api_docs", "supervisor", *USER_APPS)
# columns that move on every read or login and say nothing about the task
VOLATILE = {"record_hash", "last_logged_in"}
METHOD_NOT_ALLOWED = "The API is not allowed with this method or path parameters."


class Apps:
    """The package's FastAPI apps behind a TestClient, with the api-doc routing table."""

    def __init__(self) -> None:
        from appworld.api_docs import prepare_api_docs
        from appworld.apps import build_main_app
        from fastapi.testclient import TestClient

        self.docs = {app: {d["api_name"]: d for d in prepare_api_docs(app)} for app in ALL_APPS if app != "admin"}
        self.client = TestClient(build_main_app(list(ALL_APPS))).__enter__()
        _rekey_logins()

    def call(self, app: str, api: str, kwargs: dict) -> tuple[int, object]:
        if app not in self.docs:
            return 404, {"message": f"No app named '{app}' found."}
        doc = self.docs[app].get(api)
        if doc is None:
            return 404, {"message": f"No API named '{api}' found in the {app} app."}
        data = dict(kwargs)
        path = doc["path"]
        for name in list(data):
            if "{" + name + "}" in path:
                value = str(data.pop(name))
                if value in ("", ".", ".."):
                    return 422, {"message": f"Validation error. Reason: \n{name}: not a valid path parameter"}
                path = path.replace("{" + name + "}", quote(value, safe=""))  # one segment, never another route
        headers = {}
        if "access_token" in data:
            headers = {"Authorization": f"Bearer {data.pop('access_token')}"}
        method = doc["method"].lower()
        url = path.lstrip("/")
        if method in ("get", "delete"):  # as AppWorld's requester: query parameters
            r = self.client.request(method.upper(), url, params=data, headers=headers)
        elif "auth/token" in url:
            r = self.client.post(url, data=data, headers=headers)
        else:
            r = self.client.request(method.upper(), url, json=data, headers=headers)
        if r.status_code == 200:
            return 200, r.json()
        if r.status_code in (400, 404, 405) or "Method Not Allowed" in r.text:
            return r.status_code, {"message": METHOD_NOT_ALLOWED}
        try:
            body = r.json()
        except ValueError:
            body = {"message": r.text}
        if isinstance(body, dict) and list(body) == ["detail"] and isinstance(body["detail"], dict):
            body = body["detail"]
        return r.status_code, body

    def ok(self, app: str, api: str, **kwargs) -> object:
        status, body = self.call(app, api, kwargs)
        if status != 200:
            raise RuntimeError(f"{app}.{api}({kwargs}) -> {status}: {body}")
        return body


def _rekey_logins() -> None:
    """Give every app's login manager a random signing key for this process (the package's own is public)."""
    from appworld.common.utils import import_apis_module
    from fastapi_login.secrets import to_secret

    for app in ALL_APPS:
        manager = getattr(import_apis_module(app), "logging_manager", None)
        if manager is not None:
            manager.secret = to_secret({"algorithms": manager.algorithm, "secret": secrets.token_bytes(32)})


class _Models(dict):
    """``app -> models module``, imported once."""

    def __missing__(self, app: str):
        from appworld.common.utils import import_models_module

        self[app] = import_models_module(app)
        return self[app]


_MODELS = _Models()


def _models(app: str):
    return _MODELS[app]


def _factories(app: str):
    import importlib

    return importlib.import_module(f"appworld.apps.{app}.factories")


def _save(model_cls, **fields):
    """Validate with the model, insert, return the record (the apps' own ``create``/``save``)."""
    names = set(model_cls.__fields__)
    record = model_cls.create(**{k: v for k, v in fields.items() if k in names})
    record.save()
    return record


def _built(factory, **fields):
    """A record from the app's own polyfactory factory (our fields fixed, the rest drawn), saved."""
    names = set(factory.__model__.__fields__)
    record = factory.build(**{k: v for k, v in fields.items() if k in names})
    record.save()
    return record


# -- the world ------------------------------------------------------------------------------------------
RELATIONS = ("friend", "family", "coworker", "roommate")
GENRES = ("pop", "rock", "jazz", "indie", "classical", "hip-hop")
NOTE_TOPICS = {
    "Grocery List": ["milk", "eggs", "bread", "apples", "coffee", "rice", "spinach", "cheese", "tomatoes", "yogurt"],
    "Books to Read": ["The Hobbit", "Dune", "Educated", "Sapiens", "Circe", "Beloved", "Atomic Habits"],
    "Movie Watchlist": ["Inception", "Arrival", "Heat", "Up", "Amelie", "Parasite", "Rocky"],
    "Gift Ideas": ["scarf", "headphones", "board game", "candle", "mug", "notebook", "plant"],
    "Packing List": ["passport", "charger", "sunscreen", "socks", "toothbrush", "jacket", "sandals"],
    "Recipes to Try": ["lasagna", "pad thai", "shakshuka", "risotto", "tacos", "ramen", "curry"],
}
PROJECTS = {
    "Home Renovation": [
        "Paint the bedroom",
        "Fix the sink",
        "Buy new curtains",
        "Replace light bulbs",
        "Clean the garage",
    ],
    "Work": ["Prepare quarterly report", "Email the team", "Book the meeting room", "Review budget", "Update slides"],
    "Fitness": ["Run 5k", "Yoga session", "Buy running shoes", "Swim laps", "Stretching routine"],
}
PRODUCT_TYPES = {
    "headphones": ["Wireless Headphones", "Noise Cancelling Headphones", "Sport Earbuds"],
    "backpack": ["Hiking Backpack", "Laptop Backpack", "Travel Backpack"],
    "mug": ["Ceramic Mug", "Travel Mug", "Espresso Cup Set"],
    "lamp": ["Desk Lamp", "Floor Lamp", "Reading Lamp"],
    "book": ["Cookbook", "Travel Guide", "Poetry Collection"],
    "shoes": ["Running Shoes", "Hiking Boots", "Sneakers"],
}
COLORS = ("black", "white", "blue", "red", "green", "gray")
FILES = {
    "~/documents/resume.txt": "Experienced engineer with a passion for tools.",
    "~/documents/budget.csv": "month,amount\nJanuary,1200\nFebruary,1350\nMarch,990",
    "~/documents/meeting_notes.txt": "Discuss roadmap\nAssign owners\nSet next date",
    "~/photos/vacation/beach.jpg": "binary-image-data-beach",
    "~/photos/vacation/mountain.jpg": "binary-image-data-mountain",
    "~/photos/family.jpg": "binary-image-data-family",
    "~/downloads/invoice_march.pdf": "Invoice March total 120.50",
    "~/downloads/invoice_april.pdf": "Invoice April total 98.25",
}
GROUPS = {"Roommates": "Shared apartment costs", "Ski Trip": "Weekend trip to the mountains"}
EXPENSES = ("Groceries", "Electricity bill", "Dinner", "Gas", "Internet", "Cabin rental", "Lift tickets")


def build_world(seed: int, directory: str, people: int = 12) -> dict:
    """Generate the seeded base world into ``directory`` and return its facts (``world.json``)."""
    from appworld.apps.api_lib import set_local_dbs
    from appworld.apps.factory_lib import fake_street_address, fake_zip_code
    from appworld.apps.model_lib import ModelFactory
    from faker import Faker

    rng = random.Random(seed)
    random.seed(seed)
    Faker.seed(seed)
    ModelFactory.seed_random(seed)
    fake = Faker()
    fake.seed_instance(seed)
    os.makedirs(directory, exist_ok=True)
    set_local_dbs(to_db_home_path=directory, app_names=list(ALL_APPS), create=True)

    m = {app: _models(app) for app in ALL_APPS}
    docs_model = m["api_docs"].ApiDoc
    from appworld.api_docs import prepare_api_docs

    for app in ALL_APPS:
        if app == "admin":
            continue
        for doc in prepare_api_docs(app):
            _save(
                docs_model,
                app_name_=app,
                **{k: doc[k] for k in ("api_name", "path", "method", "description", "parameters", "response_schemas")},
            )

    # people: the supervisor (index 0) and the people in their life
    used_emails, used_phones, persons = set(), set(), []
    while len(persons) < people + 1:
        first, last = fake.first_name(), fake.last_name()
        email = f"{first}.{last}@gmail.com".lower()
        if email in used_emails or first in {p["first_name"] for p in persons}:
            continue
        phone = str(rng.randint(2_000_000_000, 9_999_999_999))
        if phone in used_phones:
            continue
        used_emails.add(email)
        used_phones.add(phone)
        persons.append(
            {
                "first_name": first,
                "last_name": last,
                "email": email,
                "phone_number": phone,
                "birthday": f"{rng.randint(1960, 2000)}-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}",
                "sex": rng.choice(["male", "female"]),
                "relationship": None if not persons else rng.choice(RELATIONS),
                "passwords": {app: fake.password(length=12, special_chars=False) for app in USER_APPS},
            }
        )
    sup = persons[0]
    sup_fields = {k: sup[k] for k in ("first_name", "last_name", "email", "phone_number", "birthday", "sex")}

    # admin: the main users, their cards with balances; supervisor: profile, passwords, addresses, cards
    cards = []
    for i, p in enumerate(persons):
        mu = _save(
            m["admin"].MainUser,
            **{k: p[k] for k in ("first_name", "last_name", "email", "phone_number", "birthday", "sex")},
        )
        p["main_user_id"] = mu.id
        for card_name in ("Visa", "MasterCard") if i == 0 else ("Visa",):
            card = {
                "card_name": card_name,
                "owner_name": f"{p['first_name']} {p['last_name']}",
                "card_number": rng.randint(10**15, 10**16 - 1),
                "expiry_year": rng.randint(2025, 2030),
                "expiry_month": rng.randint(1, 12),
                "cvv_number": rng.randint(100, 999),
            }
            _save(m["admin"].PaymentCard, main_user_id=mu.id, balance=round(rng.uniform(2000, 5000), 2), **card)
            if i == 0:
                cards.append(card)
    sv = _save(m["supervisor"].Supervisor, **sup_fields)
    for app in USER_APPS:
        _save(m["supervisor"].AccountPassword, supervisor_id=sv.id, account_name=app, password=sup["passwords"][app])
    addresses = []
    for name in ("Home", "Work"):
        addr = {
            "name": name,
            "street_address": fake_street_address(),
            "city": fake.city(),
            "state": fake.state(),
            "country": "United States",
            "zip_code": fake_zip_code(),
        }
        _save(m["supervisor"].Address, supervisor_id=sv.id, **addr)
        addresses.append(addr)
    for card in cards:
        _save(m["supervisor"].PaymentCard, supervisor_id=sv.id, **card)

    # one account per person in every user app, from each app's own UserFactory
    for app in USER_APPS:
        factory = _factories(app).UserFactory
        for p in persons:
            user = _built(
                factory,
                first_name=p["first_name"],
                last_name=p["last_name"],
                email=p["email"],
                phone_number=p["phone_number"],
                password=p["passwords"][app] if p is sup else p["passwords"]["phone"],
                verified=True,
                created_at=NOW - timedelta(days=400 + rng.randint(0, 300)),
                last_logged_in=NOW - timedelta(days=rng.randint(1, 30)),
                verification_code=None,
                password_reset_code=None,
                venmo_balance=round(rng.uniform(1500, 3000), 2),
                cart_promo_code=None,
            )
            p.setdefault("ids", {})[app] = user.id
    for p in persons[1:]:
        p["passwords"] = {app: p["passwords"]["phone"] for app in USER_APPS}

    from appworld.apps.api_lib import CompanyNotifier

    for company in (
        "Amazon",
        "Spotify",
        "Todoist",
        "Venmo",
        "Splitwise",
        "Gmail",
        "Simple Note",
        "File System",
        "Phone",
    ):
        CompanyNotifier(company).create_accounts(skip_if_exists=True)
    apps = Apps()
    tokens: dict[tuple[str, str], str] = {}

    def token(app: str, p: dict) -> str:
        key = (app, p["email"])
        if key not in tokens:
            username = p["phone_number"] if app == "phone" else p["email"]
            tokens[key] = apps.ok(app, "login", username=username, password=p["passwords"][app])["access_token"]
        return tokens[key]

    def as_(p: dict, app: str, api: str, **kwargs):
        return apps.ok(app, api, access_token=token(app, p), **kwargs)

    others = persons[1:]
    # phone: contacts, texts, alarms
    for p in others:
        as_(
            sup,
            "phone",
            "add_contact",
            first_name=p["first_name"],
            last_name=p["last_name"],
            phone_number=p["phone_number"],
            email=p["email"],
            relationships=[p["relationship"]],
            birthday=p["birthday"],
        )
    texts = [
        "Are we still on for tomorrow?",
        "Can you send me the address?",
        "Happy birthday!",
        "Running late, sorry",
        "Did you get my email?",
        "Let's grab lunch next week",
        "Thanks for dinner!",
        "Call me when you can",
    ]
    for p in rng.sample(others, 8):
        as_(p, "phone", "send_text_message", phone_number=sup["phone_number"], message=rng.choice(texts))
        as_(sup, "phone", "send_text_message", phone_number=p["phone_number"], message=rng.choice(texts))
    for t, label in (("06:30", "Wake up"), ("12:15", "Lunch"), ("21:45", "Read")):
        as_(sup, "phone", "create_alarm", time=t, label=label, repeat_days=["monday", "wednesday", "friday"])

    # spotify: a catalog from the app's factories, the supervisor's playlists, library, likes, follows
    sf = _factories("spotify")
    artists, songs, albums = [], [], []
    for i in range(8):
        genre = GENRES[i % len(GENRES)]
        a = _built(sf.ArtistFactory, name=fake.name(), genre=genre, created_at=NOW - timedelta(days=900))
        artists.append({"id": a.id, "name": a.name, "genre": genre})
    words = ["Blue", "Night", "River", "Golden", "Echo", "Summer", "Wild", "Silent", "Paper", "Neon", "Stone", "Velvet"]
    nouns = ["Sky", "Heart", "Road", "Dream", "Light", "Fire", "Rain", "Song", "City", "Ocean", "Moon", "Garden"]
    titles = rng.sample([f"{w} {n}" for w in words for n in nouns], 48)
    for art in artists:
        album_title = f"{titles.pop()} Sessions"
        album = _built(
            sf.AlbumFactory,
            title=album_title,
            genre=art["genre"],
            artist_ids=[art["id"]],
            release_date=NOW - timedelta(days=rng.randint(30, 1500)),
            rating=round(rng.uniform(2, 5), 1),
            like_count=rng.randint(0, 500),
            review_count=0,
        )
        album_songs = []
        for _ in range(5):
            s = _built(
                sf.SongFactory,
                title=titles.pop(),
                album_id=album.id,
                artist_ids=[art["id"]],
                genre=art["genre"],
                duration=rng.randint(150, 330),
                play_count=rng.randint(10, 100000),
                rating=round(rng.uniform(1, 5), 1),
                like_count=rng.randint(0, 2000),
                review_count=0,
                release_date=NOW - timedelta(days=rng.randint(30, 1500)),
            )
            album_songs.append(s.id)
            songs.append(
                {
                    "id": s.id,
                    "title": s.title,
                    "artist_id": art["id"],
                    "album_id": album.id,
                    "genre": art["genre"],
                    "duration": s.duration,
                    "play_count": s.play_count,
                }
            )
        albums.append({"id": album.id, "title": album_title, "artist_id": art["id"], "song_ids": album_songs})
    playlists = []
    for title in ("Morning Run", "Chill Evenings", "Road Trip"):
        pid = as_(sup, "spotify", "create_playlist", title=title, is_public=rng.random() < 0.5)["playlist_id"]
        members = rng.sample([s["id"] for s in songs], 5)
        for sid in members:
            as_(sup, "spotify", "add_song_to_playlist", playlist_id=pid, song_id=sid)
        playlists.append({"id": pid, "title": title, "song_ids": members})
    library = rng.sample([s["id"] for s in songs], 8)
    for sid in library:
        as_(sup, "spotify", "add_song_to_library", song_id=sid)
    liked = rng.sample([s["id"] for s in songs], 6)
    for sid in liked:
        as_(sup, "spotify", "like_song", song_id=sid)
    followed = rng.sample([a["id"] for a in artists], 3)
    for aid in followed:
        as_(sup, "spotify", "follow_artist", artist_id=aid)

    # venmo: friends, payments both ways, open requests
    friends = rng.sample(others, 7)
    for p in friends:
        as_(sup, "venmo", "add_friend", user_email=p["email"])
    notes_for = [
        "Pizza night",
        "Concert tickets",
        "Taxi",
        "Groceries",
        "Coffee",
        "Movie",
        "Rent share",
        "Birthday gift",
    ]
    transactions = []
    for p in others:
        amount = round(rng.uniform(5, 120), 2)
        if rng.random() < 0.5:
            as_(
                p,
                "venmo",
                "create_transaction",
                receiver_email=sup["email"],
                amount=amount,
                description=rng.choice(notes_for),
            )
            transactions.append({"from": p["email"], "to": sup["email"], "amount": amount})
        else:
            as_(
                sup,
                "venmo",
                "create_transaction",
                receiver_email=p["email"],
                amount=amount,
                description=rng.choice(notes_for),
            )
            transactions.append({"from": sup["email"], "to": p["email"], "amount": amount})
    requests_in = []
    for p in rng.sample(others, 4):
        amount = round(rng.uniform(10, 80), 2)
        rid = as_(
            p,
            "venmo",
            "create_payment_request",
            user_email=sup["email"],
            amount=amount,
            description=rng.choice(notes_for),
        )["payment_request_id"]
        requests_in.append({"id": rid, "from": p["email"], "amount": amount})

    # gmail: threads into and out of the supervisor's mailbox
    subjects = [
        "Weekend plans",
        "Project update",
        "Invoice attached",
        "Dinner on Friday?",
        "Book club",
        "Travel itinerary",
        "Quick question",
        "Photos from the trip",
        "Meeting notes",
        "Birthday party",
    ]
    emails = []
    for p in rng.sample(others, 8):
        subject = rng.choice(subjects)
        as_(
            p,
            "gmail",
            "send_email",
            email_addresses=[sup["email"]],
            subject=subject,
            body=f"Hi {sup['first_name']}, {fake.sentence()}",
        )
        emails.append({"from": p["email"], "to": sup["email"], "subject": subject})
    for p in rng.sample(others, 3):
        subject = rng.choice(subjects)
        as_(
            sup,
            "gmail",
            "send_email",
            email_addresses=[p["email"]],
            subject=subject,
            body=f"Hi {p['first_name']}, {fake.sentence()}",
        )
        emails.append({"from": sup["email"], "to": p["email"], "subject": subject})

    # simple_note
    notes = []
    for title, pool in NOTE_TOPICS.items():
        items = rng.sample(pool, 4)
        tags = [rng.choice(["personal", "lists", "ideas"])]
        nid = as_(
            sup,
            "simple_note",
            "create_note",
            title=title,
            content="\n".join(f"- {x}" for x in items),
            tags=tags,
            pinned=rng.random() < 0.3,
        )["note_id"]
        notes.append({"id": nid, "title": title, "items": items, "tags": tags})

    # todoist
    projects = []
    for name, pool in PROJECTS.items():
        pid = as_(sup, "todoist", "create_project", name=name, color=rng.choice(["red", "blue", "green"]))["project_id"]
        tasks = []
        for title in pool:
            due = (NOW + timedelta(days=rng.randint(-10, 20))).strftime("%Y-%m-%d")
            prio = rng.choice(["high", "medium", "low"])
            tid = as_(sup, "todoist", "create_task", project_id=pid, title=title, due_date=due, priority=prio)[
                "task_id"
            ]
            done = rng.random() < 0.3
            if done:
                as_(sup, "todoist", "update_task", task_id=tid, is_completed=True)
            tasks.append({"id": tid, "title": title, "due_date": due, "priority": prio, "is_completed": done})
        projects.append({"id": pid, "name": name, "tasks": tasks})

    # file_system
    for path, content in FILES.items():
        directory_path = path.rsplit("/", 1)[0]
        as_(sup, "file_system", "create_directory", directory_path=directory_path, recursive=True)
        as_(sup, "file_system", "create_file", file_path=path, content=content, overwrite=True)

    # splitwise: groups with members and expenses paid by different people
    groups = []
    for gname, desc in GROUPS.items():
        members = rng.sample(others, 3)
        gid = as_(
            sup, "splitwise", "create_group", name=gname, description=desc, member_emails=[p["email"] for p in members]
        )["group_id"]
        expenses = []
        for _ in range(3):
            payer = rng.choice([sup, *members])
            debtors = [p["email"] for p in [sup, *members] if p is not payer]
            amount = round(rng.uniform(30, 300), 2)
            desc_ = rng.choice(EXPENSES)
            as_(
                payer,
                "splitwise",
                "record_expense",
                description=desc_,
                paid_amount=amount,
                payer_email=payer["email"],
                debtor_emails=debtors,
                group_id=gid,
            )
            expenses.append({"description": desc_, "amount": amount, "payer": payer["email"]})
        groups.append({"id": gid, "name": gname, "members": [p["email"] for p in members], "expenses": expenses})

    # amazon: sellers and products from the app's factories; the supervisor's cards, addresses, cart, orders
    af = _factories("amazon")
    sellers = [
        _built(af.SellerFactory, name=f"{fake.last_name()} {suffix}", rating=round(rng.uniform(3, 5), 1))
        for suffix in ("Goods", "Outlet", "Store", "Supply")
    ]
    products = []
    for ptype, names in PRODUCT_TYPES.items():
        for name in names:
            color = rng.choice(COLORS)
            prod = _built(
                af.ProductFactory,
                product_type=ptype,
                name=f"{color.title()} {name}",
                description=f"A {color} {name.lower()}.",
                seller_id=rng.choice(sellers).id,
                price=round(rng.uniform(8, 250), 2),
                delivery_days=rng.randint(1, 7),
                inventory_quantity=rng.randint(20, 90),
                color=color,
                rating=round(rng.uniform(2.5, 5), 1),
                seller_rating=round(rng.uniform(3, 5), 1),
                has_variations=False,
                relative_size="medium",
            )
            products.append({"id": prod.id, "name": prod.name, "type": ptype, "price": prod.price, "color": color})
    for d in ("UPS", "USPS", "FedEx"):
        _built(af.DelivererFactory, name=d)
    for card in cards:
        as_(sup, "amazon", "add_payment_card", **card)
    for addr in addresses:
        as_(sup, "amazon", "add_address", **addr)
    amazon_cards = as_(sup, "amazon", "show_payment_cards")
    amazon_addrs = as_(sup, "amazon", "show_addresses")
    orders = []
    for _ in range(2):
        picks = rng.sample(products, 2)
        for prod in picks:
            as_(sup, "amazon", "add_product_to_cart", product_id=prod["id"], quantity=1)
        oid = as_(
            sup,
            "amazon",
            "place_order",
            payment_card_id=amazon_cards[0]["payment_card_id"],
            address_id=amazon_addrs[0]["address_id"],
        )["order_id"]
        orders.append({"id": oid, "product_ids": [p["id"] for p in picks]})
    cart = rng.sample(products, 2)
    for prod in cart:
        as_(sup, "amazon", "add_product_to_cart", product_id=prod["id"], quantity=1)
    for card in cards:
        as_(sup, "venmo", "add_payment_card", **card)

    world = {
        "version": WORLD_VERSION,
        "seed": seed,
        "now": NOW.isoformat(),
        "people": persons,
        "addresses": addresses,
        "cards": cards,
        "artists": artists,
        "albums": albums,
        "songs": songs,
        "playlists": playlists,
        "library_song_ids": library,
        "liked_song_ids": liked,
        "followed_artist_ids": followed,
        "venmo_friends": [p["email"] for p in friends],
        "transactions": transactions,
        "payment_requests_in": requests_in,
        "emails": emails,
        "notes": notes,
        "projects": projects,
        "files": FILES,
        "groups": groups,
        "products": products,
        "orders": orders,
        "cart_product_ids": [p["id"] for p in cart],
        "amazon_card_ids": [c["payment_card_id"] for c in amazon_cards],
        "amazon_address_ids": [a["address_id"] for a in amazon_addrs],
    }
    with open(os.path.join(directory, "world.json"), "w") as fh:
        json.dump(world, fh)
    return world


# -- episodes ---------------------------------------------------------------------------------------------
class Server:
    def __init__(self) -> None:
        from appworld.apps.api_lib import set_local_date_and_time

        self.freezer = set_local_date_and_time(NOW)
        self.apps: Apps | None = None
        self.base: str | None = None
        self.base_memory: str | None = None
        self.people: dict[str, dict] = {}
        self.base_copies: dict[str, tuple[sqlite3.Connection, int]] | None = None
        self.opened = 0
        self.episode = 0
        self.snapshot: dict[str, sqlite3.Connection] = {}
        self.snapshot_changes: dict[str, int] = {}
        self.saved: dict[str, sqlite3.Connection] = {}

    def handle(self, msg: dict) -> dict:
        op = msg.get("op")
        if op == "build":
            directory = msg["dir"]
            path = os.path.join(directory, "world.json")
            if os.path.exists(path):
                with open(path) as fh:
                    world = json.load(fh)
                if world.get("version") == WORLD_VERSION:
                    return {"world": world}
            world = build_world(int(msg["seed"]), directory, int(msg.get("people", 12)))
            self.base = None
            return {"world": world}
        if op == "open":
            self.base = msg["dir"]
            with open(os.path.join(self.base, "world.json")) as fh:
                self.people = {p["email"]: p for p in json.load(fh)["people"]}
            if self.apps is None:
                from appworld.apps.api_lib import set_local_show_api_response_schemas

                self.apps = Apps()
                set_local_show_api_response_schemas(True)  # AppWorld's default: docs show response schemas
            # the base world is read from disk once; each reset copies it memory to memory
            from appworld.apps.api_lib import set_local_dbs

            self.base_copies = None
            self.base_memory = f":memory:base{self.opened}"
            self.opened += 1
            set_local_dbs(to_db_home_path=self.base_memory, from_db_home_path=self.base, app_names=list(ALL_APPS))
            if _models("supervisor").Task.count() == 0:  # the active task, written by the app's own model
                _save(_models("supervisor").Task, supervisor_id=1, instruction="(none)", status=None, answer="null")
            self._load_episode_dbs()
            return {"ok": True}
        if op == "reset":
            return self.reset(msg.get("task") or {})
        if op == "call":
            kwargs = msg.get("kwargs")
            status, body = self.apps.call(
                str(msg.get("app")), str(msg.get("api")), kwargs if isinstance(kwargs, dict) else {}
            )
            return {"status": status, "body": body}
        if op == "diff":
            return {"diffs": self.diff()}
        if op == "task_state":
            row = (
                self.conn("supervisor").execute("SELECT status, answer FROM tasks ORDER BY id DESC LIMIT 1").fetchone()
            )
            return {"status": row[0] if row else None, "answer": row[1] if row else None}
        if op == "apis":
            from appworld.api_docs import prepare_api_docs

            return {
                "apis": {
                    app: [
                        {
                            "name": d["api_name"],
                            "method": d["method"],
                            "path": d["path"],
                            "description": d["description"],
                            "parameters": [
                                {
                                    "name": p["name"],
                                    "type": p["type"],
                                    "required": p["required"],
                                    "description": p["description"],
                                }
                                for p in d["parameters"]
                            ],
                        }
                        for d in prepare_api_docs(app)
                    ]
                    for app in ALL_APPS
                    if app != "admin"
                }
            }
        if op == "begin":
            # refresh the copy of only the databases that changed since it was taken
            for app in ALL_APPS:
                if app != "api_docs" and self.saved.get(app, (None, -1))[1] != self.conn(app).total_changes:
                    self.saved[app] = self._copy(app)
            return {"ok": True}
        if op == "rollback":
            for app, (copy, changes) in self.saved.items():
                if self.conn(app).total_changes != changes:
                    copy.backup(self.conn(app))
                    self.saved[app] = (copy, self.conn(app).total_changes)
            return {"ok": True}
        if op == "ping":
            return {"ok": True, "pid": os.getpid()}
        raise ValueError(f"unknown op {op!r}")

    @staticmethod
    def conn(app: str) -> sqlite3.Connection:
        return _MODELS[app].SQLModel.db.connection

    def _copy(self, app: str) -> tuple[sqlite3.Connection, int]:
        copy = sqlite3.connect(":memory:", check_same_thread=False)
        self.conn(app).backup(copy)
        return copy, self.conn(app).total_changes

    def _copy_all(self) -> dict[str, sqlite3.Connection]:
        out = {}
        for app in ALL_APPS:
            if app == "api_docs":
                continue
            snap = sqlite3.connect(":memory:", check_same_thread=False)
            self.conn(app).backup(snap)
            out[app] = snap
        return out

    def _load_episode_dbs(self) -> None:
        """Point the apps at episode databases loaded from the base (the package's own loading), and keep
        in-memory copies of the base to restore from; the base itself is never written after this."""
        from appworld.apps.api_lib import set_local_dbs

        self.episode += 1
        with contextlib.redirect_stdout(io.StringIO()):  # the package warns that a memory source is no file
            set_local_dbs(
                to_db_home_path=f":memory:episode{self.episode}",
                from_db_home_path=self.base_memory,
                app_names=list(ALL_APPS),
            )
        self.base_copies = {app: self._copy(app) for app in ALL_APPS}

    def reset(self, task: dict) -> dict:
        from appworld.apps.api_lib import set_local_random_seed

        if self.base is None:
            raise ValueError("open a world first")
        if self.base_copies is None:
            self._load_episode_dbs()
        else:  # put back the base of every database the last episode changed
            for app, (copy, changes) in self.base_copies.items():
                if self.conn(app).total_changes != changes:
                    copy.backup(self.conn(app))
                    self.base_copies[app] = (copy, self.conn(app).total_changes)
        set_local_random_seed(100)
        for step in task.get("setup", []):  # {"as": email, "app", "api", "kwargs"}: a call made by that person
            kwargs = dict(step.get("kwargs", {}))
            if step.get("as"):
                person = self.people[step["as"]]
                user = person["phone_number"] if step["app"] == "phone" else person["email"]
                login = self.apps.ok(step["app"], "login", username=user, password=person["passwords"][step["app"]])
                kwargs["access_token"] = login["access_token"]
            self.apps.ok(step["app"], step["api"], **kwargs)
        # the active task row (added to the base at open) gets this task's instruction
        conn = self.conn("supervisor")
        conn.execute("UPDATE tasks SET instruction = ? WHERE id = 1", (str(task.get("instruction") or "(none)"),))
        conn.commit()
        self.snapshot = self._copy_all()
        self.snapshot_changes = {app: self.conn(app).total_changes for app in self.snapshot}
        self.saved = {}
        return {"ok": True}

    def diff(self) -> list[dict]:
        out = []
        for app, snap in self.snapshot.items():
            live = self.conn(app)
            if live.total_changes == self.snapshot_changes.get(app):
                continue  # nothing written to this database since the reset
            tables = [r[0] for r in live.execute("SELECT name FROM sqlite_master WHERE type='table'")]
            for table in tables:
                cols = [r[1] for r in live.execute(f"PRAGMA table_info({table})")]
                if "id" not in cols or "_fts" in table:  # full-text indexes follow their tables
                    continue
                keep = [c for c in cols if c not in VOLATILE]
                sel = f"SELECT {', '.join(keep)} FROM {table}"
                idx = keep.index("id")
                a = {r[idx]: r for r in snap.execute(sel)}
                b = {r[idx]: r for r in live.execute(sel)}
                if a == b:
                    continue
                added = sorted(k for k in b if k not in a)
                removed = sorted(k for k in a if k not in b)
                updated = {
                    k: [c for c, x, y in zip(keep, a[k], b[k]) if x != y]
                    for k in sorted(a.keys() & b.keys())
                    if a[k] != b[k]
                }
                if not (added or removed or updated):
                    continue
                out.append(
                    {
                        "app": app,
                        "table": table,
                        "added": added,
                        "removed": removed,
                        "updated": updated,
                        "end_rows": {k: _jsonable(dict(zip(keep, b[k]))) for k in [*added, *updated]},
                        "start_rows": {k: _jsonable(dict(zip(keep, a[k]))) for k in [*removed, *updated]},
                    }
                )
        return out


def _jsonable(row: dict) -> dict:
    out = {}
    for k, v in row.items():
        if isinstance(v, bytes):
            v = v.hex()
        elif isinstance(v, str) and v[:1] in "[{":
            try:
                v = json.loads(v)
            except ValueError:
                pass
        out[k] = v
    return out


def main() -> None:
    # replies go to the original stdout; anything the package prints goes to stderr
    reply = os.fdopen(os.dup(1), "w", buffering=1)
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    import warnings

    warnings.filterwarnings("ignore")
    server = Server()
    for line in sys.stdin:
        if not line.strip():
            continue
        msg = {}
        try:
            msg = json.loads(line)
            if msg.get("op") == "stop":
                break
            out = server.handle(msg)
        except Exception as exc:  # a bad request never takes the server down
            out = {"error": f"{type(exc).__name__}: {exc}", "trace": traceback.format_exc()[-2000:]}
        reply.write(json.dumps(out, default=str) + "\n")
    reply.flush()
    os._exit(0)  # the in-process ASGI client keeps a thread alive; nothing is left to save


if __name__ == "__main__":
    main()
