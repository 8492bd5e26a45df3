"""App databases: one SQLite schema per app, fast per-episode copies, and the state diff.

* ``SCHEMAS`` - ``app -> table -> [(column, sql type), ...]``; every table has ``id INTEGER PRIMARY KEY``.
* ``AppDatabases`` - one in-memory SQLite connection per app, with copy, savepoint and rollback.
* ``build_base_databases`` - the world's start state as an ``AppDatabases``.
* ``diff_databases`` / ``TableDiff`` - per table: added, updated (with changed fields), removed rows.

Databases live in the host process only; sandboxed code reaches them through the app APIs.
A copy is ``sqlite3.Connection.backup`` from an in-memory base into a fresh in-memory
connection, which takes well under a millisecond per app for worlds of this size.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from .world import USER_APPS, World

__all__ = ["SCHEMAS", "AppDatabases", "TableDiff", "build_base_databases", "diff_databases"]

_USER = [
    ("first_name", "TEXT"),
    ("last_name", "TEXT"),
    ("email", "TEXT"),
    ("phone_number", "TEXT"),
    ("password", "TEXT"),
    ("created_at", "TEXT"),
]

SCHEMAS: dict[str, dict[str, list[tuple[str, str]]]] = {
    "supervisor": {
        "account_passwords": [("account_name", "TEXT"), ("password", "TEXT")],
        "addresses": [
            ("name", "TEXT"),
            ("street_address", "TEXT"),
            ("city", "TEXT"),
            ("state", "TEXT"),
            ("zip_code", "TEXT"),
        ],
        "payment_cards": [
            ("card_name", "TEXT"),
            ("owner_name", "TEXT"),
            ("card_number", "TEXT"),
            ("expiry_date", "TEXT"),
            ("cvv", "TEXT"),
        ],
        "active_task": [("task_id", "TEXT"), ("instruction", "TEXT"), ("status", "TEXT"), ("answer", "TEXT")],
    },
    "phone": {
        "users": _USER,
        "contacts": [
            ("owner_id", "INTEGER"),
            ("first_name", "TEXT"),
            ("last_name", "TEXT"),
            ("phone_number", "TEXT"),
            ("email", "TEXT"),
            ("relationships", "TEXT"),
            ("birthday", "TEXT"),
            ("created_at", "TEXT"),
        ],
        "text_messages": [
            ("sender_id", "INTEGER"),
            ("receiver_id", "INTEGER"),
            ("message", "TEXT"),
            ("sent_at", "TEXT"),
        ],
        "alarms": [
            ("user_id", "INTEGER"),
            ("time", "TEXT"),
            ("label", "TEXT"),
            ("repeat_days", "TEXT"),
            ("enabled", "INTEGER"),
            ("created_at", "TEXT"),
        ],
    },
    "music": {
        "users": _USER,
        "artists": [("name", "TEXT"), ("genre", "TEXT"), ("follower_count", "INTEGER")],
        "albums": [("title", "TEXT"), ("artist_id", "INTEGER"), ("genre", "TEXT"), ("release_date", "TEXT")],
        "songs": [
            ("title", "TEXT"),
            ("album_id", "INTEGER"),
            ("artist_id", "INTEGER"),
            ("genre", "TEXT"),
            ("track_number", "INTEGER"),
            ("duration", "INTEGER"),
            ("release_date", "TEXT"),
            ("play_count", "INTEGER"),
        ],
        "library_songs": [("user_id", "INTEGER"), ("song_id", "INTEGER"), ("added_at", "TEXT")],
        "liked_songs": [("user_id", "INTEGER"), ("song_id", "INTEGER"), ("liked_at", "TEXT")],
        "playlists": [
            ("owner_id", "INTEGER"),
            ("title", "TEXT"),
            ("is_public", "INTEGER"),
            ("created_at", "TEXT"),
        ],
        "playlist_songs": [("playlist_id", "INTEGER"), ("song_id", "INTEGER"), ("added_at", "TEXT")],
        "play_history": [("user_id", "INTEGER"), ("song_id", "INTEGER"), ("played_at", "TEXT")],
    },
    "payments": {
        "users": [*_USER, ("balance", "REAL")],
        "friendships": [("user_id", "INTEGER"), ("friend_id", "INTEGER"), ("created_at", "TEXT")],
        "transactions": [
            ("sender_id", "INTEGER"),
            ("receiver_id", "INTEGER"),
            ("amount", "REAL"),
            ("description", "TEXT"),
            ("created_at", "TEXT"),
        ],
        "payment_requests": [
            ("requester_id", "INTEGER"),
            ("payer_id", "INTEGER"),
            ("amount", "REAL"),
            ("description", "TEXT"),
            ("status", "TEXT"),
            ("created_at", "TEXT"),
            ("resolved_at", "TEXT"),
        ],
    },
    "notes": {
        "users": _USER,
        "notes": [
            ("owner_id", "INTEGER"),
            ("title", "TEXT"),
            ("content", "TEXT"),
            ("tags", "TEXT"),
            ("pinned", "INTEGER"),
            ("created_at", "TEXT"),
            ("updated_at", "TEXT"),
        ],
    },
    "todo": {
        "users": _USER,
        "projects": [("owner_id", "INTEGER"), ("name", "TEXT"), ("created_at", "TEXT")],
        "tasks": [
            ("project_id", "INTEGER"),
            ("owner_id", "INTEGER"),
            ("title", "TEXT"),
            ("due_date", "TEXT"),
            ("priority", "INTEGER"),
            ("labels", "TEXT"),
            ("completed", "INTEGER"),
            ("completed_at", "TEXT"),
            ("created_at", "TEXT"),
        ],
    },
    "mail": {
        "users": _USER,
        "emails": [
            ("owner_id", "INTEGER"),
            ("folder", "TEXT"),
            ("sender", "TEXT"),
            ("recipient", "TEXT"),
            ("subject", "TEXT"),
            ("body", "TEXT"),
            ("is_read", "INTEGER"),
            ("sent_at", "TEXT"),
        ],
    },
}
assert set(SCHEMAS) == {"supervisor", *USER_APPS}


def _connect() -> sqlite3.Connection:
    # autocommit mode: transactions are managed explicitly with SAVEPOINTs per step
    conn = sqlite3.connect(":memory:", isolation_level=None, check_same_thread=False)
    conn.row_factory = sqlite3.Row
    return conn


def _create(conn: sqlite3.Connection, app: str) -> None:
    for table, cols in SCHEMAS[app].items():
        body = ", ".join(["id INTEGER PRIMARY KEY AUTOINCREMENT", *(f"{c} {t}" for c, t in cols)])
        conn.execute(f"CREATE TABLE {table} ({body})")


class AppDatabases:
    """One in-memory SQLite database per app.

    Example:
        >>> from evolver_gym.appworld.world import generate_world
        >>> base = build_base_databases(generate_world(0))
        >>> dbs = base.copy()
        >>> dbs.execute("notes", "DELETE FROM notes WHERE id = 1")
        >>> [d.removed for d in diff_databases(base, dbs) if d.table == "notes"]
        [[1]]
    """

    def __init__(self, conns: dict[str, sqlite3.Connection]):
        self.conns = conns

    @classmethod
    def empty(cls) -> AppDatabases:
        conns = {}
        for app in SCHEMAS:
            conns[app] = _connect()
            _create(conns[app], app)
        return cls(conns)

    def copy(self, into: AppDatabases | None = None) -> AppDatabases:
        """A copy of every app database (into ``into``'s connections when given, reusing them)."""
        target = into or AppDatabases({app: _connect() for app in self.conns})
        for app, conn in self.conns.items():
            conn.backup(target.conns[app])
        return target

    def execute(self, app: str, sql: str, params: Iterable[Any] = ()) -> None:
        self.conns[app].execute(sql, tuple(params))

    def query(self, app: str, sql: str, params: Iterable[Any] = ()) -> list[dict[str, Any]]:
        return [dict(r) for r in self.conns[app].execute(sql, tuple(params)).fetchall()]

    def insert(self, app: str, table: str, row: dict[str, Any]) -> int:
        cols = [c for c in row if c in dict(SCHEMAS[app][table]) or c == "id"]
        unknown = set(row) - set(cols)
        if unknown:
            raise KeyError(f"unknown columns {sorted(unknown)} for {app}.{table}")
        sql = f"INSERT INTO {table} ({', '.join(cols)}) VALUES ({', '.join('?' * len(cols))})"
        return int(self.conns[app].execute(sql, [row[c] for c in cols]).lastrowid)

    def change_counter(self) -> tuple[int, ...]:
        """Changes made so far on every connection; equal counters mean no writes in between."""
        return tuple(c.total_changes for c in self.conns.values())

    # -- per-step transactions ----------------------------------------------------------------
    def begin(self) -> None:
        for conn in self.conns.values():
            conn.execute("SAVEPOINT step")

    def commit(self) -> None:
        for conn in self.conns.values():
            conn.execute("RELEASE step")

    def rollback(self) -> None:
        for conn in self.conns.values():
            conn.execute("ROLLBACK TO step")
            conn.execute("RELEASE step")

    def close(self) -> None:
        for conn in self.conns.values():
            conn.close()


def build_base_databases(world: World) -> AppDatabases:
    """The world's rows loaded into fresh databases (the start state shared by every task)."""
    dbs = AppDatabases.empty()
    for app, tables in world.rows.items():
        for table, rows in tables.items():
            cols = ["id", *(c for c, _ in SCHEMAS[app][table])]
            sql = f"INSERT INTO {table} ({', '.join(cols)}) VALUES ({', '.join('?' * len(cols))})"
            dbs.conns[app].executemany(sql, [[r.get(c) for c in cols] for r in rows])
    return dbs


@dataclass
class TableDiff:
    """What changed in one table between two states, keyed by primary key."""

    app: str
    table: str
    added: list[int] = field(default_factory=list)
    updated: dict[int, list[str]] = field(default_factory=dict)
    removed: list[int] = field(default_factory=list)
    end_rows: dict[int, dict[str, Any]] = field(default_factory=dict)
    start_rows: dict[int, dict[str, Any]] = field(default_factory=dict)

    @property
    def name(self) -> str:
        return f"{self.app}.{self.table}"


def _rows(conn: sqlite3.Connection, table: str) -> dict[int, tuple]:
    return {r[0]: tuple(r) for r in conn.execute(f"SELECT * FROM {table}").fetchall()}


def diff_databases(
    start: AppDatabases, end: AppDatabases, apps: Iterable[str] | None = None
) -> list[TableDiff]:
    """Every table that differs between ``start`` and ``end`` (only ``apps`` when given)."""
    out = []
    for app in apps if apps is not None else SCHEMAS:
        for table, cols in SCHEMAS[app].items():
            names = ["id", *(c for c, _ in cols)]
            a, b = _rows(start.conns[app], table), _rows(end.conns[app], table)
            if a == b:
                continue
            d = TableDiff(app, table)
            d.added = sorted(k for k in b if k not in a)
            d.removed = sorted(k for k in a if k not in b)
            for k in sorted(a.keys() & b.keys()):
                if a[k] != b[k]:
                    d.updated[k] = [n for n, x, y in zip(names, a[k], b[k]) if x != y]
            for k in [*d.added, *d.updated]:
                d.end_rows[k] = dict(zip(names, b[k]))
            for k in [*d.removed, *d.updated]:
                d.start_rows[k] = dict(zip(names, a[k]))
            out.append(d)
    return out
