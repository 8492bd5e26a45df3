"""Scenario templates over the real apps' generated world: instruction, reference code, state tests.

* ``TEMPLATES`` - every scenario template, by name: apps used, difficulty (AppWorld's 1-3), and a
  builder ``(world, variant) -> TaskSpec | None``.
* ``build_tasks(world, split, split_scheme)`` - the ``Task`` records of one split.
* ``SPLITS`` / ``SPLIT_SCHEMES`` - ``train``/``dev``/``test_normal``/``test_challenge``; ``goal`` (the
  same templates with other parameters), ``scenario`` (whole templates held out) or ``app`` (whole apps
  held out: every task touching a dev or test_normal app, drawn from the world seed, is in that split).
  In every scheme, every task that touches ``gmail`` is ``test_challenge``: an app never seen in
  training, as in AppWorld.
* ``held_out_apps(world, split_scheme)`` - the apps each split holds out; ``task_apps(task)`` - the
  apps a task touches (declared, checked, set up, or called by its reference).

A reference is code written against the real AppWorld API names (``apis.spotify.login``,
``apis.venmo.create_transaction``, ...), run by the same sandbox as the agent's code. Tests are the
JSON tests of :mod:`evolver_gym.appworld.evaluation` over the database diff of the real apps
(``answer``, ``added``, ``updated``, ``removed``, ``no_collateral``), labelled ``no_op_fail`` (a
do-nothing agent fails them) or ``no_op_pass``.

Example:
    >>> spec = TEMPLATES["phone_contact_phone"].build(TINY_WORLD, 0)
    >>> spec.instruction
    'What is the phone number of my contact Bo Li?'
    >>> [t["kind"] for t in spec.tests]
    ['answer', 'no_collateral']
"""

from __future__ import annotations

import hashlib
import json
import random
import re
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from evolver_gym.core.task import Task

__all__ = [
    "TEMPLATES",
    "Template",
    "TaskSpec",
    "build_tasks",
    "held_out_apps",
    "task_apps",
    "SPLITS",
    "SPLIT_SCHEMES",
    "ENV_ID",
    "VARIANTS",
]

ENV_ID = "evolver/AppWorldApps-v0"
SPLITS = ("train", "dev", "test_normal", "test_challenge")
SPLIT_SCHEMES = ("goal", "scenario", "app")
VARIANTS = 16  # at most this many tasks per template
# tables the apps write on their own as a side effect of reads and writes (notifications, logins)
SIDE_EFFECTS = ("venmo.notifications", "splitwise.notifications", "todoist.notifications")


@dataclass
class TaskSpec:
    """One task before it becomes a ``Task``: what to say, how to solve it, how to check it."""

    instruction: str
    reference: list[str]
    tests: list[dict[str, Any]]
    setup: list[dict[str, Any]] = field(default_factory=list)


@dataclass
class Template:
    """A scenario template: ``build(world, variant)`` gives the variant's task or None (no such variant)."""

    name: str
    apps: tuple[str, ...]
    difficulty: int
    build: Callable[[dict, int], TaskSpec | None]


TEMPLATES: dict[str, Template] = {}


def template(name: str, apps: tuple[str, ...], difficulty: int):
    def deco(fn: Callable[[dict, int], TaskSpec | None]) -> Callable[[dict, int], TaskSpec | None]:
        if name in TEMPLATES:
            raise ValueError(f"duplicate template {name!r}")
        if difficulty not in (1, 2, 3):
            raise ValueError(f"difficulty must be 1, 2 or 3, got {difficulty!r}")
        TEMPLATES[name] = Template(name, apps, difficulty, fn)
        return fn

    return deco


# -- helpers -----------------------------------------------------------------------------------------
def _sup(w: dict) -> dict:
    return w["people"][0]


def _others(w: dict) -> list[dict]:
    return w["people"][1:]


def _name(p: dict) -> str:
    return f"{p['first_name']} {p['last_name']}"


def _pick(items: list, variant: int, salt: str) -> Any | None:
    """The ``variant``-th item of a fixed, template-specific shuffle (None past the end)."""
    order = sorted(range(len(items)), key=lambda i: hashlib.sha256(f"{salt}:{i}".encode()).hexdigest())
    return items[order[variant]] if variant < len(order) else None


def _rng(salt: str, variant: int) -> random.Random:
    return random.Random(int(hashlib.sha256(f"{salt}:{variant}".encode()).hexdigest()[:12], 16))


def login(w: dict, *apps: str) -> str:
    """Reference preamble: read the passwords, log in to ``apps`` as the supervisor (AppWorld's way)."""
    sup = _sup(w)
    lines = ["passwords = {a['account_name']: a['password'] for a in apis.supervisor.show_account_passwords()}"]
    for app in apps:
        user = sup["phone_number"] if app == "phone" else sup["email"]
        lines.append(f"{app}_token = apis.{app}.login(username={user!r}, password=passwords[{app!r}])['access_token']")
    return "\n".join(lines)


def pages(call: str) -> str:
    """Reference code that collects every page of a list API into ``items`` (page_limit 20)."""
    return (
        "items = []\n"
        "page = 0\n"
        "while True:\n"
        f"    batch = {call.replace('PAGE', 'page')}\n"
        "    items.extend(batch)\n"
        "    if len(batch) < 20:\n"
        "        break\n"
        "    page += 1"
    )


def answer(value: Any) -> dict:
    return {"kind": "answer", "expected": value, "requirement": f"the answer is {value!r}", "label": "no_op_fail"}


def added(app: str, table: str, where: dict, count: int = 1) -> dict:
    return {
        "kind": "added",
        "app": app,
        "table": table,
        "where": where,
        "count": count,
        "requirement": f"{count} row(s) added to {app}.{table} with {where}",
        "label": "no_op_fail",
    }


def updated(app: str, table: str, id_: int, fields: dict) -> dict:
    return {
        "kind": "updated",
        "app": app,
        "table": table,
        "id": id_,
        "fields": fields,
        "requirement": f"{app}.{table} row {id_} now has {fields}",
        "label": "no_op_fail",
    }


def removed(app: str, table: str, ids: list[int]) -> dict:
    return {
        "kind": "removed",
        "app": app,
        "table": table,
        "ids": list(ids),
        "requirement": f"{app}.{table} rows {ids} removed",
        "label": "no_op_fail",
    }


def _removed_where(app: str, table: str, where: dict, count: int = 1) -> dict:
    return {
        "kind": "removed_where",
        "app": app,
        "table": table,
        "where": where,
        "count": count,
        "requirement": f"{count} row(s) of {app}.{table} with {where} removed",
        "label": "no_op_fail",
    }


def no_collateral(*tables: str) -> dict:
    """Nothing changed outside ``tables`` (each may gain, change and lose rows) and the side-effect tables."""
    allowed = {t: {"added": True, "updated": "*", "removed": "*"} for t in (*tables, *SIDE_EFFECTS)}
    return {
        "kind": "no_collateral",
        "allowed": allowed,
        "requirement": f"no changes outside {sorted(tables)}",
        "label": "no_op_pass",
    }


def finish(value: Any = None) -> str:
    return "apis.supervisor.complete_task()" if value is None else f"apis.supervisor.complete_task(answer={value})"


def _person(w: dict, email: str) -> dict:
    return next(p for p in w["people"] if p["email"] == email)


# ============================================================================================ phone
@template("phone_contact_phone", ("phone",), 1)
def _(w, v):
    p = _pick(_others(w), v, "phone_contact_phone")
    if p is None:
        return None
    code = (
        f"{login(w, 'phone')}\n"
        f"contact = apis.phone.search_contacts(query={_name(p)!r}, access_token=phone_token)[0]\n"
        f"{finish('contact[' + repr('phone_number') + ']')}"
    )
    return TaskSpec(
        f"What is the phone number of my contact {_name(p)}?", [code], [answer(p["phone_number"]), no_collateral()]
    )


@template("phone_count_relationship", ("phone",), 2)
def _(w, v):
    rels = sorted({p["relationship"] for p in _others(w)})
    rel = _pick(rels, v, "phone_count_relationship")
    if rel is None:
        return None
    n = sum(p["relationship"] == rel for p in _others(w))
    code = (
        f"{login(w, 'phone')}\n"
        + pages(
            f"apis.phone.search_contacts(relationship={rel!r}, page_index=PAGE, page_limit=20, access_token=phone_token)"
        )
        + f"\n{finish('len(items)')}"
    )
    return TaskSpec(f"How many of my phone contacts are marked as {rel}?", [code], [answer(n), no_collateral()])


ALARMS = [
    ("05:45", "Gym"),
    ("07:10", "Medication"),
    ("08:30", "Standup"),
    ("13:00", "Call mom"),
    ("15:20", "Pick up kids"),
    ("17:45", "Water plants"),
    ("19:30", "Cook dinner"),
    ("22:15", "Sleep"),
]


@template("phone_create_alarm", ("phone",), 1)
def _(w, v):
    if v >= len(ALARMS):
        return None
    t, label = ALARMS[v]
    sup_id = _sup(w)["ids"]["phone"]
    code = (
        f"{login(w, 'phone')}\n"
        f"apis.phone.create_alarm(time={t!r}, label={label!r}, access_token=phone_token)\n{finish()}"
    )
    return TaskSpec(
        f"Set a phone alarm at {t} labelled '{label}'.",
        [code],
        [added("phone", "alarms", {"user_id": sup_id, "time": t, "label": label}), no_collateral("phone.alarms")],
    )


@template("phone_disable_alarm", ("phone",), 2)
def _(w, v):
    alarms = [("06:30", "Wake up", 1), ("12:15", "Lunch", 2), ("21:45", "Read", 3)]
    if v >= len(alarms):
        return None
    t, label, aid = alarms[v]
    code = (
        f"{login(w, 'phone')}\n"
        "alarms = apis.phone.show_alarms(page_limit=20, access_token=phone_token)\n"
        f"alarm = [a for a in alarms if a['label'] == {label!r}][0]\n"
        "apis.phone.update_alarm(alarm_id=alarm['alarm_id'], enabled=False, access_token=phone_token)\n" + finish()
    )
    return TaskSpec(
        f"Turn off my '{label}' alarm (the one at {t}).",
        [code],
        [updated("phone", "alarms", aid, {"enabled": 0}), no_collateral("phone.alarms")],
    )


TEXTS = [
    "See you at 7!",
    "I'll bring dessert.",
    "Got the tickets.",
    "Call me back please.",
    "Happy Friday!",
    "Running 10 minutes late.",
    "Thanks for your help.",
    "Let's meet at the cafe.",
]


@template("phone_send_text", ("phone",), 1)
def _(w, v):
    p = _pick(_others(w), v, "phone_send_text")
    if p is None:
        return None
    msg = TEXTS[v % len(TEXTS)]
    code = (
        f"{login(w, 'phone')}\n"
        f"contact = apis.phone.search_contacts(query={_name(p)!r}, access_token=phone_token)[0]\n"
        f"apis.phone.send_text_message(phone_number=contact['phone_number'], message={msg!r}, access_token=phone_token)\n"
        + finish()
    )
    sup_id = _sup(w)["ids"]["phone"]
    return TaskSpec(
        f'Text {_name(p)} on my phone: "{msg}"',
        [code],
        [
            added(
                "phone", "global_text_messages", {"sender_id": sup_id, "receiver_id": p["ids"]["phone"], "message": msg}
            ),
            no_collateral("phone.global_text_messages", "phone.user_text_messages"),
        ],
    )


@template("phone_update_contact_email", ("phone",), 2)
def _(w, v):
    p = _pick(_others(w), v, "phone_update_contact_email")
    if p is None:
        return None
    new = f"{p['first_name'].lower()}.{p['last_name'].lower()}{v + 1}@outlook.com"
    cid = w["people"].index(p)  # contacts were added in people order
    code = (
        f"{login(w, 'phone')}\n"
        f"contact = apis.phone.search_contacts(query={_name(p)!r}, access_token=phone_token)[0]\n"
        f"apis.phone.update_contact(contact_id=contact['contact_id'], email={new!r}, access_token=phone_token)\n"
        + finish()
    )
    return TaskSpec(
        f"{_name(p)} has a new email address, {new}. Update it in my phone contacts.",
        [code],
        [updated("phone", "contacts", cid, {"email": new}), no_collateral("phone.contacts")],
    )


@template("phone_delete_contact", ("phone",), 1)
def _(w, v):
    p = _pick(_others(w), v, "phone_delete_contact")
    if p is None:
        return None
    cid = w["people"].index(p)
    code = (
        f"{login(w, 'phone')}\n"
        f"contact = apis.phone.search_contacts(query={_name(p)!r}, access_token=phone_token)[0]\n"
        "apis.phone.delete_contact(contact_id=contact['contact_id'], access_token=phone_token)\n" + finish()
    )
    return TaskSpec(
        f"Delete {_name(p)} from my phone contacts.",
        [code],
        [removed("phone", "contacts", [cid]), no_collateral("phone.contacts")],
    )


# ========================================================================================== spotify
def _song(w: dict, sid: int) -> dict:
    return next(s for s in w["songs"] if s["id"] == sid)


def _artist(w: dict, aid: int) -> dict:
    return next(a for a in w["artists"] if a["id"] == aid)


@template("spotify_playlist_size", ("spotify",), 1)
def _(w, v):
    pl = _pick(w["playlists"], v, "spotify_playlist_size")
    if pl is None:
        return None
    code = (
        f"{login(w, 'spotify')}\n"
        "playlists = apis.spotify.show_playlist_library(page_limit=20, access_token=spotify_token)\n"
        f"pl = [p for p in playlists if p['title'] == {pl['title']!r}][0]\n"
        "songs = apis.spotify.show_playlist(playlist_id=pl['playlist_id'], access_token=spotify_token)['songs']\n"
        + finish("len(songs)")
    )
    return TaskSpec(
        f"How many songs are in my Spotify playlist '{pl['title']}'?",
        [code],
        [answer(len(pl["song_ids"])), no_collateral()],
    )


@template("spotify_longest_in_playlist", ("spotify",), 2)
def _(w, v):
    pl = _pick(w["playlists"], v, "spotify_longest_in_playlist")
    if pl is None:
        return None
    best = max((_song(w, s) for s in pl["song_ids"]), key=lambda s: (s["duration"], -s["id"]))
    code = (
        f"{login(w, 'spotify')}\n"
        "playlists = apis.spotify.show_playlist_library(page_limit=20, access_token=spotify_token)\n"
        f"pl = [p for p in playlists if p['title'] == {pl['title']!r}][0]\n"
        "songs = apis.spotify.show_playlist(playlist_id=pl['playlist_id'], access_token=spotify_token)['songs']\n"
        "full = [apis.spotify.show_song(song_id=s['id']) for s in songs]\n"
        "best = sorted(full, key=lambda s: (-s['duration'], s['song_id']))[0]\n" + finish("best['title']")
    )
    return TaskSpec(
        f"What is the title of the longest song in my Spotify playlist '{pl['title']}'?",
        [code],
        [answer(best["title"]), no_collateral()],
    )


