"""Seeded world generator: people, their accounts and months of app activity.

* ``World`` - the generated world: people, the supervisor, the frozen "now", and per-app rows.
* ``generate_world`` - build a ``World`` from a seed (pure function of the seed).

Every name, sentence and number here is of this project's own making. The world is a plain
Python structure (``rows[app][table] -> list[dict]``); :mod:`evolver_gym.appworld.db` turns it into
one SQLite database per app. All activity happens strictly before ``World.now``, the frozen
date-time of every task played in the world.
"""

from __future__ import annotations

import datetime as dt
import string
from dataclasses import dataclass, field
from typing import Any

from evolver_gym.core.seeding import make_random

__all__ = ["World", "generate_world", "RELATIONSHIPS", "GENRES", "USER_APPS"]

USER_APPS = ("phone", "music", "payments", "notes", "todo", "mail")
RELATIONSHIPS = ("friend", "family", "coworker", "neighbor", "classmate")
GENRES = ("rock", "jazz", "pop", "classical", "hip-hop", "folk", "electronic", "blues")

_FIRST = (
    "Amara Basil Cedric Dalia Emeric Farah Gideon Hollis Ines Jovan Kaia Lorcan Mireille Nadim "
    "Odessa Pascal Quilla Rafferty Saoirse Tobin Ulla Valen Wren Xavi Yusra Zeno Adaeze Bram Cosima "
    "Dorian Elowen Fintan Greer Hamish Isolde Jarrah Kenji Linnea Marek Noor Orla Piers Rosalind "
    "Soren Talia Umberto Vesna Wilder Ximena Yorick Zuri Anselm Briony Caius Delphine Evander"
).split()
_LAST = (
    "Ashdown Brightwater Calloway Dunmore Everly Fairbanks Greaves Hollander Ingram Jessup Kettering "
    "Lindqvist Marchetti Northcott Okonkwo Pemberton Quennell Radcliffe Sandoval Thistlewood Underhill "
    "Vasquez Whitlock Yarrow Zielinski Abernathy Blackwood Crisp Delacroix Eastwick Falkner Galloway"
).split()
_DOMAINS = ("mailbox.test", "postal.test", "inkwell.test")
_WORDS = (
    "amber river quiet lantern velvet orbit harbor meadow ember cobalt willow signal paper tide "
    "north glass summer echo cedar marble drift canyon hollow silver garden thunder violet ridge"
).split()
_CITIES = (("Brookhaven", "OR"), ("Maple Falls", "WA"), ("Cedar Point", "CO"), ("Lakemont", "NY"))
_NOTE_TOPICS = (
    ("Book ideas", "Stories I want to read: {a}, {b} and {c}."),
    ("Gift ideas", "Possible gifts: a {a} scarf, a {b} mug, tickets to {c}."),
    ("Recipe: {a} soup", "Simmer {b} with {c} for forty minutes. Salt to taste."),
    ("Trip to {a}", "Pack the {b} bag. Book the {c} hotel early."),
    ("Meeting notes {a}", "Discussed the {b} budget and the {c} timeline."),
    ("Workout plan", "Monday {a} run, Wednesday {b} swim, Friday {c} ride."),
)
_TODO_PROJECTS = ("Home", "Work", "Garden", "Errands", "Side project")
_TODO_VERBS = ("Fix", "Buy", "Call about", "Plan", "Clean", "Review", "Order", "Schedule", "Return")
_MSG_TEMPLATES = (
    "Are we still on for {w} tonight?",
    "I left the {w} book at your place.",
    "Running ten minutes late, sorry!",
    "Did you see the {w} news?",
    "Thanks for the {w} tip!",
    "Call me when you get a chance.",
    "Happy to help with the {w} move this weekend.",
)
_SUBJECTS = (
    "Weekly {w} update",
    "Question about {w}",
    "Photos from the {w} trip",
    "Your {w} order",
    "Invitation: {w} night",
    "Notes on the {w} draft",
)


@dataclass
class World:
    """A generated world: people, the supervisor (``people[0]``), the frozen now and app rows."""

    seed: int
    now: dt.datetime
    people: list[dict[str, Any]]
    rows: dict[str, dict[str, list[dict[str, Any]]]] = field(default_factory=dict)

    @property
    def supervisor(self) -> dict[str, Any]:
        return self.people[0]

    def person(self, person_id: int) -> dict[str, Any]:
        return self.people[person_id - 1]


def _ts(t: dt.datetime) -> str:
    return t.replace(microsecond=0).isoformat()