@template("spotify_follow_artist", ("spotify",), 1)
def _(w, v):
    cands = [a for a in w["artists"] if a["id"] not in w["followed_artist_ids"]]
    a = _pick(cands, v, "spotify_follow_artist")
    if a is None:
        return None
    code = (
        f"{login(w, 'spotify')}\n"
        f"artist = [x for x in apis.spotify.search_artists(query={a['name']!r}) if x['name'] == {a['name']!r}][0]\n"
        "apis.spotify.follow_artist(artist_id=artist['artist_id'], access_token=spotify_token)\n" + finish()
    )
    return TaskSpec(
        f"Follow the artist {a['name']} on Spotify.",
        [code],
        [
            added("spotify", "user_artist_followings", {"user_id": _sup(w)["ids"]["spotify"], "artist_id": a["id"]}),
            no_collateral("spotify.user_artist_followings", "spotify.artists"),
        ],
    )


@template("spotify_album_playlist", ("spotify",), 2)
def _(w, v):
    al = _pick(w["albums"], v, "spotify_album_playlist")
    if al is None:
        return None
    title = f"Best of {al['title'].replace(' Sessions', '')}"
    code = (
        f"{login(w, 'spotify')}\n"
        f"album = [a for a in apis.spotify.search_albums(query={al['title']!r}) if a['title'] == {al['title']!r}][0]\n"
        "songs = apis.spotify.show_album(album_id=album['album_id'])['songs']\n"
        f"pid = apis.spotify.create_playlist(title={title!r}, access_token=spotify_token)['playlist_id']\n"
        "for s in songs:\n"
        "    apis.spotify.add_song_to_playlist(playlist_id=pid, song_id=s['id'], access_token=spotify_token)\n"
        + finish()
    )
    return TaskSpec(
        f"Create a Spotify playlist called '{title}' with every song of the album '{al['title']}'.",
        [code],
        [
            added("spotify", "playlists", {"title": title, "user_id": _sup(w)["ids"]["spotify"]}),
            added("spotify", "playlist_songs", {}, count=len(al["song_ids"])),
            no_collateral("spotify.playlists", "spotify.playlist_songs"),
        ],
    )


@template("spotify_remove_from_playlist", ("spotify",), 2)
def _(w, v):
    pairs = [(pl, sid) for pl in w["playlists"] for sid in pl["song_ids"]]
    pick = _pick(pairs, v, "spotify_remove_from_playlist")
    if pick is None:
        return None
    pl, sid = pick
    s = _song(w, sid)
    code = (
        f"{login(w, 'spotify')}\n"
        "playlists = apis.spotify.show_playlist_library(page_limit=20, access_token=spotify_token)\n"
        f"pl = [p for p in playlists if p['title'] == {pl['title']!r}][0]\n"
        "songs = apis.spotify.show_playlist(playlist_id=pl['playlist_id'], access_token=spotify_token)['songs']\n"
        f"song = [s for s in songs if s['title'] == {s['title']!r}][0]\n"
        "apis.spotify.remove_song_from_playlist(playlist_id=pl['playlist_id'], song_id=song['id'], access_token=spotify_token)\n"
        + finish()
    )
    pos = [(p["id"], x) for p in w["playlists"] for x in p["song_ids"]].index((pl["id"], sid)) + 1
    return TaskSpec(
        f"Remove the song '{s['title']}' from my Spotify playlist '{pl['title']}'.",
        [code],
        [removed("spotify", "playlist_songs", [pos]), no_collateral("spotify.playlist_songs")],
    )


@template("spotify_like_library_by_genre", ("spotify",), 3)
def _(w, v):
    genres = sorted({_song(w, s)["genre"] for s in w["library_song_ids"]})
    g = _pick(genres, v, "spotify_like_library_by_genre")
    if g is None:
        return None
    todo = [s for s in w["library_song_ids"] if _song(w, s)["genre"] == g and s not in w["liked_song_ids"]]
    if not todo:
        return None
    code = (
        f"{login(w, 'spotify')}\n"
        + pages("apis.spotify.show_liked_songs(page_index=PAGE, page_limit=20, access_token=spotify_token)")
        + "\nliked = {s['song_id'] for s in items}\n"
        + pages("apis.spotify.show_song_library(page_index=PAGE, page_limit=20, access_token=spotify_token)")
        + "\n"
        "for s in items:\n"
        f"    if s['song_id'] not in liked and apis.spotify.show_song(song_id=s['song_id'])['genre'] == {g!r}:\n"
        "        apis.spotify.like_song(song_id=s['song_id'], access_token=spotify_token)\n" + finish()
    )
    tests = [added("spotify", "song_likes", {"user_id": _sup(w)["ids"]["spotify"], "song_id": s}) for s in todo]
    return TaskSpec(
        f"Like every {g} song in my Spotify song library that I have not liked yet.",
        [code],
        [*tests, no_collateral("spotify.song_likes", "spotify.songs")],
    )


# ============================================================================================ venmo
NOTES = ["Lunch", "Concert", "Books", "Cab ride", "Flowers", "Coffee beans", "Board game", "Museum tickets"]


@template("venmo_send_money", ("venmo",), 1)
def _(w, v):
    p = _pick(_others(w), v, "venmo_send_money")
    if p is None:
        return None
    amount = round(_rng("venmo_send_money", v).uniform(5, 60), 2)
    note = NOTES[v % len(NOTES)]
    code = (
        f"{login(w, 'venmo')}\n"
        f"apis.venmo.create_transaction(receiver_email={p['email']!r}, amount={amount}, description={note!r}, access_token=venmo_token)\n"
        + finish()
    )
    return TaskSpec(
        f"Send ${amount} to {_name(p)} ({p['email']}) on Venmo with the note '{note}'.",
        [code],
        [
            added(
                "venmo",
                "transactions",
                {
                    "sender_id": _sup(w)["ids"]["venmo"],
                    "receiver_id": p["ids"]["venmo"],
                    "amount": amount,
                    "description": note,
                },
            ),
            no_collateral("venmo.transactions", "venmo.users"),
        ],
    )


@template("venmo_request_money", ("venmo",), 1)
def _(w, v):
    p = _pick(_others(w), v, "venmo_request_money")
    if p is None:
        return None
    amount = round(_rng("venmo_request_money", v).uniform(5, 60), 2)
    note = NOTES[(v + 3) % len(NOTES)]
    code = (
        f"{login(w, 'venmo')}\n"
        f"apis.venmo.create_payment_request(user_email={p['email']!r}, amount={amount}, description={note!r}, access_token=venmo_token)\n"
        + finish()
    )
    return TaskSpec(
        f"Request ${amount} from {_name(p)} ({p['email']}) on Venmo for '{note}'.",
        [code],
        [
            added(
                "venmo",
                "payment_requests",
                {
                    "sender_id": _sup(w)["ids"]["venmo"],
                    "receiver_id": p["ids"]["venmo"],
                    "amount": amount,
                    "description": note,
                },
            ),
            no_collateral("venmo.payment_requests"),
        ],
    )


@template("venmo_approve_request", ("venmo",), 2)
def _(w, v):
    r = _pick(w["payment_requests_in"], v, "venmo_approve_request")
    if r is None:
        return None
    p = _person(w, r["from"])
    code = (
        f"{login(w, 'venmo')}\n"
        "reqs = apis.venmo.show_received_payment_requests(page_limit=20, access_token=venmo_token)\n"
        f"req = [x for x in reqs if x['sender']['email'] == {p['email']!r}][0]\n"
        "apis.venmo.approve_payment_request(payment_request_id=req['payment_request_id'], access_token=venmo_token)\n"
        + finish()
    )
    return TaskSpec(
        f"Approve the Venmo payment request {_name(p)} sent me.",
        [code],
        [
            updated("venmo", "payment_requests", r["id"], {}),
            added(
                "venmo",
                "transactions",
                {"sender_id": _sup(w)["ids"]["venmo"], "receiver_id": p["ids"]["venmo"], "amount": r["amount"]},
            ),
            no_collateral("venmo.payment_requests", "venmo.transactions", "venmo.users"),
        ],
    )


@template("venmo_deny_request", ("venmo",), 2)
def _(w, v):
    r = _pick(w["payment_requests_in"], v, "venmo_deny_request")
    if r is None:
        return None
    p = _person(w, r["from"])
    code = (
        f"{login(w, 'venmo')}\n"
        "reqs = apis.venmo.show_received_payment_requests(page_limit=20, access_token=venmo_token)\n"
        f"req = [x for x in reqs if x['sender']['email'] == {p['email']!r}][0]\n"
        "apis.venmo.deny_payment_request(payment_request_id=req['payment_request_id'], access_token=venmo_token)\n"
        + finish()
    )
    return TaskSpec(
        f"Decline the Venmo payment request from {_name(p)}.",
        [code],
        [updated("venmo", "payment_requests", r["id"], {}), no_collateral("venmo.payment_requests")],
    )


@template("venmo_total_received_from", ("venmo",), 2)
def _(w, v):
    senders = sorted({t["from"] for t in w["transactions"] if t["to"] == _sup(w)["email"]})
    e = _pick(senders, v, "venmo_total_received_from")
    if e is None:
        return None
    total = round(sum(t["amount"] for t in w["transactions"] if t["from"] == e and t["to"] == _sup(w)["email"]), 2)
    code = (
        f"{login(w, 'venmo')}\n"
        + pages(
            f"apis.venmo.show_transactions(user_email={e!r}, direction='received', page_index=PAGE, page_limit=20, access_token=venmo_token)"
        )
        + "\n"
        + finish("round(sum(t['amount'] for t in items), 2)")
    )
    return TaskSpec(
        f"How much money in total have I received on Venmo from {_name(_person(w, e))}?",
        [code],
        [answer(total), no_collateral()],
    )


@template("venmo_add_friend", ("venmo",), 1)
def _(w, v):
    cands = [p for p in _others(w) if p["email"] not in w["venmo_friends"]]
    p = _pick(cands, v, "venmo_add_friend")
    if p is None:
        return None
    code = (
        f"{login(w, 'venmo')}\napis.venmo.add_friend(user_email={p['email']!r}, access_token=venmo_token)\n" + finish()
    )
    return TaskSpec(
        f"Add {_name(p)} ({p['email']}) as a friend on Venmo.",
        [code],
        [
            added("venmo", "friendships", {"user_id": _sup(w)["ids"]["venmo"], "friend_id": p["ids"]["venmo"]}),
            no_collateral("venmo.friendships"),
        ],
    )


# ============================================================================================ gmail
SUBJECTS = ["Lunch next week", "Photos", "Quick update", "Thank you", "Weekend hike", "Recipe", "Reminder", "Good news"]


@template("gmail_send_email", ("gmail",), 1)
def _(w, v):
    p = _pick(_others(w), v, "gmail_send_email")
    if p is None:
        return None
    subject, body = SUBJECTS[v % len(SUBJECTS)], f"Hi {p['first_name']}, talk soon!"
    code = (
        f"{login(w, 'gmail')}\n"
        f"apis.gmail.send_email(email_addresses=[{p['email']!r}], subject={subject!r}, body={body!r}, access_token=gmail_token)\n"
        + finish()
    )
    return TaskSpec(
        f"Email {_name(p)} ({p['email']}) with the subject '{subject}' and the body '{body}'.",
        [code],
        [
            added("gmail", "emails", {"sender_id": _sup(w)["ids"]["gmail"], "subject": subject, "body": body}),
            no_collateral("gmail.emails", "gmail.global_email_threads", "gmail.user_email_threads"),
        ],
    )


@template("gmail_star_thread", ("gmail",), 2)
def _(w, v):
    inbound = [e for e in w["emails"] if e["to"] == _sup(w)["email"]]
    e = _pick(inbound, v, "gmail_star_thread")
    if e is None:
        return None
    p = _person(w, e["from"])
    code = (
        f"{login(w, 'gmail')}\n"
        f"threads = apis.gmail.show_inbox_threads(from_email={p['email']!r}, page_limit=20, access_token=gmail_token)\n"
        f"t = [x for x in threads if x['subject'] == {e['subject']!r}][0]\n"
        "apis.gmail.mark_thread_starred(email_thread_id=t['email_thread_id'], access_token=gmail_token)\n" + finish()
    )
    return TaskSpec(
        f"Star the email thread '{e['subject']}' that {_name(p)} sent me.",
        [code],
        [_starred_test(w), no_collateral("gmail.user_email_threads")],
    )


def _starred_test(w: dict) -> dict:
    # one thread row of the supervisor changes, its ``starred`` flag set
    return {
        "kind": "changed_where",
        "app": "gmail",
        "table": "user_email_threads",
        "where": {"starred": 1},
        "count": 1,
        "requirement": "one email thread starred",
        "label": "no_op_fail",
    }


@template("gmail_count_from", ("gmail",), 1)
def _(w, v):
    senders = sorted({e["from"] for e in w["emails"] if e["to"] == _sup(w)["email"]})
    s = _pick(senders, v, "gmail_count_from")
    if s is None:
        return None
    n = sum(e["from"] == s and e["to"] == _sup(w)["email"] for e in w["emails"])
    code = (
        f"{login(w, 'gmail')}\n"
        f"threads = apis.gmail.show_inbox_threads(from_email={s!r}, page_limit=20, access_token=gmail_token)\n"
        + finish("len(threads)")
    )
    return TaskSpec(
        f"How many email threads from {_name(_person(w, s))} are in my Gmail inbox?",
        [code],
        [answer(n), no_collateral()],
    )


# ====================================================================================== simple_note
ITEMS = ["bananas", "olive oil", "pasta", "onions", "butter", "garlic", "honey", "oranges"]


@template("note_create", ("simple_note",), 1)
def _(w, v):
    titles = [
        "Weekend Plans",
        "Meeting Agenda",
        "Workout Log",
        "Garden Ideas",
        "Trip Budget",
        "Birthday Plans",
        "Study Notes",
        "Home Repairs",
    ]
    if v >= len(titles):
        return None
    title, content = titles[v], f"- item {v + 1}\n- item {v + 2}"
    code = (
        f"{login(w, 'simple_note')}\n"
        f"apis.simple_note.create_note(title={title!r}, content={content!r}, access_token=simple_note_token)\n"
        + finish()
    )
    return TaskSpec(
        f"Create a note titled '{title}' whose content is two lines: '- item {v + 1}' and '- item {v + 2}'.",
        [code],
        [
            added("simple_note", "notes", {"title": title, "content": {"$lines": content.splitlines()}}),
            no_collateral("simple_note.notes"),
        ],
    )


@template("note_append_item", ("simple_note",), 2)
def _(w, v):
    n = _pick(w["notes"], v, "note_append_item")
    if n is None:
        return None
    item = ITEMS[v % len(ITEMS)]
    code = (
        f"{login(w, 'simple_note')}\n"
        f"note = [n for n in apis.simple_note.search_notes(query={n['title']!r}, access_token=simple_note_token) if n['title'] == {n['title']!r}][0]\n"
        f"apis.simple_note.add_content_to_note(note_id=note['note_id'], append_or_prepend='append', added_content='\\n- {item}', access_token=simple_note_token)\n"
        + finish()
    )
    lines = [f"- {x}" for x in n["items"]] + [f"- {item}"]
    return TaskSpec(
        f"Add '{item}' as a new line '- {item}' at the end of my note '{n['title']}'.",
        [code],
        [updated("simple_note", "notes", n["id"], {"content": {"$lines": lines}}), no_collateral("simple_note.notes")],
    )


@template("note_count_items", ("simple_note",), 1)
def _(w, v):
    n = _pick(w["notes"], v, "note_count_items")
    if n is None:
        return None
    code = (
        f"{login(w, 'simple_note')}\n"
        f"note = [n for n in apis.simple_note.search_notes(query={n['title']!r}, access_token=simple_note_token) if n['title'] == {n['title']!r}][0]\n"
        "content = apis.simple_note.show_note(note_id=note['note_id'], access_token=simple_note_token)['content']\n"
        + finish("len([x for x in content.splitlines() if x.strip()])")
    )
    return TaskSpec(
        f"How many items (lines) are in my note '{n['title']}'?", [code], [answer(len(n["items"])), no_collateral()]
    )


@template("note_delete", ("simple_note",), 1)
def _(w, v):
    n = _pick(w["notes"], v, "note_delete")
    if n is None:
        return None
    code = (
        f"{login(w, 'simple_note')}\n"
        f"note = [n for n in apis.simple_note.search_notes(query={n['title']!r}, access_token=simple_note_token) if n['title'] == {n['title']!r}][0]\n"
        "apis.simple_note.delete_note(note_id=note['note_id'], access_token=simple_note_token)\n" + finish()
    )
    return TaskSpec(
        f"Delete my note '{n['title']}'.",
        [code],
        [removed("simple_note", "notes", [n["id"]]), no_collateral("simple_note.notes")],
    )


# ========================================================================================== todoist
def _tasks(w: dict) -> list[tuple[dict, dict]]:
    return [(p, t) for p in w["projects"] for t in p["tasks"]]


def _find_task_code(proj: dict, task: dict) -> str:
    return (
        "projects = apis.todoist.show_projects(page_limit=20, access_token=todoist_token)\n"
        f"project = [p for p in projects if p['name'] == {proj['name']!r}][0]\n"
        "res = apis.todoist.show_tasks(project_id=project['project_id'], page_limit=20, access_token=todoist_token)\n"
        "tasks = res['no_section_tasks'] + [t for sec in res['sections'] for t in sec['tasks']]\n"
        f"task = [t for t in tasks if t['title'] == {task['title']!r}][0]\n"
    )


@template("todoist_complete_task", ("todoist",), 1)
def _(w, v):
    pick = _pick([x for x in _tasks(w) if not x[1]["is_completed"]], v, "todoist_complete_task")
    if pick is None:
        return None
    proj, task = pick
    code = (
        f"{login(w, 'todoist')}\n{_find_task_code(proj, task)}"
        "apis.todoist.update_task(task_id=task['task_id'], is_completed=True, access_token=todoist_token)\n" + finish()
    )
    return TaskSpec(
        f"Mark the task '{task['title']}' in my Todoist project '{proj['name']}' as completed.",
        [code],
        [updated("todoist", "tasks", task["id"], {"is_completed": 1}), no_collateral("todoist.tasks")],
    )


@template("todoist_create_task", ("todoist",), 1)
def _(w, v):
    proj = w["projects"][v % len(w["projects"])] if v < 2 * len(w["projects"]) else None
    if proj is None:
        return None
    title = [
        "Call the plumber",
        "Renew passport",
        "Send invoices",
        "Plan the weekend",
        "Back up laptop",
        "Order printer ink",
    ][v % 6]
    due = f"2023-06-{v + 1:02d}"
    code = (
        f"{login(w, 'todoist')}\n"
        "projects = apis.todoist.show_projects(page_limit=20, access_token=todoist_token)\n"
        f"project = [p for p in projects if p['name'] == {proj['name']!r}][0]\n"
        f"apis.todoist.create_task(project_id=project['project_id'], title={title!r}, due_date={due!r}, access_token=todoist_token)\n"
        + finish()
    )
    return TaskSpec(
        f"Add a task '{title}' due on {due} to my Todoist project '{proj['name']}'.",
        [code],
        [
            added("todoist", "tasks", {"project_id": proj["id"], "title": title, "due_date": {"$contains": due}}),
            no_collateral("todoist.tasks"),
        ],
    )


@template("todoist_count_open", ("todoist",), 2)
def _(w, v):
    combos = [(p, prio) for p in w["projects"] for prio in ("high", "medium", "low")]
    pick = _pick(combos, v, "todoist_count_open")
    if pick is None:
        return None
    proj, prio = pick
    n = sum(t["priority"] == prio and not t["is_completed"] for t in proj["tasks"])
    code = (
        f"{login(w, 'todoist')}\n"
        "projects = apis.todoist.show_projects(page_limit=20, access_token=todoist_token)\n"
        f"project = [p for p in projects if p['name'] == {proj['name']!r}][0]\n"
        f"res = apis.todoist.show_tasks(project_id=project['project_id'], priority={prio!r}, is_completed=False, page_limit=20, access_token=todoist_token)\n"
        "tasks = res['no_section_tasks'] + [t for sec in res['sections'] for t in sec['tasks']]\n"
        + finish("len(tasks)")
    )
    return TaskSpec(
        f"How many unfinished {prio}-priority tasks are in my Todoist project '{proj['name']}'?",
        [code],
        [answer(n), no_collateral()],
    )


@template("todoist_reprioritize", ("todoist",), 2)
def _(w, v):
    pick = _pick([x for x in _tasks(w) if x[1]["priority"] != "high"], v, "todoist_reprioritize")
    if pick is None:
        return None
    proj, task = pick
    code = (
        f"{login(w, 'todoist')}\n{_find_task_code(proj, task)}"
        "apis.todoist.update_task(task_id=task['task_id'], priority='high', access_token=todoist_token)\n" + finish()
    )
    return TaskSpec(
        f"Make the task '{task['title']}' in my Todoist project '{proj['name']}' high priority.",
        [code],
        [updated("todoist", "tasks", task["id"], {"priority": "high"}), no_collateral("todoist.tasks")],
    )


# ====================================================================================== file_system
@template("file_create", ("file_system",), 1)
def _(w, v):
    names = ["todo.txt", "ideas.md", "contacts.csv", "plan.txt", "journal.txt", "links.md", "log.txt", "draft.txt"]
    if v >= len(names):
        return None
    path, content = f"~/documents/{names[v]}", f"Created for entry {v + 1}."
    code = (
        f"{login(w, 'file_system')}\n"
        f"apis.file_system.create_file(file_path={path!r}, content={content!r}, access_token=file_system_token)\n"
        + finish()
    )
    return TaskSpec(
        f"Create a file {path} with the content '{content}'.",
        [code],
        [added("file_system", "files", {"tilde_path": path, "content": content}), no_collateral("file_system.files")],
    )


@template("file_delete", ("file_system",), 1)
def _(w, v):
    path = _pick(sorted(w["files"]), v, "file_delete")
    if path is None:
        return None
    code = (
        f"{login(w, 'file_system')}\n"
        f"apis.file_system.delete_file(file_path={path!r}, access_token=file_system_token)\n" + finish()
    )
    return TaskSpec(
        f"Delete the file {path}.",
        [code],
        [
            {
                "kind": "removed_where",
                "app": "file_system",
                "table": "files",
                "where": {"tilde_path": path},
                "count": 1,
                "requirement": f"{path} removed",
                "label": "no_op_fail",
            },
            no_collateral("file_system.files"),
        ],
    )


@template("file_count_in_folder", ("file_system",), 2)
def _(w, v):
    folders = sorted({p.rsplit("/", 1)[0] for p in w["files"]} | {"~/photos"})
    f = _pick(folders, v, "file_count_in_folder")
    if f is None:
        return None
    n = sum(p.startswith(f + "/") for p in w["files"])
    code = (
        f"{login(w, 'file_system')}\n"
        f"entries = apis.file_system.show_directory(directory_path={f + '/'!r}, entry_type='files', recursive=True, access_token=file_system_token)\n"
        + finish("len(entries)")
    )
    return TaskSpec(
        f"How many files are in my folder {f}, counting its subfolders?", [code], [answer(n), no_collateral()]
    )


@template("file_read_content", ("file_system",), 1)
def _(w, v):
    texts = [p for p in sorted(w["files"]) if p.endswith(".txt")]
    path = _pick(texts, v, "file_read_content")
    if path is None:
        return None
    first = w["files"][path].splitlines()[0]
    code = (
        f"{login(w, 'file_system')}\n"
        f"content = apis.file_system.show_file(file_path={path!r}, access_token=file_system_token)['content']\n"
        + finish("content.splitlines()[0]")
    )
    return TaskSpec(f"What is the first line of my file {path}?", [code], [answer(first), no_collateral()])


# ======================================================================================== splitwise
@template("splitwise_record_expense", ("splitwise",), 2)
def _(w, v):
    g = w["groups"][v % len(w["groups"])] if v < 2 * len(w["groups"]) else None
    if g is None:
        return None
    desc = ["Pizza", "Cleaning supplies", "Firewood", "Snacks"][v % 4]
    amount = round(_rng("splitwise_record_expense", v).uniform(20, 120), 2)
    code = (
        f"{login(w, 'splitwise')}\n"
        "groups = apis.splitwise.show_groups(page_limit=20, access_token=splitwise_token)\n"
        f"group = [g for g in groups if g['name'] == {g['name']!r}][0]\n"
        "members = [m['email'] for m in apis.splitwise.show_group(group_id=group['group_id'], access_token=splitwise_token)['members']]\n"
        f"apis.splitwise.record_expense(description={desc!r}, paid_amount={amount}, payer_email={_sup(w)['email']!r}, "
        f"debtor_emails=[e for e in members if e != {_sup(w)['email']!r}], group_id=group['group_id'], access_token=splitwise_token)\n"
        + finish()
    )
    return TaskSpec(
        f"I paid ${amount} for {desc.lower()} for my Splitwise group '{g['name']}'. Record it, split equally "
        "among all the group's members.",
        [code],
        [
            added(
                "splitwise",
                "expenses",
                {"description": desc, "amount": amount, "group_id": g["id"], "payer_id": _sup(w)["ids"]["splitwise"]},
            ),
            added("splitwise", "expense_shares", {}, count=len(g["members"])),
            no_collateral("splitwise.expenses", "splitwise.expense_shares"),
        ],
    )


@template("splitwise_group_total", ("splitwise",), 2)
def _(w, v):
    g = _pick(w["groups"], v, "splitwise_group_total")
    if g is None:
        return None
    total = round(sum(e["amount"] for e in g["expenses"]), 2)
    code = (
        f"{login(w, 'splitwise')}\n"
        "groups = apis.splitwise.show_groups(page_limit=20, access_token=splitwise_token)\n"
        f"group = [g for g in groups if g['name'] == {g['name']!r}][0]\n"
        + pages(
            "apis.splitwise.show_group_expenses(group_id=group['group_id'], page_index=PAGE, page_limit=20, access_token=splitwise_token)"
        )
        + "\n"
        + finish("round(sum(e['paid_amount'] for e in items), 2)")
    )
    return TaskSpec(
        f"What is the total amount of all expenses in my Splitwise group '{g['name']}'?",
        [code],
        [answer(total), no_collateral()],
    )


@template("splitwise_add_member", ("splitwise",), 1)
def _(w, v):
    # The app compares the new member's user id with the group's membership-row ids (its own quirk), so
    # people whose user id equals one of those row ids cannot be added; they are left out.
    rows = {g["id"]: range(1 + 4 * i, 5 + 4 * i) for i, g in enumerate(w["groups"])}
    pairs = [
        (g, p)
        for g in w["groups"]
        for p in _others(w)
        if p["email"] not in g["members"] and p["ids"]["splitwise"] not in rows[g["id"]]
    ]
    pick = _pick(pairs, v, "splitwise_add_member")
    if pick is None:
        return None
    g, p = pick
    code = (
        f"{login(w, 'splitwise')}\n"
        "groups = apis.splitwise.show_groups(page_limit=20, access_token=splitwise_token)\n"
        f"group = [g for g in groups if g['name'] == {g['name']!r}][0]\n"
        f"apis.splitwise.add_member_to_group(group_id=group['group_id'], user_email={p['email']!r}, access_token=splitwise_token)\n"
        + finish()
    )
    return TaskSpec(
        f"Add {_name(p)} ({p['email']}) to my Splitwise group '{g['name']}'.",
        [code],
        [
            added("splitwise", "group_members", {"group_id": g["id"], "user_id": p["ids"]["splitwise"]}),
            no_collateral("splitwise.group_members"),
        ],
    )


# =========================================================================================== amazon
@template("amazon_add_to_cart", ("amazon",), 1)
def _(w, v):
    prod = _pick([p for p in w["products"] if p["id"] not in w["cart_product_ids"]], v, "amazon_add_to_cart")
    if prod is None:
        return None
    code = (
        f"{login(w, 'amazon')}\n"
        f"product = [p for p in apis.amazon.search_products(query={prod['name']!r}, page_limit=20) if p['name'] == {prod['name']!r}][0]\n"
        "apis.amazon.add_product_to_cart(product_id=product['product_id'], access_token=amazon_token)\n" + finish()
    )
    return TaskSpec(
        f"Add one '{prod['name']}' to my Amazon cart.",
        [code],
        [
            added(
                "amazon", "cart_entries", {"user_id": _sup(w)["ids"]["amazon"], "product_id": prod["id"], "quantity": 1}
            ),
            no_collateral("amazon.cart_entries"),
        ],
    )


@template("amazon_cart_total", ("amazon",), 1)
def _(w, v):
    if v > 0:
        return None
    total = round(sum(p["price"] for p in w["products"] if p["id"] in w["cart_product_ids"]), 2)
    code = f"{login(w, 'amazon')}\ncart = apis.amazon.show_cart(access_token=amazon_token)\n" + finish(
        "round(sum(e['price'] * e['quantity'] for e in cart['cart_items']), 2)"
    )
    return TaskSpec(
        "What is the total price of the items in my Amazon cart, before tax and fees?",
        [code],
        [answer(total), no_collateral()],
    )


@template("amazon_cheapest_of_type", ("amazon",), 2)
def _(w, v):
    types = sorted({p["type"] for p in w["products"]})
    t = _pick(types, v, "amazon_cheapest_of_type")
    if t is None:
        return None
    best = min((p for p in w["products"] if p["type"] == t), key=lambda p: (p["price"], p["id"]))
    if best["id"] in w["cart_product_ids"]:
        return None  # already in the cart: adding it again changes a quantity, another scenario
    code = (
        f"{login(w, 'amazon')}\n"
        + pages(f"apis.amazon.search_products(product_type={t!r}, page_index=PAGE, page_limit=20)")
        + "\n"
        "best = sorted(items, key=lambda p: (p['price'], p['product_id']))[0]\n"
        "apis.amazon.add_product_to_cart(product_id=best['product_id'], access_token=amazon_token)\n" + finish()
    )
    return TaskSpec(
        f"Add the cheapest {t} product on Amazon to my cart.",
        [code],
        [
            added("amazon", "cart_entries", {"user_id": _sup(w)["ids"]["amazon"], "product_id": best["id"]}),
            no_collateral("amazon.cart_entries"),
        ],
    )