class _Builder:
    """Accumulates rows with per-table auto-incrementing ids."""

    def __init__(self) -> None:
        self.rows: dict[str, dict[str, list[dict[str, Any]]]] = {}

    def add(self, app: str, table: str, **row: Any) -> int:
        table_rows = self.rows.setdefault(app, {}).setdefault(table, [])
        row = {"id": len(table_rows) + 1, **row}
        table_rows.append(row)
        return row["id"]


def _people(rnd, n: int) -> list[dict[str, Any]]:
    pairs = [(f, last) for f in _FIRST for last in _LAST]
    rnd.shuffle(pairs)
    phones: set[str] = set()
    people = []
    for i, (first, last) in enumerate(pairs[:n]):
        while True:
            phone = str(rnd.randint(2, 9)) + "".join(rnd.choice(string.digits) for _ in range(9))
            if phone not in phones:
                phones.add(phone)
                break
        people.append(
            {
                "id": i + 1,
                "first_name": first,
                "last_name": last,
                "email": f"{first.lower()}.{last.lower()}@{rnd.choice(_DOMAINS)}",
                "phone_number": phone,
                "birthday": dt.date(
                    rnd.randint(1960, 2003), rnd.randint(1, 12), rnd.randint(1, 28)
                ).isoformat(),
            }
        )
    return people


def _password(rnd) -> str:
    return "".join(rnd.choice(string.ascii_letters + string.digits) for _ in range(12))