@template("amazon_wish_list", ("amazon",), 1)
def _(w, v):
    prod = _pick(w["products"], v, "amazon_wish_list")
    if prod is None:
        return None
    code = (
        f"{login(w, 'amazon')}\n"
        f"product = [p for p in apis.amazon.search_products(query={prod['name']!r}, page_limit=20) if p['name'] == {prod['name']!r}][0]\n"
        "apis.amazon.add_product_to_wish_list(product_id=product['product_id'], access_token=amazon_token)\n" + finish()
    )
    return TaskSpec(
        f"Put '{prod['name']}' on my Amazon wish list.",
        [code],
        [
            added("amazon", "wish_list_entries", {"user_id": _sup(w)["ids"]["amazon"], "product_id": prod["id"]}),
            no_collateral("amazon.wish_list_entries"),
        ],
    )


@template("amazon_order_count_items", ("amazon",), 1)
def _(w, v):
    if v > 0:
        return None
    n = sum(len(o["product_ids"]) for o in w["orders"])
    code = (
        f"{login(w, 'amazon')}\n"
        "orders = apis.amazon.show_orders(page_limit=20, access_token=amazon_token)\n"
        "full = [apis.amazon.show_order(order_id=o['order_id'], access_token=amazon_token) for o in orders]\n"
        + finish("sum(len(o['order_items']) for o in full)")
    )
    return TaskSpec(
        "How many different products have I ordered on Amazon across all my orders?",
        [code],
        [answer(n), no_collateral()],
    )


# ======================================================================================== cross-app
@template("cross_phone_venmo_pay_contact", ("phone", "venmo"), 3)
def _(w, v):
    p = _pick([p for p in _others(w)], v, "cross_phone_venmo_pay_contact")
    if p is None:
        return None
    amount = round(_rng("cross_phone_venmo_pay_contact", v).uniform(10, 50), 2)
    code = (
        f"{login(w, 'phone', 'venmo')}\n"
        + pages("apis.phone.search_contacts(page_index=PAGE, page_limit=20, access_token=phone_token)")
        + "\n"
        f"contact = [c for c in items if c['phone_number'] == {p['phone_number']!r}][0]\n"
        f"apis.venmo.create_transaction(receiver_email=contact['email'], amount={amount}, description='Thanks', access_token=venmo_token)\n"
        + finish()
    )
    return TaskSpec(
        f"Send ${amount} on Venmo, with the note 'Thanks', to the contact in my phone whose number is "
        f"{p['phone_number']}.",
        [code],
        [
            added(
                "venmo",
                "transactions",
                {
                    "sender_id": _sup(w)["ids"]["venmo"],
                    "receiver_id": p["ids"]["venmo"],
                    "amount": amount,
                    "description": "Thanks",
                },
            ),
            no_collateral("venmo.transactions", "venmo.users"),
        ],
    )


@template("cross_note_to_todoist", ("simple_note", "todoist"), 3)
def _(w, v):
    pairs = [(n, pr) for n in w["notes"] for pr in w["projects"]]
    pick = _pick(pairs, v, "cross_note_to_todoist")
    if pick is None:
        return None
    n, proj = pick
    code = (
        f"{login(w, 'simple_note', 'todoist')}\n"
        f"note = [x for x in apis.simple_note.search_notes(query={n['title']!r}, access_token=simple_note_token) if x['title'] == {n['title']!r}][0]\n"
        "content = apis.simple_note.show_note(note_id=note['note_id'], access_token=simple_note_token)['content']\n"
        "projects = apis.todoist.show_projects(page_limit=20, access_token=todoist_token)\n"
        f"project = [p for p in projects if p['name'] == {proj['name']!r}][0]\n"
        "for line in content.splitlines():\n"
        "    if line.strip():\n"
        "        apis.todoist.create_task(project_id=project['project_id'], title=line.strip().lstrip('- ').strip(), access_token=todoist_token)\n"
        + finish()
    )
    tests = [added("todoist", "tasks", {"project_id": proj["id"], "title": item}) for item in n["items"]]
    return TaskSpec(
        f"For every item in my note '{n['title']}', add a task with that item as its title to my Todoist "
        f"project '{proj['name']}'.",
        [code],
        [*tests, no_collateral("todoist.tasks")],
    )


@template("cross_phone_gmail_relation", ("phone", "gmail"), 3)
def _(w, v):
    rels = sorted({p["relationship"] for p in _others(w)})
    rel = _pick(rels, v, "cross_phone_gmail_relation")
    if rel is None:
        return None
    targets = [p for p in _others(w) if p["relationship"] == rel]
    subject = f"Hello from {_sup(w)['first_name']}"
    code = (
        f"{login(w, 'phone', 'gmail')}\n"
        + pages(
            f"apis.phone.search_contacts(relationship={rel!r}, page_index=PAGE, page_limit=20, access_token=phone_token)"
        )
        + "\n"
        "for c in items:\n"
        f"    apis.gmail.send_email(email_addresses=[c['email']], subject={subject!r}, body='Thinking of you!', access_token=gmail_token)\n"
        + finish()
    )
    return TaskSpec(
        f"Send an email with the subject '{subject}' and the body 'Thinking of you!' to each of my phone "
        f"contacts marked as {rel}, one email per person.",
        [code],
        [
            added("gmail", "emails", {"sender_id": _sup(w)["ids"]["gmail"], "subject": subject}, count=len(targets)),
            no_collateral("gmail.emails", "gmail.global_email_threads", "gmail.user_email_threads"),
        ],
    )


@template("cross_spotify_note_playlist", ("spotify", "simple_note"), 3)
def _(w, v):
    pl = _pick(w["playlists"], v, "cross_spotify_note_playlist")
    if pl is None:
        return None
    titles = [_song(w, s)["title"] for s in pl["song_ids"]]
    code = (
        f"{login(w, 'spotify', 'simple_note')}\n"
        "playlists = apis.spotify.show_playlist_library(page_limit=20, access_token=spotify_token)\n"
        f"pl = [p for p in playlists if p['title'] == {pl['title']!r}][0]\n"
        "songs = apis.spotify.show_playlist(playlist_id=pl['playlist_id'], access_token=spotify_token)['songs']\n"
        f"apis.simple_note.create_note(title={'Playlist: ' + pl['title']!r}, content='\\n'.join(s['title'] for s in songs), access_token=simple_note_token)\n"
        + finish()
    )
    return TaskSpec(
        f"Create a note titled 'Playlist: {pl['title']}' listing the titles of the songs in my Spotify playlist "
        f"'{pl['title']}', one per line.",
        [code],
        [
            added("simple_note", "notes", {"title": f"Playlist: {pl['title']}", "content": {"$lines": titles}}),
            no_collateral("simple_note.notes"),
        ],
    )


@template("cross_gmail_phone_subject", ("gmail", "phone"), 3)
def _(w, v):
    inbound = [e for e in w["emails"] if e["to"] == _sup(w)["email"]]
    e = _pick(inbound, v, "cross_gmail_phone_subject")
    if e is None:
        return None
    p = _person(w, e["from"])
    if sum(x["from"] == p["email"] and x["to"] == _sup(w)["email"] for x in w["emails"]) != 1:
        return None
    msg = f"Got your email about {e['subject']}"
    code = (
        f"{login(w, 'gmail', 'phone')}\n"
        f"thread = apis.gmail.show_inbox_threads(from_email={p['email']!r}, page_limit=20, access_token=gmail_token)[0]\n"
        f"contact = apis.phone.search_contacts(query={_name(p)!r}, access_token=phone_token)[0]\n"
        "apis.phone.send_text_message(phone_number=contact['phone_number'], message='Got your email about ' + thread['subject'], access_token=phone_token)\n"
        + finish()
    )
    return TaskSpec(
        f"Text {_name(p)} on my phone: 'Got your email about <subject>', where <subject> is the subject of the "
        "email they sent me.",
        [code],
        [
            added(
                "phone",
                "global_text_messages",
                {"sender_id": _sup(w)["ids"]["phone"], "receiver_id": p["ids"]["phone"], "message": msg},
            ),
            no_collateral("phone.global_text_messages", "phone.user_text_messages"),
        ],
    )


@template("cross_file_to_note", ("file_system", "simple_note"), 2)
def _(w, v):
    path = _pick([p for p in sorted(w["files"]) if p.startswith("~/documents")], v, "cross_file_to_note")
    if path is None:
        return None
    title = path.rsplit("/", 1)[1].rsplit(".", 1)[0]
    code = (
        f"{login(w, 'file_system', 'simple_note')}\n"
        f"content = apis.file_system.show_file(file_path={path!r}, access_token=file_system_token)['content']\n"
        f"apis.simple_note.create_note(title={title!r}, content=content, access_token=simple_note_token)\n" + finish()
    )
    return TaskSpec(
        f"Copy the content of my file {path} into a new note titled '{title}'.",
        [code],
        [
            added("simple_note", "notes", {"title": title, "content": {"$lines": w["files"][path].splitlines()}}),
            no_collateral("simple_note.notes"),
        ],
    )


@template("cross_todoist_gmail_open_tasks", ("todoist", "gmail"), 3)
def _(w, v):
    pairs = [(pr, p) for pr in w["projects"] for p in _others(w)[:3]]
    pick = _pick(pairs, v, "cross_todoist_gmail_open_tasks")
    if pick is None:
        return None
    proj, p = pick
    open_titles = [t["title"] for t in proj["tasks"] if not t["is_completed"]]
    subject = f"Open tasks: {proj['name']}"
    code = (
        f"{login(w, 'todoist', 'gmail')}\n"
        "projects = apis.todoist.show_projects(page_limit=20, access_token=todoist_token)\n"
        f"project = [x for x in projects if x['name'] == {proj['name']!r}][0]\n"
        "res = apis.todoist.show_tasks(project_id=project['project_id'], is_completed=False, page_limit=20, access_token=todoist_token)\n"
        "tasks = res['no_section_tasks'] + [t for sec in res['sections'] for t in sec['tasks']]\n"
        f"apis.gmail.send_email(email_addresses=[{p['email']!r}], subject={subject!r}, body='\\n'.join(t['title'] for t in tasks), access_token=gmail_token)\n"
        + finish()
    )
    return TaskSpec(
        f"Email {_name(p)} ({p['email']}) the titles of my unfinished tasks in my Todoist project '{proj['name']}', "
        f"one per line, with the subject '{subject}'.",
        [code],
        [
            added(
                "gmail",
                "emails",
                {"sender_id": _sup(w)["ids"]["gmail"], "subject": subject, "body": {"$lines": open_titles}},
            ),
            no_collateral("gmail.emails", "gmail.global_email_threads", "gmail.user_email_threads"),
        ],
    )


@template("cross_venmo_phone_requesters", ("venmo", "phone"), 3)
def _(w, v):
    if v > 0:
        return None
    code = (
        f"{login(w, 'venmo', 'phone')}\n"
        "reqs = apis.venmo.show_received_payment_requests(status='pending', page_limit=20, access_token=venmo_token)\n"
        + pages("apis.phone.search_contacts(page_index=PAGE, page_limit=20, access_token=phone_token)")
        + "\n"
        "for r in reqs:\n"
        "    contact = [c for c in items if c['email'] == r['sender']['email']][0]\n"
        "    apis.phone.send_text_message(phone_number=contact['phone_number'], message='I will pay you soon.', access_token=phone_token)\n"
        + finish()
    )
    sup_id = _sup(w)["ids"]["phone"]
    tests = [
        added(
            "phone",
            "global_text_messages",
            {
                "sender_id": sup_id,
                "receiver_id": _person(w, r["from"])["ids"]["phone"],
                "message": "I will pay you soon.",
            },
        )
        for r in w["payment_requests_in"]
    ]
    return TaskSpec(
        "Text everyone who has a pending Venmo payment request to me: 'I will pay you soon.'",
        [code],
        [*tests, no_collateral("phone.global_text_messages", "phone.user_text_messages")],
    )


@template("cross_splitwise_venmo_settle", ("splitwise", "venmo"), 3)
def _(w, v):
    pairs = [(g, e) for g in w["groups"] for e in sorted({x["payer"] for x in g["expenses"]}) if e != _sup(w)["email"]]
    pick = _pick(pairs, v, "cross_splitwise_venmo_settle")
    if pick is None:
        return None
    g, payer = pick
    p = _person(w, payer)
    me = _sup(w)["email"]
    share = {e["payer"]: 0.0 for e in g["expenses"]}
    for e in g["expenses"]:  # an expense is split among the payer's co-members (the debtors), pairwise
        share[e["payer"]] += round(e["amount"] / len(g["members"]), 2)
    owed = round(share.get(p["email"], 0.0) - share.get(me, 0.0), 2)
    if owed <= 0:
        return None
    code = (
        f"{login(w, 'splitwise', 'venmo')}\n"
        "groups = apis.splitwise.show_groups(page_limit=20, access_token=splitwise_token)\n"
        f"group = [g for g in groups if g['name'] == {g['name']!r}][0]\n"
        f"balances = apis.splitwise.show_group_balance(group_id=group['group_id'], email={p['email']!r}, access_token=splitwise_token)\n"
        f"amount = round(sum(b['amount'] for s in balances for b in s['targets_owe_to_source']['breakdown'] if b['email'] == {me!r}), 2)\n"
        f"apis.venmo.create_transaction(receiver_email={p['email']!r}, amount=amount, description={g['name']!r}, access_token=venmo_token)\n"
        + finish()
    )
    return TaskSpec(
        f"I owe {_name(p)} money in our Splitwise group '{g['name']}'. Pay exactly what I owe them there on Venmo, "
        f"with the note '{g['name']}'.",
        [code],
        [
            added(
                "venmo",
                "transactions",
                {
                    "sender_id": _sup(w)["ids"]["venmo"],
                    "receiver_id": p["ids"]["venmo"],
                    "description": g["name"],
                    "amount": owed,
                },
            ),
            no_collateral("venmo.transactions", "venmo.users"),
        ],
    )


@template("cross_amazon_note_cart", ("amazon", "simple_note"), 2)
def _(w, v):
    if v > 0:
        return None
    names = [p["name"] for p in w["products"] if p["id"] in w["cart_product_ids"]]
    code = (
        f"{login(w, 'amazon', 'simple_note')}\n"
        "cart = apis.amazon.show_cart(access_token=amazon_token)\n"
        "apis.simple_note.create_note(title='Cart', content='\\n'.join(e['product_name'] for e in cart['cart_items']), access_token=simple_note_token)\n"
        + finish()
    )
    return TaskSpec(
        "Create a note titled 'Cart' listing the names of the products in my Amazon cart, one per line.",
        [code],
        [
            added("simple_note", "notes", {"title": "Cart", "content": {"$lines": names}}),
            no_collateral("simple_note.notes"),
        ],
    )


# ===================================================================================== more: phone
NEW_PEOPLE = [
    ("Ava", "Moreno", "2125550101"),
    ("Liam", "Chen", "2125550102"),
    ("Zoe", "Patel", "2125550103"),
    ("Noah", "Okafor", "2125550104"),
    ("Mia", "Rossi", "2125550105"),
    ("Eli", "Novak", "2125550106"),
    ("Ivy", "Tanaka", "2125550107"),
    ("Leo", "Silva", "2125550108"),
]


@template("phone_contact_birthday", ("phone",), 1)
def _(w, v):
    p = _pick(_others(w), v, "phone_contact_birthday")
    if p is None:
        return None
    code = (
        f"{login(w, 'phone')}\n"
        f"contact = apis.phone.search_contacts(query={_name(p)!r}, access_token=phone_token)[0]\n"
        + finish("contact['birthday']")
    )
    return TaskSpec(
        f"What is {_name(p)}'s birthday, as saved in my phone contacts (YYYY-MM-DD)?",
        [code],
        [answer(p["birthday"]), no_collateral()],
    )


@template("phone_add_contact", ("phone",), 1)
def _(w, v):
    if v >= len(NEW_PEOPLE):
        return None
    first, last, number = NEW_PEOPLE[v]
    email = f"{first}.{last}@example.com".lower()
    code = (
        f"{login(w, 'phone')}\n"
        f"apis.phone.add_contact(first_name={first!r}, last_name={last!r}, phone_number={number!r}, email={email!r}, access_token=phone_token)\n"
        + finish()
    )
    return TaskSpec(
        f"Save {first} {last} (phone {number}, email {email}) as a new contact in my phone.",
        [code],
        [
            added(
                "phone",
                "contacts",
                {"user_id": _sup(w)["ids"]["phone"], "first_name": first, "last_name": last, "phone_number": number},
            ),
            no_collateral("phone.contacts"),
        ],
    )


@template("phone_move_alarm", ("phone",), 2)
def _(w, v):
    alarms = [("06:30", "Wake up", 1), ("12:15", "Lunch", 2), ("21:45", "Read", 3)]
    times = ["07:00", "06:45", "12:30", "13:00", "22:00", "21:30"]
    if v >= 2 * len(alarms):
        return None
    t, label, aid = alarms[v % 3]
    new = times[v]
    code = (
        f"{login(w, 'phone')}\n"
        "alarms = apis.phone.show_alarms(page_limit=20, access_token=phone_token)\n"
        f"alarm = [a for a in alarms if a['label'] == {label!r}][0]\n"
        f"apis.phone.update_alarm(alarm_id=alarm['alarm_id'], time={new!r}, access_token=phone_token)\n" + finish()
    )
    return TaskSpec(
        f"Move my '{label}' alarm from {t} to {new}.",
        [code],
        [updated("phone", "alarms", aid, {"time": new}), no_collateral("phone.alarms")],
    )


# =================================================================================== more: spotify
@template("spotify_album_duration", ("spotify",), 2)
def _(w, v):
    al = _pick(w["albums"], v, "spotify_album_duration")
    if al is None:
        return None
    total = sum(_song(w, s)["duration"] for s in al["song_ids"])
    code = (
        f"{login(w, 'spotify')}\n"
        f"album = [a for a in apis.spotify.search_albums(query={al['title']!r}) if a['title'] == {al['title']!r}][0]\n"
        "songs = apis.spotify.show_album(album_id=album['album_id'])['songs']\n"
        + finish("sum(apis.spotify.show_song(song_id=s['id'])['duration'] for s in songs)")
    )
    return TaskSpec(
        f"How long, in seconds, is the album '{al['title']}' on Spotify in total?",
        [code],
        [answer(total), no_collateral()],
    )


@template("spotify_song_artist", ("spotify",), 1)
def _(w, v):
    s = _pick(w["songs"], v, "spotify_song_artist")
    if s is None:
        return None
    code = (
        f"{login(w, 'spotify')}\n"
        f"song = [x for x in apis.spotify.search_songs(query={s['title']!r}, page_limit=20) if x['title'] == {s['title']!r}][0]\n"
        + finish("song['artists'][0]['name']")
    )
    return TaskSpec(
        f"Who is the artist of the song '{s['title']}' on Spotify?",
        [code],
        [answer(_artist(w, s["artist_id"])["name"]), no_collateral()],
    )


@template("spotify_add_to_library", ("spotify",), 1)
def _(w, v):
    s = _pick([x for x in w["songs"] if x["id"] not in w["library_song_ids"]], v, "spotify_add_to_library")
    if s is None:
        return None
    code = (
        f"{login(w, 'spotify')}\n"
        f"song = [x for x in apis.spotify.search_songs(query={s['title']!r}, page_limit=20) if x['title'] == {s['title']!r}][0]\n"
        "apis.spotify.add_song_to_library(song_id=song['song_id'], access_token=spotify_token)\n" + finish()
    )
    return TaskSpec(
        f"Add the song '{s['title']}' to my Spotify song library.",
        [code],
        [
            added("spotify", "user_library_songs", {"user_id": _sup(w)["ids"]["spotify"], "song_id": s["id"]}),
            no_collateral("spotify.user_library_songs"),
        ],
    )


@template("spotify_unlike_song", ("spotify",), 1)
def _(w, v):
    sid = _pick(w["liked_song_ids"], v, "spotify_unlike_song")
    if sid is None:
        return None
    s = _song(w, sid)
    code = (
        f"{login(w, 'spotify')}\n"
        f"song = [x for x in apis.spotify.search_songs(query={s['title']!r}, page_limit=20) if x['title'] == {s['title']!r}][0]\n"
        "apis.spotify.unlike_song(song_id=song['song_id'], access_token=spotify_token)\n" + finish()
    )
    return TaskSpec(
        f"Unlike the song '{s['title']}' on Spotify.",
        [code],
        [
            _removed_where("spotify", "song_likes", {"song_id": sid}),
            no_collateral("spotify.song_likes", "spotify.songs"),
        ],
    )


@template("spotify_unfollow_artist", ("spotify",), 1)
def _(w, v):
    aid = _pick(w["followed_artist_ids"], v, "spotify_unfollow_artist")
    if aid is None:
        return None
    a = _artist(w, aid)
    code = (
        f"{login(w, 'spotify')}\n"
        f"artist = [x for x in apis.spotify.search_artists(query={a['name']!r}) if x['name'] == {a['name']!r}][0]\n"
        "apis.spotify.unfollow_artist(artist_id=artist['artist_id'], access_token=spotify_token)\n" + finish()
    )
    return TaskSpec(
        f"Stop following {a['name']} on Spotify.",
        [code],
        [
            _removed_where("spotify", "user_artist_followings", {"artist_id": aid}),
            no_collateral("spotify.user_artist_followings", "spotify.artists"),
        ],
    )


@template("spotify_rename_playlist", ("spotify",), 1)
def _(w, v):
    news = ["Sunrise Mix", "Focus", "Long Drive", "Weekend Vibes", "Wind Down", "Gym Hits"]
    if v >= 2 * len(w["playlists"]):
        return None
    pl = w["playlists"][v % len(w["playlists"])]
    new = news[v % len(news)]
    code = (
        f"{login(w, 'spotify')}\n"
        "playlists = apis.spotify.show_playlist_library(page_limit=20, access_token=spotify_token)\n"
        f"pl = [p for p in playlists if p['title'] == {pl['title']!r}][0]\n"
        f"apis.spotify.update_playlist(playlist_id=pl['playlist_id'], title={new!r}, access_token=spotify_token)\n"
        + finish()
    )
    return TaskSpec(
        f"Rename my Spotify playlist '{pl['title']}' to '{new}'.",
        [code],
        [updated("spotify", "playlists", pl["id"], {"title": new}), no_collateral("spotify.playlists")],
    )


@template("spotify_most_played_on_album", ("spotify",), 2)
def _(w, v):
    al = _pick(w["albums"], v, "spotify_most_played_on_album")
    if al is None:
        return None
    best = max((_song(w, s) for s in al["song_ids"]), key=lambda s: (s["play_count"], -s["id"]))
    code = (
        f"{login(w, 'spotify')}\n"
        f"album = [a for a in apis.spotify.search_albums(query={al['title']!r}) if a['title'] == {al['title']!r}][0]\n"
        "songs = [apis.spotify.show_song(song_id=s['id']) for s in apis.spotify.show_album(album_id=album['album_id'])['songs']]\n"
        "best = sorted(songs, key=lambda s: (-s['play_count'], s['song_id']))[0]\n" + finish("best['title']")
    )
    return TaskSpec(
        f"Which song on the Spotify album '{al['title']}' has been played the most? Give its title.",
        [code],
        [answer(best["title"]), no_collateral()],
    )


@template("spotify_review_song", ("spotify",), 2)
def _(w, v):
    sid = _pick(w["liked_song_ids"], v, "spotify_review_song")
    if sid is None:
        return None
    s, rating = _song(w, sid), 5 - v % 3
    code = (
        f"{login(w, 'spotify')}\n"
        f"song = [x for x in apis.spotify.search_songs(query={s['title']!r}, page_limit=20) if x['title'] == {s['title']!r}][0]\n"
        f"apis.spotify.review_song(song_id=song['song_id'], rating={rating}, access_token=spotify_token)\n" + finish()
    )
    return TaskSpec(
        f"Give the song '{s['title']}' a {rating}-star review on Spotify.",
        [code],
        [
            added("spotify", "song_reviews", {"user_id": _sup(w)["ids"]["spotify"], "song_id": sid, "rating": rating}),
            no_collateral("spotify.song_reviews", "spotify.songs"),
        ],
    )


# ===================================================================================== more: venmo
@template("venmo_remove_friend", ("venmo",), 1)
def _(w, v):
    e = _pick(w["venmo_friends"], v, "venmo_remove_friend")
    if e is None:
        return None
    p = _person(w, e)
    code = f"{login(w, 'venmo')}\napis.venmo.remove_friend(user_email={e!r}, access_token=venmo_token)\n" + finish()
    return TaskSpec(
        f"Remove {_name(p)} from my Venmo friends.",
        [code],
        [
            _removed_where(
                "venmo", "friendships", {"user_id": _sup(w)["ids"]["venmo"], "friend_id": p["ids"]["venmo"]}
            ),
            no_collateral("venmo.friendships"),
        ],
    )


def _txn_id(w: dict, t: dict) -> int:
    return w["transactions"].index(t) + 1


@template("venmo_like_transaction", ("venmo",), 2)
def _(w, v):
    t = _pick(w["transactions"], v, "venmo_like_transaction")
    if t is None:
        return None
    other = t["from"] if t["to"] == _sup(w)["email"] else t["to"]
    direction = "received from" if t["to"] == _sup(w)["email"] else "sent to"
    code = (
        f"{login(w, 'venmo')}\n"
        f"txns = apis.venmo.show_transactions(user_email={other!r}, page_limit=20, access_token=venmo_token)\n"
        f"txn = [x for x in txns if abs(x['amount'] - {t['amount']}) < 0.005][0]\n"
        "apis.venmo.like_transaction(transaction_id=txn['transaction_id'], access_token=venmo_token)\n" + finish()
    )
    return TaskSpec(
        f"Like the ${t['amount']} Venmo payment I {direction} {_name(_person(w, other))}.",
        [code],
        [
            added("venmo", "transaction_likes", {"transaction_id": _txn_id(w, t), "user_id": _sup(w)["ids"]["venmo"]}),
            no_collateral("venmo.transaction_likes", "venmo.transactions"),
        ],
    )


@template("venmo_comment_transaction", ("venmo",), 2)
def _(w, v):
    t = _pick(w["transactions"], v, "venmo_comment_transaction")
    if t is None:
        return None
    other = t["from"] if t["to"] == _sup(w)["email"] else t["to"]
    comment = ["Thanks!", "Got it", "Cheers", "Appreciate it"][v % 4]
    code = (
        f"{login(w, 'venmo')}\n"
        f"txns = apis.venmo.show_transactions(user_email={other!r}, page_limit=20, access_token=venmo_token)\n"
        f"txn = [x for x in txns if abs(x['amount'] - {t['amount']}) < 0.005][0]\n"
        f"apis.venmo.create_transaction_comment(transaction_id=txn['transaction_id'], comment={comment!r}, access_token=venmo_token)\n"
        + finish()
    )
    return TaskSpec(
        f"Comment '{comment}' on my ${t['amount']} Venmo transaction with {_name(_person(w, other))}.",
        [code],
        [
            added("venmo", "transaction_comments", {"transaction_id": _txn_id(w, t), "comment": comment}),
            no_collateral("venmo.transaction_comments"),
        ],
    )


@template("venmo_sent_count", ("venmo",), 1)
def _(w, v):
    if v > 0:
        return None
    n = sum(t["from"] == _sup(w)["email"] for t in w["transactions"])
    code = (
        f"{login(w, 'venmo')}\n"
        + pages(
            "apis.venmo.show_transactions(direction='sent', page_index=PAGE, page_limit=20, access_token=venmo_token)"
        )
        + "\n"
        + finish("len(items)")
    )
    return TaskSpec("How many payments have I sent on Venmo?", [code], [answer(n), no_collateral()])


# ===================================================================================== more: gmail
def _inbound(w: dict) -> list[dict]:
    return [e for e in w["emails"] if e["to"] == _sup(w)["email"]]


def _thread_code(p: dict, subject: str) -> str:
    return (
        f"threads = apis.gmail.show_inbox_threads(from_email={p['email']!r}, page_limit=20, access_token=gmail_token)\n"
        f"t = [x for x in threads if x['subject'] == {subject!r}][0]\n"
    )


@template("gmail_reply", ("gmail",), 2)
def _(w, v):
    e = _pick(_inbound(w), v, "gmail_reply")
    if e is None:
        return None
    p, body = _person(w, e["from"]), ["Sounds good!", "Thanks, will do.", "Let me check and get back to you."][v % 3]
    code = (
        f"{login(w, 'gmail')}\n{_thread_code(p, e['subject'])}"
        "thread = apis.gmail.show_thread(email_thread_id=t['email_thread_id'], access_token=gmail_token)\n"
        f"apis.gmail.reply_to_email(email_thread_id=t['email_thread_id'], email_id=thread['emails'][-1]['email_id'], body={body!r}, access_token=gmail_token)\n"
        + finish()
    )
    return TaskSpec(
        f"Reply '{body}' to the email '{e['subject']}' from {_name(p)}.",
        [code],
        [
            added("gmail", "emails", {"sender_id": _sup(w)["ids"]["gmail"], "body": body}),
            no_collateral("gmail.emails", "gmail.global_email_threads", "gmail.user_email_threads"),
        ],
    )


@template("gmail_archive_thread", ("gmail",), 2)
def _(w, v):
    e = _pick(_inbound(w), v, "gmail_archive_thread")
    if e is None:
        return None
    p = _person(w, e["from"])
    code = (
        f"{login(w, 'gmail')}\n{_thread_code(p, e['subject'])}"
        "apis.gmail.mark_thread_archived(email_thread_id=t['email_thread_id'], access_token=gmail_token)\n" + finish()
    )
    return TaskSpec(
        f"Archive the email thread '{e['subject']}' from {_name(p)}.",
        [code],
        [
            {
                "kind": "changed_where",
                "app": "gmail",
                "table": "user_email_threads",
                "where": {"archived": 1},
                "count": 1,
                "requirement": "one thread archived",
                "label": "no_op_fail",
            },
            no_collateral("gmail.user_email_threads"),
        ],
    )


@template("gmail_label_thread", ("gmail",), 2)
def _(w, v):
    e = _pick(_inbound(w), v, "gmail_label_thread")
    if e is None:
        return None
    p, label = _person(w, e["from"]), ["Work", "Family", "Later", "Important"][v % 4]
    code = (
        f"{login(w, 'gmail')}\n{_thread_code(p, e['subject'])}"
        f"apis.gmail.label_thread(email_thread_id=t['email_thread_id'], label={label!r}, access_token=gmail_token)\n"
        + finish()
    )
    return TaskSpec(
        f"Label the email thread '{e['subject']}' from {_name(p)} as '{label}'.",
        [code],
        [
            {
                "kind": "changed_where",
                "app": "gmail",
                "table": "user_email_threads",
                "where": {"label": label},
                "count": 1,
                "requirement": f"one thread labelled {label}",
                "label": "no_op_fail",
            },
            no_collateral("gmail.user_email_threads"),
        ],
    )