def generate_world(seed: int = 0, num_people: int = 60) -> World:
    """Build the world for ``seed``; equal seeds give equal worlds, field for field.

    Example:
        >>> w = generate_world(0)
        >>> w.supervisor["id"], generate_world(0).people == w.people
        (1, True)
    """
    if num_people < 20:
        raise ValueError(f"num_people must be at least 20, got {num_people!r}")
    rnd = make_random(seed, "appworld", "world")
    now = dt.datetime(2024, 3, 1, 9, 0) + dt.timedelta(days=rnd.randint(0, 120), hours=rnd.randint(0, 8))
    people = _people(rnd, num_people)
    sup = people[0]
    b = _Builder()

    def when(max_days: int = 180) -> dt.datetime:
        return now - dt.timedelta(seconds=rnd.randint(3600, max_days * 86400))

    # accounts: everyone has one in every user app; the supervisor's passwords are in supervisor
    for app in USER_APPS:
        for p in people:
            b.add(
                app,
                "users",
                first_name=p["first_name"],
                last_name=p["last_name"],
                email=p["email"],
                phone_number=p["phone_number"],
                password=_password(rnd),
                created_at=_ts(now - dt.timedelta(days=rnd.randint(200, 900))),
                **(
                    {"balance": round(rnd.uniform(1500, 3000) if p is sup else rnd.uniform(50, 2000), 2)}
                    if app == "payments"
                    else {}
                ),
            )
    for app in USER_APPS:
        b.add(
            "supervisor", "account_passwords", account_name=app, password=b.rows[app]["users"][0]["password"]
        )
    for name, (city, state) in zip(("Home", "Work"), rnd.sample(_CITIES, 2)):
        b.add(
            "supervisor",
            "addresses",
            name=name,
            street_address=f"{rnd.randint(10, 999)} {rnd.choice(_WORDS).title()} St",
            city=city,
            state=state,
            zip_code=f"{rnd.randint(10000, 99999)}",
        )
    for card_name in ("Everyday Visa", "Travel Mastercard", "Backup Debit"):
        b.add(
            "supervisor",
            "payment_cards",
            card_name=card_name,
            owner_name=f"{sup['first_name']} {sup['last_name']}",
            card_number="".join(rnd.choice(string.digits) for _ in range(16)),
            expiry_date=f"{rnd.randint(1, 12):02d}/{rnd.randint(26, 30)}",
            cvv=f"{rnd.randint(100, 999)}",
        )

    # phone: the supervisor's contacts carry relationships; others get a few contacts too
    others = people[1:]
    sup_contacts = rnd.sample(others, min(38, len(others)))
    for p in sup_contacts:
        rels = [rnd.choice(RELATIONSHIPS)]
        if rnd.random() < 0.2:
            rels.append(rnd.choice([r for r in RELATIONSHIPS if r not in rels]))
        b.add(
            "phone",
            "contacts",
            owner_id=sup["id"],
            first_name=p["first_name"],
            last_name=p["last_name"],
            phone_number=p["phone_number"],
            email=p["email"],
            relationships=",".join(sorted(rels)),
            birthday=p["birthday"],
            created_at=_ts(when(400)),
        )
    for p in others[:20]:
        for q in rnd.sample(people, 3):
            if q["id"] != p["id"]:
                b.add(
                    "phone",
                    "contacts",
                    owner_id=p["id"],
                    first_name=q["first_name"],
                    last_name=q["last_name"],
                    phone_number=q["phone_number"],
                    email=q["email"],
                    relationships=rnd.choice(RELATIONSHIPS),
                    birthday=q["birthday"],
                    created_at=_ts(when(400)),
                )
    messages = []
    for _ in range(260):
        q = rnd.choice(sup_contacts)
        sender, receiver = (sup, q) if rnd.random() < 0.5 else (q, sup)
        messages.append(
            (when(), sender["id"], receiver["id"], rnd.choice(_MSG_TEMPLATES).format(w=rnd.choice(_WORDS)))
        )
    for _ in range(120):
        p, q = rnd.sample(others, 2)
        messages.append((when(), p["id"], q["id"], rnd.choice(_MSG_TEMPLATES).format(w=rnd.choice(_WORDS))))
    for t, s, r, text in sorted(messages):
        b.add("phone", "text_messages", sender_id=s, receiver_id=r, message=text, sent_at=_ts(t))
    for _ in range(9):
        b.add(
            "phone",
            "alarms",
            user_id=sup["id"],
            time=f"{rnd.randint(5, 22):02d}:{rnd.choice((0, 15, 30, 45)):02d}",
            label=rnd.choice(("Wake up", "Gym", "Meds", "Stand-up", "Pick up kids", "Water plants", "Lunch")),
            repeat_days=rnd.choice(("", "mon,tue,wed,thu,fri", "sat,sun", "mon,wed,fri")),
            enabled=int(rnd.random() < 0.7),
            created_at=_ts(when(300)),
        )
    for p in others[:25]:
        b.add(
            "phone",
            "alarms",
            user_id=p["id"],
            time=f"{rnd.randint(5, 9):02d}:00",
            label="Wake up",
            repeat_days="",
            enabled=1,
            created_at=_ts(when(300)),
        )

    # music: a catalogue, the supervisor's library, likes, playlists and play history
    artists = []
    for _ in range(28):
        name = (
            f"The {rnd.choice(_WORDS).title()} {rnd.choice(_WORDS).title()}s"
            if rnd.random() < 0.4
            else f"{rnd.choice(_FIRST)} {rnd.choice(_WORDS).title()}"
        )
        genre = rnd.choice(GENRES)
        artists.append(
            b.add("music", "artists", name=name, genre=genre, follower_count=rnd.randint(100, 90000))
        )
    song_ids: list[int] = []
    for _ in range(60):
        artist_id = rnd.choice(artists)
        genre = b.rows["music"]["artists"][artist_id - 1]["genre"]
        release = (now - dt.timedelta(days=rnd.randint(30, 4000))).date().isoformat()
        album_id = b.add(
            "music",
            "albums",
            title=f"{rnd.choice(_WORDS).title()} {rnd.choice(_WORDS).title()}",
            artist_id=artist_id,
            genre=genre,
            release_date=release,
        )
        for track in range(rnd.randint(5, 9)):
            song_ids.append(
                b.add(
                    "music",
                    "songs",
                    title=f"{rnd.choice(_WORDS).title()} {rnd.choice(_WORDS)}",
                    album_id=album_id,
                    artist_id=artist_id,
                    genre=genre,
                    track_number=track + 1,
                    duration=rnd.randint(120, 420),
                    release_date=release,
                    play_count=rnd.randint(0, 500000),
                )
            )
    for p in people[:30]:
        count = 90 if p is sup else 15
        for sid in rnd.sample(song_ids, count):
            b.add("music", "library_songs", user_id=p["id"], song_id=sid, added_at=_ts(when(400)))
        for sid in rnd.sample(song_ids, 45 if p is sup else 8):
            b.add("music", "liked_songs", user_id=p["id"], song_id=sid, liked_at=_ts(when(400)))
    for p in people[:12]:
        for _ in range(7 if p is sup else 2):
            pid = b.add(
                "music",
                "playlists",
                owner_id=p["id"],
                title=f"{rnd.choice(_WORDS).title()} {rnd.choice(('Mix', 'Vibes', 'Hits', 'Session'))}",
                is_public=int(rnd.random() < 0.5),
                created_at=_ts(when(300)),
            )
            for sid in rnd.sample(song_ids, rnd.randint(6, 24)):
                b.add("music", "playlist_songs", playlist_id=pid, song_id=sid, added_at=_ts(when(200)))
    plays = sorted((when(), rnd.choice(song_ids)) for _ in range(420))
    for t, sid in plays:
        b.add("music", "play_history", user_id=sup["id"], song_id=sid, played_at=_ts(t))

    # payments: friendships, transactions and requests around the supervisor
    pay_friends = [p for p in sup_contacts if rnd.random() < 0.8]
    for p in pay_friends:
        b.add("payments", "friendships", user_id=sup["id"], friend_id=p["id"], created_at=_ts(when(500)))
    txs = []
    for _ in range(240):
        q = rnd.choice(pay_friends)
        s, r = (sup, q) if rnd.random() < 0.55 else (q, sup)
        txs.append(
            (
                when(),
                s["id"],
                r["id"],
                round(rnd.uniform(3, 180), 2),
                rnd.choice(("Dinner", "Rent share", "Concert", "Groceries", "Taxi", "Gift", "Coffee")),
            )
        )
    for t, s, r, amount, desc in sorted(txs):
        b.add(
            "payments",
            "transactions",
            sender_id=s,
            receiver_id=r,
            amount=amount,
            description=desc,
            created_at=_ts(t),
        )
    for _ in range(34):
        q = rnd.choice(pay_friends)
        incoming = rnd.random() < 0.7
        t = when(60)
        status = rnd.choice(("pending", "pending", "approved", "denied"))
        b.add(
            "payments",
            "payment_requests",
            requester_id=q["id"] if incoming else sup["id"],
            payer_id=sup["id"] if incoming else q["id"],
            amount=round(rnd.uniform(5, 120), 2),
            description=rnd.choice(("Movie night", "Utilities", "Brunch", "Parking", "Books")),
            status=status,
            created_at=_ts(t),
            resolved_at=None if status == "pending" else _ts(t + dt.timedelta(hours=rnd.randint(1, 40))),
        )

    # notes
    for p in people[:15]:
        for _ in range(24 if p is sup else 3):
            title, body = rnd.choice(_NOTE_TOPICS)
            a, c, d = rnd.sample(_WORDS, 3)
            t = when(300)
            b.add(
                "notes",
                "notes",
                owner_id=p["id"],
                title=title.format(a=a.title(), b=c, c=d),
                content=body.format(a=a, b=c, c=d),
                tags=rnd.choice(("", "personal", "work", "ideas")),
                pinned=int(rnd.random() < 0.15),
                created_at=_ts(t),
                updated_at=_ts(t),
            )

    # todo
    for p in people[:10]:
        for name in _TODO_PROJECTS if p is sup else _TODO_PROJECTS[:2]:
            proj = b.add("todo", "projects", owner_id=p["id"], name=name, created_at=_ts(when(400)))
            for _ in range(rnd.randint(9, 16) if p is sup else 3):
                due = (now + dt.timedelta(days=rnd.randint(-25, 30))).date()
                done = rnd.random() < 0.35
                b.add(
                    "todo",
                    "tasks",
                    project_id=proj,
                    owner_id=p["id"],
                    title=f"{rnd.choice(_TODO_VERBS)} {rnd.choice(_WORDS)} {rnd.choice(_WORDS)}",
                    due_date=due.isoformat(),
                    priority=rnd.randint(1, 4),
                    labels=rnd.choice(("", "urgent", "later")),
                    completed=int(done),
                    completed_at=_ts(when(20)) if done else None,
                    created_at=_ts(when(60)),
                )

    # mail: the supervisor's inbox and sent folder
    mails = []
    for _ in range(150):
        q = rnd.choice(others)
        out = rnd.random() < 0.3
        mails.append(
            (
                when(),
                q,
                out,
                rnd.choice(_SUBJECTS).format(w=rnd.choice(_WORDS)),
                f"Hi {(q if out else sup)['first_name']}, a few words about {rnd.choice(_WORDS)}.",
            )
        )
    for t, q, out, subject, body in sorted(mails, key=lambda m: m[0]):
        s, r = (sup, q) if out else (q, sup)
        b.add(
            "mail",
            "emails",
            owner_id=sup["id"],
            folder="sent" if out else "inbox",
            sender=s["email"],
            recipient=r["email"],
            subject=subject,
            body=body,
            is_read=int(out or rnd.random() < 0.6),
            sent_at=_ts(t),
        )
    world = World(seed=seed, now=now, people=people, rows=b.rows)
    return world