# =============================================================================== more: simple_note
def _note_code(n: dict) -> str:
    return (
        f"note = [x for x in apis.simple_note.search_notes(query={n['title']!r}, access_token=simple_note_token) "
        f"if x['title'] == {n['title']!r}][0]\n"
    )


@template("note_rename", ("simple_note",), 1)
def _(w, v):
    n = _pick(w["notes"], v, "note_rename")
    if n is None:
        return None
    new = f"{n['title']} (2023)"
    code = (
        f"{login(w, 'simple_note')}\n{_note_code(n)}"
        f"apis.simple_note.update_note(note_id=note['note_id'], title={new!r}, access_token=simple_note_token)\n"
        + finish()
    )
    return TaskSpec(
        f"Rename my note '{n['title']}' to '{new}'.",
        [code],
        [updated("simple_note", "notes", n["id"], {"title": new}), no_collateral("simple_note.notes")],
    )


@template("note_replace_item", ("simple_note",), 2)
def _(w, v):
    n = _pick(w["notes"], v, "note_replace_item")
    if n is None:
        return None
    old, new = n["items"][v % len(n["items"])], ITEMS[(v + 2) % len(ITEMS)]
    code = (
        f"{login(w, 'simple_note')}\n{_note_code(n)}"
        "content = apis.simple_note.show_note(note_id=note['note_id'], access_token=simple_note_token)['content']\n"
        f"content = content.replace('- ' + {old!r}, '- ' + {new!r})\n"
        "apis.simple_note.update_note(note_id=note['note_id'], content=content, access_token=simple_note_token)\n"
        + finish()
    )
    lines = [f"- {new if x == old else x}" for x in n["items"]]
    return TaskSpec(
        f"In my note '{n['title']}', replace the item '{old}' with '{new}'.",
        [code],
        [updated("simple_note", "notes", n["id"], {"content": {"$lines": lines}}), no_collateral("simple_note.notes")],
    )


@template("note_has_item", ("simple_note",), 1)
def _(w, v):
    pairs = [(n, x) for n in w["notes"] for x in NOTE_POOLS.get(n["title"], [])]
    pick = _pick(pairs, v, "note_has_item")
    if pick is None:
        return None
    n, item = pick
    code = (
        f"{login(w, 'simple_note')}\n{_note_code(n)}"
        "content = apis.simple_note.show_note(note_id=note['note_id'], access_token=simple_note_token)['content']\n"
        f"items = [x.strip().lstrip('- ').strip().lower() for x in content.splitlines() if x.strip()]\n"
        + finish(f"'yes' if {item.lower()!r} in items else 'no'")
    )
    return TaskSpec(
        f"Is '{item}' on my note '{n['title']}'? Answer yes or no.",
        [code],
        [answer("yes" if item in n["items"] else "no"), no_collateral()],
    )


NOTE_POOLS = {
    "Grocery List": ["milk", "eggs", "bread", "apples", "coffee", "rice"],
    "Books to Read": ["The Hobbit", "Dune", "Educated", "Sapiens"],
}


# =================================================================================== more: todoist
@template("todoist_delete_task", ("todoist",), 1)
def _(w, v):
    pick = _pick(_tasks(w), v, "todoist_delete_task")
    if pick is None:
        return None
    proj, task = pick
    code = (
        f"{login(w, 'todoist')}\n{_find_task_code(proj, task)}"
        "apis.todoist.delete_task(task_id=task['task_id'], access_token=todoist_token)\n" + finish()
    )
    return TaskSpec(
        f"Delete the task '{task['title']}' from my Todoist project '{proj['name']}'.",
        [code],
        [removed("todoist", "tasks", [task["id"]]), no_collateral("todoist.tasks")],
    )


@template("todoist_postpone_task", ("todoist",), 2)
def _(w, v):
    pick = _pick([x for x in _tasks(w) if not x[1]["is_completed"]], v, "todoist_postpone_task")
    if pick is None:
        return None
    proj, task = pick
    new = f"2023-07-{v + 1:02d}"
    code = (
        f"{login(w, 'todoist')}\n{_find_task_code(proj, task)}"
        f"apis.todoist.update_task(task_id=task['task_id'], due_date={new!r}, access_token=todoist_token)\n" + finish()
    )
    return TaskSpec(
        f"Move the due date of '{task['title']}' in my Todoist project '{proj['name']}' to {new}.",
        [code],
        [updated("todoist", "tasks", task["id"], {"due_date": {"$contains": new}}), no_collateral("todoist.tasks")],
    )


@template("todoist_create_project", ("todoist",), 1)
def _(w, v):
    names = ["Garden", "Taxes 2023", "Wedding", "Moving Out", "Reading Club", "Side Project", "Holiday", "Car"]
    if v >= len(names):
        return None
    code = (
        f"{login(w, 'todoist')}\n"
        f"apis.todoist.create_project(name={names[v]!r}, access_token=todoist_token)\n" + finish()
    )
    return TaskSpec(
        f"Create a Todoist project called '{names[v]}'.",
        [code],
        [
            added("todoist", "projects", {"name": names[v]}),
            no_collateral("todoist.projects", "todoist.project_collaborator_links"),
        ],
    )


@template("todoist_add_subtask", ("todoist",), 2)
def _(w, v):
    pick = _pick([x for x in _tasks(w) if not x[1]["is_completed"]], v, "todoist_add_subtask")
    if pick is None:
        return None
    proj, task = pick
    sub = ["Make a list", "Ask for quotes", "Set a reminder", "Buy supplies"][v % 4]
    code = (
        f"{login(w, 'todoist')}\n{_find_task_code(proj, task)}"
        f"apis.todoist.create_sub_task(task_id=task['task_id'], title={sub!r}, access_token=todoist_token)\n" + finish()
    )
    return TaskSpec(
        f"Add a subtask '{sub}' to the task '{task['title']}' in my Todoist project '{proj['name']}'.",
        [code],
        [added("todoist", "sub_tasks", {"task_id": task["id"], "title": sub}), no_collateral("todoist.sub_tasks")],
    )


@template("todoist_overdue_count", ("todoist",), 2)
def _(w, v):
    proj = _pick(w["projects"], v, "todoist_overdue_count")
    if proj is None:
        return None
    today = w["now"][:10]
    n = sum(t["due_date"] < today and not t["is_completed"] for t in proj["tasks"])
    code = (
        f"{login(w, 'todoist')}\n"
        "projects = apis.todoist.show_projects(page_limit=20, access_token=todoist_token)\n"
        f"project = [p for p in projects if p['name'] == {proj['name']!r}][0]\n"
        "res = apis.todoist.show_tasks(project_id=project['project_id'], is_completed=False, page_limit=20, access_token=todoist_token)\n"
        "tasks = res['no_section_tasks'] + [t for sec in res['sections'] for t in sec['tasks']]\n"
        "from datetime import datetime\n"
        "now = apis.phone.get_current_date_and_time()['date']\n"
        "today = datetime.strptime(now, '%A, %B %d, %Y').strftime('%Y-%m-%d')\n"
        + finish("len([t for t in tasks if t['due_date'] and t['due_date'][:10] < today])")
    )
    return TaskSpec(
        f"How many unfinished tasks in my Todoist project '{proj['name']}' are past their due date?",
        [code],
        [answer(n), no_collateral()],
    )


@template("todoist_completed_total", ("todoist",), 2)
def _(w, v):
    if v > 0:
        return None
    n = sum(t["is_completed"] for _, t in _tasks(w))
    code = (
        f"{login(w, 'todoist')}\n"
        "projects = apis.todoist.show_projects(page_limit=20, access_token=todoist_token)\n"
        "count = 0\n"
        "for p in projects:\n"
        "    res = apis.todoist.show_tasks(project_id=p['project_id'], is_completed=True, page_limit=20, access_token=todoist_token)\n"
        "    count += len(res['no_section_tasks']) + sum(len(s['tasks']) for s in res['sections'])\n" + finish("count")
    )
    return TaskSpec(
        "How many completed tasks do I have across all my Todoist projects?", [code], [answer(n), no_collateral()]
    )


# =============================================================================== more: file_system
@template("file_copy", ("file_system",), 1)
def _(w, v):
    src = _pick(sorted(w["files"]), v, "file_copy")
    if src is None:
        return None
    dst = "~/backup/" + src.rsplit("/", 1)[1]
    code = (
        f"{login(w, 'file_system')}\n"
        "apis.file_system.create_directory(directory_path='~/backup', access_token=file_system_token)\n"
        f"apis.file_system.copy_file(source_file_path={src!r}, destination_file_path={dst!r}, access_token=file_system_token)\n"
        + finish()
    )
    return TaskSpec(
        f"Make a folder ~/backup and copy {src} into it, keeping the file name.",
        [code],
        [
            added("file_system", "files", {"tilde_path": dst, "content": w["files"][src]}),
            added("file_system", "directories", {"tilde_path": "~/backup/"}),
            no_collateral("file_system.files", "file_system.directories"),
        ],
    )


@template("file_append_line", ("file_system",), 2)
def _(w, v):
    path = _pick([p for p in sorted(w["files"]) if p.endswith((".txt", ".csv"))], v, "file_append_line")
    if path is None:
        return None
    line = ["Reviewed.", "TODO: update", "April,1100", "Last checked in May."][v % 4]
    code = (
        f"{login(w, 'file_system')}\n"
        f"content = apis.file_system.show_file(file_path={path!r}, access_token=file_system_token)['content']\n"
        f"apis.file_system.update_file(file_path={path!r}, content=content + '\\n' + {line!r}, access_token=file_system_token)\n"
        + finish()
    )
    lines = [*w["files"][path].splitlines(), line]
    return TaskSpec(
        f"Add the line '{line}' at the end of my file {path}.",
        [code],
        [
            {
                "kind": "changed_where",
                "app": "file_system",
                "table": "files",
                "where": {"tilde_path": path, "content": {"$lines": lines}},
                "count": 1,
                "requirement": f"{path} ends with the new line",
                "label": "no_op_fail",
            },
            no_collateral("file_system.files"),
        ],
    )


@template("file_invoice_total", ("file_system",), 3)
def _(w, v):
    if v > 0:
        return None
    total = round(sum(float(c.rsplit(" ", 1)[1]) for p, c in w["files"].items() if "invoice" in p), 2)
    code = (
        f"{login(w, 'file_system')}\n"
        "paths = apis.file_system.show_directory(directory_path='~/downloads/', entry_type='files', access_token=file_system_token)\n"
        "total = 0\n"
        "for path in paths:\n"
        "    if 'invoice' in path:\n"
        "        content = apis.file_system.show_file(file_path=path, access_token=file_system_token)['content']\n"
        "        total += float(content.split()[-1])\n" + finish("round(total, 2)")
    )
    return TaskSpec(
        "What is the sum of the totals of all the invoices in my ~/downloads folder?",
        [code],
        [answer(total), no_collateral()],
    )


# ================================================================================= more: splitwise
@template("splitwise_create_group", ("splitwise",), 2)
def _(w, v):
    names = ["Book Club", "Road Trip", "Office Lunch", "Game Night", "Camping", "Family Dinner"]
    if v >= len(names):
        return None
    members = [p for p in _others(w)][v : v + 2]
    code = (
        f"{login(w, 'splitwise')}\n"
        f"apis.splitwise.create_group(name={names[v]!r}, member_emails={[p['email'] for p in members]!r}, access_token=splitwise_token)\n"
        + finish()
    )
    return TaskSpec(
        f"Create a Splitwise group '{names[v]}' with {_name(members[0])} ({members[0]['email']}) and "
        f"{_name(members[1])} ({members[1]['email']}).",
        [code],
        [
            added("splitwise", "groups", {"name": names[v], "user_id": _sup(w)["ids"]["splitwise"]}),
            added("splitwise", "group_members", {}, count=3),
            no_collateral("splitwise.groups", "splitwise.group_members"),
        ],
    )


@template("splitwise_rename_group", ("splitwise",), 1)
def _(w, v):
    news = ["Flatmates", "Mountain Weekend", "Home", "Alps 2023"]
    if v >= 2 * len(w["groups"]):
        return None
    g, new = w["groups"][v % len(w["groups"])], news[v % len(news)]
    code = (
        f"{login(w, 'splitwise')}\n"
        "groups = apis.splitwise.show_groups(page_limit=20, access_token=splitwise_token)\n"
        f"group = [g for g in groups if g['name'] == {g['name']!r}][0]\n"
        f"apis.splitwise.update_group(group_id=group['group_id'], name={new!r}, access_token=splitwise_token)\n"
        + finish()
    )
    return TaskSpec(
        f"Rename my Splitwise group '{g['name']}' to '{new}'.",
        [code],
        [updated("splitwise", "groups", g["id"], {"name": new}), no_collateral("splitwise.groups")],
    )


@template("splitwise_paid_by_count", ("splitwise",), 2)
def _(w, v):
    pairs = [(g, e) for g in w["groups"] for e in [_sup(w)["email"], *g["members"]]]
    pick = _pick(pairs, v, "splitwise_paid_by_count")
    if pick is None:
        return None
    g, e = pick
    n = sum(x["payer"] == e for x in g["expenses"])
    who = "I" if e == _sup(w)["email"] else _name(_person(w, e))
    code = (
        f"{login(w, 'splitwise')}\n"
        "groups = apis.splitwise.show_groups(page_limit=20, access_token=splitwise_token)\n"
        f"group = [g for g in groups if g['name'] == {g['name']!r}][0]\n"
        + pages(
            "apis.splitwise.show_group_expenses(group_id=group['group_id'], page_index=PAGE, page_limit=20, access_token=splitwise_token)"
        )
        + "\n"
        + finish(f"len([x for x in items if x['payer']['email'] == {e!r}])")
    )
    return TaskSpec(
        f"How many of the expenses in my Splitwise group '{g['name']}' did {who} pay for?",
        [code],
        [answer(n), no_collateral()],
    )


# ==================================================================================== more: amazon
@template("amazon_remove_from_cart", ("amazon",), 1)
def _(w, v):
    pid = _pick(w["cart_product_ids"], v, "amazon_remove_from_cart")
    if pid is None:
        return None
    prod = next(p for p in w["products"] if p["id"] == pid)
    code = (
        f"{login(w, 'amazon')}\n"
        f"apis.amazon.delete_product_from_cart(product_id={pid}, access_token=amazon_token)\n" + finish()
    )
    return TaskSpec(
        f"Take '{prod['name']}' (product id {pid}) out of my Amazon cart.",
        [code],
        [_removed_where("amazon", "cart_entries", {"product_id": pid}), no_collateral("amazon.cart_entries")],
    )


@template("amazon_product_price", ("amazon",), 1)
def _(w, v):
    prod = _pick(w["products"], v, "amazon_product_price")
    if prod is None:
        return None
    code = (
        f"{login(w, 'amazon')}\n"
        f"product = [p for p in apis.amazon.search_products(query={prod['name']!r}, page_limit=20) if p['name'] == {prod['name']!r}][0]\n"
        + finish("product['price']")
    )
    return TaskSpec(f"How much does '{prod['name']}' cost on Amazon?", [code], [answer(prod["price"]), no_collateral()])


@template("amazon_review_ordered", ("amazon",), 2)
def _(w, v):
    pids = [pid for o in w["orders"] for pid in o["product_ids"]]
    pid = _pick(pids, v, "amazon_review_ordered")
    if pid is None:
        return None
    prod, rating = next(p for p in w["products"] if p["id"] == pid), 4 + v % 2
    code = (
        f"{login(w, 'amazon')}\n"
        f"product = [p for p in apis.amazon.search_products(query={prod['name']!r}, page_limit=20) if p['name'] == {prod['name']!r}][0]\n"
        f"apis.amazon.write_product_review(product_id=product['product_id'], rating={rating}, title='Review', text='As described.', access_token=amazon_token)\n"
        + finish()
    )
    return TaskSpec(
        f"Write a {rating}-star review titled 'Review' with the text 'As described.' for the '{prod['name']}' I ordered "
        "on Amazon.",
        [code],
        [
            added(
                "amazon", "product_reviews", {"product_id": pid, "user_id": _sup(w)["ids"]["amazon"], "rating": rating}
            ),
            no_collateral("amazon.product_reviews", "amazon.products", "amazon.sellers"),
        ],
    )


@template("amazon_ask_question", ("amazon",), 1)
def _(w, v):
    prod = _pick(w["products"], v, "amazon_ask_question")
    if prod is None:
        return None
    q = ["Is it waterproof?", "Does it come with a warranty?", "What are the dimensions?", "Is it machine washable?"][
        v % 4
    ]
    code = (
        f"{login(w, 'amazon')}\n"
        f"product = [p for p in apis.amazon.search_products(query={prod['name']!r}, page_limit=20) if p['name'] == {prod['name']!r}][0]\n"
        f"apis.amazon.write_product_question(product_id=product['product_id'], question={q!r}, access_token=amazon_token)\n"
        + finish()
    )
    return TaskSpec(
        f"Ask the question '{q}' on the Amazon page of '{prod['name']}'.",
        [code],
        [
            added("amazon", "product_questions", {"product_id": prod["id"], "question": q}),
            no_collateral("amazon.product_questions"),
        ],
    )


# ================================================================================= more: cross-app
@template("cross_todoist_note_open", ("todoist", "simple_note"), 3)
def _(w, v):
    proj = _pick(w["projects"], v, "cross_todoist_note_open")
    if proj is None:
        return None
    open_titles = [t["title"] for t in proj["tasks"] if not t["is_completed"]]
    title = f"{proj['name']} to-dos"
    code = (
        f"{login(w, 'todoist', 'simple_note')}\n"
        "projects = apis.todoist.show_projects(page_limit=20, access_token=todoist_token)\n"
        f"project = [x for x in projects if x['name'] == {proj['name']!r}][0]\n"
        "res = apis.todoist.show_tasks(project_id=project['project_id'], is_completed=False, page_limit=20, access_token=todoist_token)\n"
        "tasks = res['no_section_tasks'] + [t for sec in res['sections'] for t in sec['tasks']]\n"
        f"apis.simple_note.create_note(title={title!r}, content='\\n'.join(t['title'] for t in tasks), access_token=simple_note_token)\n"
        + finish()
    )
    return TaskSpec(
        f"Create a note titled '{title}' listing the unfinished tasks of my Todoist project '{proj['name']}', one per "
        "line.",
        [code],
        [
            added("simple_note", "notes", {"title": title, "content": {"$lines": open_titles}}),
            no_collateral("simple_note.notes"),
        ],
    )


@template("cross_file_to_gmail", ("file_system", "gmail"), 3)
def _(w, v):
    pairs = [(f, p) for f in sorted(w["files"]) if f.startswith("~/documents") for p in _others(w)[:3]]
    pick = _pick(pairs, v, "cross_file_to_gmail")
    if pick is None:
        return None
    path, p = pick
    subject = path.rsplit("/", 1)[1]
    code = (
        f"{login(w, 'file_system', 'gmail')}\n"
        f"content = apis.file_system.show_file(file_path={path!r}, access_token=file_system_token)['content']\n"
        f"apis.gmail.send_email(email_addresses=[{p['email']!r}], subject={subject!r}, body=content, access_token=gmail_token)\n"
        + finish()
    )
    return TaskSpec(
        f"Email {_name(p)} ({p['email']}) the content of my file {path} as the body, with the subject '{subject}'.",
        [code],
        [
            added(
                "gmail",
                "emails",
                {
                    "sender_id": _sup(w)["ids"]["gmail"],
                    "subject": subject,
                    "body": {"$lines": w["files"][path].splitlines()},
                },
            ),
            no_collateral("gmail.emails", "gmail.global_email_threads", "gmail.user_email_threads"),
        ],
    )


@template("cross_phone_splitwise_add", ("phone", "splitwise"), 3)
def _(w, v):
    rows = {g["id"]: range(1 + 4 * i, 5 + 4 * i) for i, g in enumerate(w["groups"])}
    pairs = [
        (g, p)
        for g in w["groups"]
        for p in _others(w)
        if p["email"] not in g["members"] and p["ids"]["splitwise"] not in rows[g["id"]]
    ]
    pick = _pick(pairs, v, "cross_phone_splitwise_add")
    if pick is None:
        return None
    g, p = pick
    code = (
        f"{login(w, 'phone', 'splitwise')}\n"
        + pages("apis.phone.search_contacts(page_index=PAGE, page_limit=20, access_token=phone_token)")
        + "\n"
        f"contact = [c for c in items if c['phone_number'] == {p['phone_number']!r}][0]\n"
        "groups = apis.splitwise.show_groups(page_limit=20, access_token=splitwise_token)\n"
        f"group = [g for g in groups if g['name'] == {g['name']!r}][0]\n"
        "apis.splitwise.add_member_to_group(group_id=group['group_id'], user_email=contact['email'], access_token=splitwise_token)\n"
        + finish()
    )
    return TaskSpec(
        f"Add the person whose phone number is {p['phone_number']} (they are in my phone contacts) to my Splitwise "
        f"group '{g['name']}'.",
        [code],
        [
            added("splitwise", "group_members", {"group_id": g["id"], "user_id": p["ids"]["splitwise"]}),
            no_collateral("splitwise.group_members"),
        ],
    )


@template("cross_spotify_phone_longest", ("spotify", "phone"), 3)
def _(w, v):
    pairs = [(pl, p) for pl in w["playlists"] for p in _others(w)[:3]]
    pick = _pick(pairs, v, "cross_spotify_phone_longest")
    if pick is None:
        return None
    pl, p = pick
    best = max((_song(w, s) for s in pl["song_ids"]), key=lambda s: (s["duration"], -s["id"]))
    code = (
        f"{login(w, 'spotify', 'phone')}\n"
        "playlists = apis.spotify.show_playlist_library(page_limit=20, access_token=spotify_token)\n"
        f"pl = [x for x in playlists if x['title'] == {pl['title']!r}][0]\n"
        "songs = [apis.spotify.show_song(song_id=s['id']) for s in apis.spotify.show_playlist(playlist_id=pl['playlist_id'], access_token=spotify_token)['songs']]\n"
        "best = sorted(songs, key=lambda s: (-s['duration'], s['song_id']))[0]\n"
        f"contact = apis.phone.search_contacts(query={_name(p)!r}, access_token=phone_token)[0]\n"
        "apis.phone.send_text_message(phone_number=contact['phone_number'], message='Listen to ' + best['title'], access_token=phone_token)\n"
        + finish()
    )
    return TaskSpec(
        f"Text {_name(p)}: 'Listen to <title>', where <title> is the longest song in my Spotify playlist "
        f"'{pl['title']}'.",
        [code],
        [
            added(
                "phone",
                "global_text_messages",
                {
                    "sender_id": _sup(w)["ids"]["phone"],
                    "receiver_id": p["ids"]["phone"],
                    "message": f"Listen to {best['title']}",
                },
            ),
            no_collateral("phone.global_text_messages", "phone.user_text_messages"),
        ],
    )


@template("cross_amazon_venmo_split", ("amazon", "venmo"), 3)
def _(w, v):
    pairs = [(pid, p) for pid in w["cart_product_ids"] for p in _others(w)[:4]]
    pick = _pick(pairs, v, "cross_amazon_venmo_split")
    if pick is None:
        return None
    pid, p = pick
    prod = next(x for x in w["products"] if x["id"] == pid)
    half = round(prod["price"] / 2, 2)
    code = (
        f"{login(w, 'amazon', 'venmo')}\n"
        "cart = apis.amazon.show_cart(access_token=amazon_token)\n"
        f"item = [e for e in cart['cart_items'] if e['product_id'] == {pid}][0]\n"
        f"apis.venmo.create_payment_request(user_email={p['email']!r}, amount=round(item['price'] / 2, 2), description=item['product_name'], access_token=venmo_token)\n"
        + finish()
    )
    return TaskSpec(
        f"{_name(p)} ({p['email']}) is splitting the '{prod['name']}' in my Amazon cart with me. Request half of its "
        "price from them on Venmo, with the product's name as the note.",
        [code],
        [
            added(
                "venmo",
                "payment_requests",
                {
                    "sender_id": _sup(w)["ids"]["venmo"],
                    "receiver_id": p["ids"]["venmo"],
                    "amount": half,
                    "description": prod["name"],
                },
            ),
            no_collateral("venmo.payment_requests"),
        ],
    )


@template("cross_venmo_note_requests", ("venmo", "simple_note"), 3)
def _(w, v):
    if v > 0:
        return None
    lines = [f"{_name(_person(w, r['from']))}: {r['amount']}" for r in w["payment_requests_in"]]
    code = (
        f"{login(w, 'venmo', 'simple_note')}\n"
        "reqs = apis.venmo.show_received_payment_requests(status='pending', page_limit=20, access_token=venmo_token)\n"
        "lines = [r['sender']['name'] + ': ' + str(r['amount']) for r in reqs]\n"
        "apis.simple_note.create_note(title='Money I owe', content='\\n'.join(lines), access_token=simple_note_token)\n"
        + finish()
    )
    return TaskSpec(
        "Create a note titled 'Money I owe' with one line '<name>: <amount>' for each pending Venmo payment request "
        "sent to me.",
        [code],
        [
            added("simple_note", "notes", {"title": "Money I owe", "content": {"$lines": lines}}),
            no_collateral("simple_note.notes"),
        ],
    )


# ====================================================================================== more: facts
@template("phone_contact_email", ("phone",), 1)
def _(w, v):
    p = _pick(_others(w), v, "phone_contact_email")
    if p is None:
        return None
    code = (
        f"{login(w, 'phone')}\n"
        f"contact = apis.phone.search_contacts(query={_name(p)!r}, access_token=phone_token)[0]\n"
        + finish("contact['email']")
    )
    return TaskSpec(
        f"What is the email address of {_name(p)} in my phone contacts?", [code], [answer(p["email"]), no_collateral()]
    )


@template("phone_contact_relationship", ("phone",), 1)
def _(w, v):
    p = _pick(_others(w), v, "phone_contact_relationship")
    if p is None:
        return None
    code = (
        f"{login(w, 'phone')}\n"
        f"contact = apis.phone.search_contacts(query={_name(p)!r}, access_token=phone_token)[0]\n"
        + finish("contact['relationships'][0]")
    )
    return TaskSpec(
        f"How is {_name(p)} related to me, according to my phone contacts (friend, family, coworker or roommate)?",
        [code],
        [answer(p["relationship"]), no_collateral()],
    )


@template("spotify_song_genre", ("spotify",), 1)
def _(w, v):
    s = _pick(w["songs"], v, "spotify_song_genre")
    if s is None:
        return None
    code = (
        f"{login(w, 'spotify')}\n"
        f"song = [x for x in apis.spotify.search_songs(query={s['title']!r}, page_limit=20) if x['title'] == {s['title']!r}][0]\n"
        + finish("apis.spotify.show_song(song_id=song['song_id'])['genre']")
    )
    return TaskSpec(f"What genre is the song '{s['title']}' on Spotify?", [code], [answer(s["genre"]), no_collateral()])


@template("spotify_add_song_to_playlist", ("spotify",), 2)
def _(w, v):
    pairs = [(pl, s) for pl in w["playlists"] for s in w["songs"] if s["id"] not in pl["song_ids"]]
    pick = _pick(pairs, v, "spotify_add_song_to_playlist")
    if pick is None:
        return None
    pl, s = pick
    code = (
        f"{login(w, 'spotify')}\n"
        "playlists = apis.spotify.show_playlist_library(page_limit=20, access_token=spotify_token)\n"
        f"pl = [p for p in playlists if p['title'] == {pl['title']!r}][0]\n"
        f"song = [x for x in apis.spotify.search_songs(query={s['title']!r}, page_limit=20) if x['title'] == {s['title']!r}][0]\n"
        "apis.spotify.add_song_to_playlist(playlist_id=pl['playlist_id'], song_id=song['song_id'], access_token=spotify_token)\n"
        + finish()
    )
    return TaskSpec(
        f"Add the song '{s['title']}' to my Spotify playlist '{pl['title']}'.",
        [code],
        [
            added("spotify", "playlist_songs", {"playlist_id": pl["id"], "song_id": s["id"]}),
            no_collateral("spotify.playlist_songs"),
        ],
    )


@template("venmo_request_amount", ("venmo",), 1)
def _(w, v):
    r = _pick(w["payment_requests_in"], v, "venmo_request_amount")
    if r is None:
        return None
    p = _person(w, r["from"])
    code = (
        f"{login(w, 'venmo')}\n"
        "reqs = apis.venmo.show_received_payment_requests(page_limit=20, access_token=venmo_token)\n"
        f"req = [x for x in reqs if x['sender']['email'] == {p['email']!r}][0]\n" + finish("req['amount']")
    )
    return TaskSpec(f"How much is {_name(p)} asking me for on Venmo?", [code], [answer(r["amount"]), no_collateral()])


@template("todoist_task_priority", ("todoist",), 1)
def _(w, v):
    pick = _pick(_tasks(w), v, "todoist_task_priority")
    if pick is None:
        return None
    proj, task = pick
    code = f"{login(w, 'todoist')}\n{_find_task_code(proj, task)}" + finish("task['priority']")
    return TaskSpec(
        f"What priority does the task '{task['title']}' in my Todoist project '{proj['name']}' have?",
        [code],
        [answer(task["priority"]), no_collateral()],
    )


@template("todoist_task_due_date", ("todoist",), 1)
def _(w, v):
    pick = _pick(_tasks(w), v, "todoist_task_due_date")
    if pick is None:
        return None
    proj, task = pick
    code = f"{login(w, 'todoist')}\n{_find_task_code(proj, task)}" + finish("task['due_date'][:10]")
    return TaskSpec(
        f"When is the task '{task['title']}' in my Todoist project '{proj['name']}' due (YYYY-MM-DD)?",
        [code],
        [answer(task["due_date"]), no_collateral()],
    )


@template("amazon_type_count", ("amazon",), 1)
def _(w, v):
    t = _pick(sorted({p["type"] for p in w["products"]}), v, "amazon_type_count")
    if t is None:
        return None
    n = sum(p["type"] == t for p in w["products"])
    code = (
        f"{login(w, 'amazon')}\n"
        + pages(f"apis.amazon.search_products(product_type={t!r}, page_index=PAGE, page_limit=20)")
        + "\n"
        + finish("len(items)")
    )
    return TaskSpec(f"How many {t} products does Amazon sell?", [code], [answer(n), no_collateral()])


@template("file_exists", ("file_system",), 1)
def _(w, v):
    asked = sorted(w["files"]) + [
        "~/documents/cover_letter.txt",
        "~/photos/vacation/lake.jpg",
        "~/downloads/invoice_may.pdf",
        "~/documents/taxes.csv",
    ]
    path = _pick(asked, v, "file_exists")
    if path is None:
        return None
    code = (
        f"{login(w, 'file_system')}\n"
        f"exists = apis.file_system.file_exists(file_path={path!r}, access_token=file_system_token)['exists']\n"
        + finish("'yes' if exists else 'no'")
    )
    return TaskSpec(
        f"Do I have a file {path}? Answer yes or no.",
        [code],
        [answer("yes" if path in w["files"] else "no"), no_collateral()],
    )


@template("cross_phone_venmo_request_contact", ("phone", "venmo"), 3)
def _(w, v):
    p = _pick(_others(w), v, "cross_phone_venmo_request_contact")
    if p is None:
        return None
    amount = round(_rng("cross_phone_venmo_request_contact", v).uniform(8, 40), 2)
    code = (
        f"{login(w, 'phone', 'venmo')}\n"
        + pages("apis.phone.search_contacts(page_index=PAGE, page_limit=20, access_token=phone_token)")
        + "\n"
        f"contact = [c for c in items if c['phone_number'] == {p['phone_number']!r}][0]\n"
        f"apis.venmo.create_payment_request(user_email=contact['email'], amount={amount}, description='Dinner', access_token=venmo_token)\n"
        + finish()
    )
    return TaskSpec(
        f"Request ${amount} on Venmo, with the note 'Dinner', from the contact in my phone whose number is "
        f"{p['phone_number']}.",
        [code],
        [
            added(
                "venmo",
                "payment_requests",
                {
                    "sender_id": _sup(w)["ids"]["venmo"],
                    "receiver_id": p["ids"]["venmo"],
                    "amount": amount,
                    "description": "Dinner",
                },
            ),
            no_collateral("venmo.payment_requests"),
        ],
    )


@template("cross_note_gmail_list", ("simple_note", "gmail"), 3)
def _(w, v):
    pairs = [(n, p) for n in w["notes"] for p in _others(w)[:3]]
    pick = _pick(pairs, v, "cross_note_gmail_list")
    if pick is None:
        return None
    n, p = pick
    code = (
        f"{login(w, 'simple_note', 'gmail')}\n{_note_code(n)}"
        "content = apis.simple_note.show_note(note_id=note['note_id'], access_token=simple_note_token)['content']\n"
        f"apis.gmail.send_email(email_addresses=[{p['email']!r}], subject={n['title']!r}, body=content, access_token=gmail_token)\n"
        + finish()
    )
    return TaskSpec(
        f"Email my note '{n['title']}' to {_name(p)} ({p['email']}): the note's title as the subject and its content "
        "as the body.",
        [code],
        [
            added(
                "gmail",
                "emails",
                {
                    "sender_id": _sup(w)["ids"]["gmail"],
                    "subject": n["title"],
                    "body": {"$lines": [f"- {x}" for x in n["items"]]},
                },
            ),
            no_collateral("gmail.emails", "gmail.global_email_threads", "gmail.user_email_threads"),
        ],
    )


# ============================================================== events at reset (setup calls by others)
REASONS = [
    "Concert tickets",
    "Pizza last night",
    "Gas money",
    "Movie tickets",
    "Book club dues",
    "Cab home",
    "Brunch",
    "Farmers market",
]


@template("event_venmo_request_pay", ("venmo",), 2)
def _(w, v):
    p = _pick(_others(w), v, "event_venmo_request_pay")
    if p is None:
        return None
    amount, reason = round(_rng("event_venmo_request_pay", v).uniform(6, 45), 2), REASONS[v % len(REASONS)]
    setup = [
        {
            "as": p["email"],
            "app": "venmo",
            "api": "create_payment_request",
            "kwargs": {"user_email": _sup(w)["email"], "amount": amount, "description": reason},
        }
    ]
    code = (
        f"{login(w, 'venmo')}\n"
        "reqs = apis.venmo.show_received_payment_requests(status='pending', page_limit=20, access_token=venmo_token)\n"
        f"req = [r for r in reqs if r['sender']['email'] == {p['email']!r} and r['description'] == {reason!r}][0]\n"
        "apis.venmo.approve_payment_request(payment_request_id=req['payment_request_id'], access_token=venmo_token)\n"
        + finish()
    )
    return TaskSpec(
        f"{_name(p)} just sent me a Venmo request for '{reason}'. Pay it.",
        [code],
        [
            added(
                "venmo",
                "transactions",
                {"sender_id": _sup(w)["ids"]["venmo"], "receiver_id": p["ids"]["venmo"], "amount": amount},
            ),
            no_collateral("venmo.payment_requests", "venmo.transactions", "venmo.users"),
        ],
        setup=setup,
    )


@template("event_gmail_reply_question", ("gmail",), 2)
def _(w, v):
    p = _pick(_others(w), v, "event_gmail_reply_question")
    if p is None:
        return None
    day = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday", "Monday"][v % 8]
    subject = f"Meeting on {day}?"
    setup = [
        {
            "as": p["email"],
            "app": "gmail",
            "api": "send_email",
            "kwargs": {"email_addresses": [_sup(w)["email"]], "subject": subject, "body": f"Can we meet on {day}?"},
        }
    ]
    code = (
        f"{login(w, 'gmail')}\n{_thread_code(p, subject)}"
        "thread = apis.gmail.show_thread(email_thread_id=t['email_thread_id'], access_token=gmail_token)\n"
        "apis.gmail.reply_to_email(email_thread_id=t['email_thread_id'], email_id=thread['emails'][-1]['email_id'], "
        f"body='Yes, {day} works for me.', access_token=gmail_token)\n" + finish()
    )
    return TaskSpec(
        f"{_name(p)} just emailed me asking to meet. Reply to that email: 'Yes, <day> works for me.', with the day "
        "they asked for.",
        [code],
        [
            added("gmail", "emails", {"sender_id": _sup(w)["ids"]["gmail"], "body": f"Yes, {day} works for me."}),
            no_collateral("gmail.emails", "gmail.global_email_threads", "gmail.user_email_threads"),
        ],
        setup=setup,
    )


@template("event_phone_text_alarm", ("phone",), 3)
def _(w, v):
    p = _pick(_others(w), v, "event_phone_text_alarm")
    if p is None:
        return None
    hh, mm = 5 + v % 4, [0, 15, 30, 45][v % 4]
    t = f"{hh:02d}:{mm:02d}"
    setup = [
        {
            "as": p["email"],
            "app": "phone",
            "api": "send_text_message",
            "kwargs": {"phone_number": _sup(w)["phone_number"], "message": f"Pick me up at {t} tomorrow please!"},
        }
    ]
    code = (
        f"{login(w, 'phone')}\n"
        f"msgs = apis.phone.search_text_messages(phone_number={p['phone_number']!r}, page_limit=20, access_token=phone_token)\n"
        "latest = [m for m in msgs if 'pick me up' in m['message'].lower()][0]\n"
        "import re\n"
        "time = re.search(r'(\\d\\d:\\d\\d)', latest['message']).group(1)\n"
        f"apis.phone.create_alarm(time=time, label='Pick up {p['first_name']}', access_token=phone_token)\n" + finish()
    )
    return TaskSpec(
        f"{_name(p)} just texted me when to pick them up tomorrow. Set a phone alarm at that time, labelled "
        f"'Pick up {p['first_name']}'.",
        [code],
        [
            added(
                "phone",
                "alarms",
                {"user_id": _sup(w)["ids"]["phone"], "time": t, "label": f"Pick up {p['first_name']}"},
            ),
            no_collateral("phone.alarms"),
        ],
        setup=setup,
    )


# -- tasks ---------------------------------------------------------------------------------------------
def _scenario_split(name: str, seed: int) -> str:
    """Under ``scenario``: about 70% of templates train, 10% dev, 20% test_normal (whole templates)."""
    h = int(hashlib.sha256(f"{seed}:{name}".encode()).hexdigest()[:8], 16) % 10
    return "train" if h < 7 else "dev" if h == 7 else "test_normal"


CHALLENGE_APP = "gmail"  # held out of train, dev and test_normal


def _goal_split(name: str, variant: int, apps: tuple[str, ...]) -> str:
    if CHALLENGE_APP in apps:
        return "test_challenge"
    return "train" if variant % 8 < 5 else "dev" if variant % 8 == 5 else "test_normal"


_CALLED = re.compile(r"\bapis\.(\w+)\.")
_NOT_USER_APPS = {"supervisor", "api_docs"}


def _touched(apps: Any, tests: Any, setup: Any, reference: Any) -> set[str]:
    code = "\n".join(map(str, reference or []))
    out = {str(a) for a in apps or []}
    out |= {str(t["app"]) for t in tests or [] if isinstance(t, dict) and "app" in t}
    out |= {str(c["app"]) for c in setup or [] if isinstance(c, dict) and "app" in c}
    out |= set(_CALLED.findall(code))
    return out - _NOT_USER_APPS


def task_apps(task: Task | dict) -> set[str]:
    """The user apps ``task`` touches: those its goal names, its tests check, its setup calls use, and
    its reference calls (``todoist_overdue_count`` reads the date from ``phone``).

    Example:
        >>> sorted(task_apps({"task_id": "t", "env_id": ENV_ID, "instruction": "",
        ...                   "goal": {"apps": ["todoist"]}, "reference": ["apis.phone.get_current_date_and_time()"]}))
        ['phone', 'todoist']
    """
    task = Task.from_dict(task)
    goal = task.goal or {}
    return _touched(goal.get("apps"), goal.get("tests"), goal.get("setup"), task.reference)


def _app_table(specs: list[tuple[Template, int, TaskSpec]], seed: int) -> dict[str, list[str]]:
    """Under ``app``: the apps dev and test_normal hold out, walked in an order drawn from ``seed``.

    An app goes to test_normal if holding it out brings test_normal's task count closer to the ``goal``
    scheme's, else to dev likewise, else it stays in train (the walk of WebShop's unit schemes). A task
    touching a test_normal app is test_normal's, else one touching a dev app is dev's.
    """
    touched = [_touched(tpl.apps, spec.tests, spec.setup, spec.reference) for tpl, _, spec in specs]
    normal = [(apps, _goal_split(tpl.name, v, tpl.apps)) for apps, (tpl, v, _) in zip(touched, specs)]
    normal = [(apps, s) for apps, s in normal if CHALLENGE_APP not in apps]
    target = Counter(s for _, s in normal)
    order = sorted(set().union(*(apps for apps, _ in normal)))
    random.Random(f"appworld_apps/app-split/{seed}").shuffle(order)
    held: dict[str, set[str]] = {"test_normal": set(), "dev": set()}

    def sizes(test: set[str], dev: set[str]) -> tuple[int, int]:
        n_test = sum(bool(apps & test) for apps, _ in normal)
        n_dev = sum(bool(apps & dev) and not apps & test for apps, _ in normal)
        return n_test, n_dev

    for app in order:
        n_test, n_dev = sizes(held["test_normal"], held["dev"])
        if abs(sizes(held["test_normal"] | {app}, held["dev"])[0] - target["test_normal"]) < abs(
            n_test - target["test_normal"]
        ):
            held["test_normal"].add(app)
        elif abs(sizes(held["test_normal"], held["dev"] | {app})[1] - target["dev"]) < abs(n_dev - target["dev"]):
            held["dev"].add(app)
    return {"dev": sorted(held["dev"]), "test_normal": sorted(held["test_normal"])}


def held_out_apps(world: dict, split_scheme: str = "goal") -> dict[str, list[str]]:
    """The apps each held-out split holds out whole in ``world`` (``test_challenge``: ``gmail`` in every
    scheme; ``dev`` and ``test_normal``: drawn from the world seed under ``app``, none otherwise)."""
    if split_scheme not in SPLIT_SCHEMES:
        raise ValueError(f"split_scheme must be one of {SPLIT_SCHEMES}, got {split_scheme!r}")
    table = _app_table(all_specs(world), int(world["seed"])) if split_scheme == "app" else {"dev": [], "test_normal": []}
    return {**table, "test_challenge": [CHALLENGE_APP]}


def _app_split(apps: set[str], table: dict[str, list[str]]) -> str:
    if CHALLENGE_APP in apps:
        return "test_challenge"
    if apps & set(table["test_normal"]):
        return "test_normal"
    return "dev" if apps & set(table["dev"]) else "train"


def all_specs(world: dict) -> list[tuple[Template, int, TaskSpec]]:
    """Every (template, variant, spec) of ``world``."""
    out = []
    for tpl in TEMPLATES.values():
        for v in range(VARIANTS):
            spec = tpl.build(world, v)
            if spec is not None:
                out.append((tpl, v, spec))
    return out


def build_tasks(world: dict, split: str, split_scheme: str = "goal") -> list[Task]:
    """The tasks of ``split`` in ``world`` (from :meth:`AppsServer.open_world`)."""
    if split not in SPLITS:
        raise ValueError(f"split must be one of {SPLITS}, got {split!r}")
    if split_scheme not in SPLIT_SCHEMES:
        raise ValueError(f"split_scheme must be one of {SPLIT_SCHEMES}, got {split_scheme!r}")
    seed = int(world["seed"])
    specs = all_specs(world)
    table = _app_table(specs, seed) if split_scheme == "app" else None
    out = []
    for tpl, v, spec in specs:
        if split_scheme == "goal":
            s = _goal_split(tpl.name, v, tpl.apps)
        elif split_scheme == "app":
            s = _app_split(_touched(tpl.apps, spec.tests, spec.setup, spec.reference), table)
        else:
            s = "test_challenge" if CHALLENGE_APP in tpl.apps else _scenario_split(tpl.name, seed)
        if s != split:
            continue
        out.append(
            Task(
                task_id=f"{tpl.name}_{v + 1}",
                env_id=ENV_ID,
                instruction=spec.instruction,
                split=split,
                seed=seed,
                goal={
                    "scenario": tpl.name,
                    "apps": list(tpl.apps),
                    "tests": spec.tests,
                    "setup": spec.setup,
                    "datetime": world["now"],
                    "supervisor": {k: _sup(world)[k] for k in ("first_name", "last_name", "email", "phone_number")},
                },
                reference=list(spec.reference),
                difficulty=tpl.difficulty,
            )
        )
    return out


TINY_WORLD = {
    "seed": 0,
    "now": "2023-05-18T12:00:00",
    "people": [
        {
            "first_name": "Al",
            "last_name": "Ng",
            "email": "al.ng@gmail.com",
            "phone_number": "2000000001",
            "relationship": None,
        },
        {
            "first_name": "Bo",
            "last_name": "Li",
            "email": "bo.li@gmail.com",
            "phone_number": "2000000002",
            "relationship": "friend",
        },
    ],
}


def _json(x: Any) -> str:
    return json.dumps(x, sort_keys=True)
