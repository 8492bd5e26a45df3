"""The ``phone`` app: contacts with relationships, text messages, alarms, the current date and time."""

from __future__ import annotations

import re
from typing import Any

from ..apis import ApiError, AppContext, Param, api, paging
from ..world import RELATIONSHIPS

__all__: list[str] = []

_DAYS = ("mon", "tue", "wed", "thu", "fri", "sat", "sun")
_CID = Param("contact_id", "integer", "ID of the contact.", required=True, nullable=False)
_AID = Param("alarm_id", "integer", "ID of the alarm.", required=True, nullable=False)
_MID = Param("text_message_id", "integer", "ID of the text message.", required=True, nullable=False)


def _contact(r: dict[str, Any]) -> dict[str, Any]:
    return {
        "contact_id": r["id"],
        "first_name": r["first_name"],
        "last_name": r["last_name"],
        "phone_number": r["phone_number"],
        "email": r["email"],
        "relationships": [x for x in (r["relationships"] or "").split(",") if x],
        "birthday": r["birthday"],
    }


def _own_contact(ctx: AppContext, uid: int, cid: int) -> dict[str, Any]:
    return ctx.one("phone", "SELECT * FROM contacts WHERE id = ? AND owner_id = ?", (cid, uid), "contact")


def _rels(value: list | None) -> str | None:
    if value is None:
        return None
    bad = [v for v in value if v not in RELATIONSHIPS]
    if bad:
        raise ApiError(422, f"Unknown relationship(s) {bad}; use any of {list(RELATIONSHIPS)}.")
    return ",".join(sorted(set(value)))


def _message(ctx: AppContext, r: dict[str, Any]) -> dict[str, Any]:
    people = {
        u["id"]: u
        for u in ctx.q(
            "phone",
            "SELECT id, first_name, last_name, phone_number FROM users WHERE id IN (?, ?)",
            (r["sender_id"], r["receiver_id"]),
        )
    }

    def who(i: int) -> dict[str, str]:
        u = people[i]
        return {"name": f"{u['first_name']} {u['last_name']}", "phone_number": u["phone_number"]}

    return {
        "text_message_id": r["id"],
        "sender": who(r["sender_id"]),
        "receiver": who(r["receiver_id"]),
        "message": r["message"],
        "sent_at": r["sent_at"],
    }


@api(
    "phone",
    "show_current_date_time",
    "GET",
    "/date_time",
    "Show the current date and time.",
    returns={"date": "string", "time": "string", "weekday": "string"},
)
def show_current_date_time(ctx: AppContext, uid: int) -> dict[str, str]:
    return {
        "date": ctx.now.date().isoformat(),
        "time": ctx.now.strftime("%H:%M"),
        "weekday": ctx.now.strftime("%A"),
    }


@api(
    "phone",
    "show_contact_relationships",
    "GET",
    "/contact_relationships",
    "List the relationship tags a contact can have.",
    returns=["string"],
)
def show_contact_relationships(ctx: AppContext, uid: int) -> list[str]:
    return list(RELATIONSHIPS)


@api(
    "phone",
    "show_contacts",
    "GET",
    "/contacts",
    "List or search your contacts, by name and/or relationship.",
    Param("query", "string", "Text to match against names, emails and phone numbers."),
    Param("relationship", "string", "Only contacts with this relationship tag."),
    paged=True,
    returns=[
        {
            "contact_id": "integer",
            "first_name": "string",
            "last_name": "string",
            "phone_number": "string",
            "email": "string",
            "relationships": "list[string]",
            "birthday": "string",
        }
    ],
)
def show_contacts(
    ctx: AppContext, uid: int, query: str | None, relationship: str | None, page_index: int, page_limit: int
) -> list[dict[str, Any]]:
    sql, args = "SELECT * FROM contacts WHERE owner_id = ?", [uid]
    if query:
        sql += " AND (first_name || ' ' || last_name || ' ' || email || ' ' || phone_number) LIKE ?"
        args.append(f"%{query.strip()}%")
    if relationship:
        sql += " AND (',' || relationships || ',') LIKE ?"
        args.append(f"%,{relationship.strip().lower()},%")
    return [_contact(r) for r in ctx.q("phone", sql + " ORDER BY id" + paging(page_index, page_limit), args)]


@api(
    "phone",
    "show_contact",
    "GET",
    "/contacts/{contact_id}",
    "Show one contact.",
    _CID,
    returns={"contact_id": "integer", "first_name": "string", "last_name": "string", "relationships": "list"},
)
def show_contact(ctx: AppContext, uid: int, contact_id: int) -> dict[str, Any]:
    return _contact(_own_contact(ctx, uid, contact_id))


@api(
    "phone",
    "add_contact",
    "POST",
    "/contacts",
    "Add a contact.",
    Param("first_name", "string", "First name.", required=True, nullable=False),
    Param("last_name", "string", "Last name.", required=True, nullable=False),
    Param("phone_number", "string", "Phone number, 10 digits.", required=True, nullable=False),
    Param("email", "string", "Email address."),
    Param("relationships", "list", "Relationship tags."),
    Param("birthday", "string", "Birthday as YYYY-MM-DD."),
    returns={"contact_id": "integer", "message": "string"},
)
def add_contact(
    ctx: AppContext,
    uid: int,
    first_name: str,
    last_name: str,
    phone_number: str,
    email: str | None,
    relationships: list | None,
    birthday: str | None,
) -> dict[str, Any]:
    if not re.fullmatch(r"\d{10}", phone_number):
        raise ApiError(422, f"phone_number must be 10 digits, got {phone_number!r}.")
    cid = ctx.dbs.insert(
        "phone",
        "contacts",
        {
            "owner_id": uid,
            "first_name": first_name,
            "last_name": last_name,
            "phone_number": phone_number,
            "email": email,
            "relationships": _rels(relationships) or "",
            "birthday": birthday,
            "created_at": ctx.now_str,
        },
    )
    return {"contact_id": cid, "message": "Contact added."}


@api(
    "phone",
    "update_contact",
    "PATCH",
    "/contacts/{contact_id}",
    "Update fields of a contact.",
    _CID,
    Param("first_name", "string", "New first name."),
    Param("last_name", "string", "New last name."),
    Param("phone_number", "string", "New phone number."),
    Param("email", "string", "New email."),
    Param("relationships", "list", "New relationship tags (replaces the old ones)."),
    Param("birthday", "string", "New birthday as YYYY-MM-DD."),
)
def update_contact(ctx: AppContext, uid: int, contact_id: int, **fields: Any) -> dict[str, str]:
    _own_contact(ctx, uid, contact_id)
    if fields.get("relationships") is not None:
        fields["relationships"] = _rels(fields["relationships"])
    for col, val in fields.items():
        if val is not None:
            ctx.dbs.execute("phone", f"UPDATE contacts SET {col} = ? WHERE id = ?", (val, contact_id))
    return {"message": "Contact updated."}


@api("phone", "delete_contact", "DELETE", "/contacts/{contact_id}", "Delete a contact.", _CID)
def delete_contact(ctx: AppContext, uid: int, contact_id: int) -> dict[str, str]:
    _own_contact(ctx, uid, contact_id)
    ctx.dbs.execute("phone", "DELETE FROM contacts WHERE id = ?", (contact_id,))
    return {"message": "Contact deleted."}


@api(
    "phone",
    "show_text_messages",
    "GET",
    "/messages",
    "List text messages you sent or received, newest first; filter by the other person's phone number, "
    "text, or time range.",
    Param("phone_number", "string", "Only messages exchanged with this phone number."),
    Param("query", "string", "Text the message must contain."),
    Param("min_sent_at", "string", "Only messages sent at or after this ISO date-time."),
    Param("max_sent_at", "string", "Only messages sent at or before this ISO date-time."),
    Param(
        "sort_by",
        "string",
        "'-sent_at' (newest first) or 'sent_at'.",
        default="-sent_at",
        nullable=False,
        choices=("-sent_at", "sent_at"),
    ),
    paged=True,
    returns=[
        {
            "text_message_id": "integer",
            "sender": "dict",
            "receiver": "dict",
            "message": "string",
            "sent_at": "string",
        }
    ],
)
def show_text_messages(
    ctx: AppContext,
    uid: int,
    phone_number: str | None,
    query: str | None,
    min_sent_at: str | None,
    max_sent_at: str | None,
    sort_by: str,
    page_index: int,
    page_limit: int,
) -> list[dict[str, Any]]:
    sql, args = "SELECT * FROM text_messages WHERE (sender_id = ? OR receiver_id = ?)", [uid, uid]
    if phone_number:
        other = ctx.q("phone", "SELECT id FROM users WHERE phone_number = ?", (phone_number.strip(),))
        sql += " AND (sender_id = ? OR receiver_id = ?)"
        args += [other[0]["id"] if other else -1] * 2
    if query:
        sql += " AND message LIKE ?"
        args.append(f"%{query}%")
    if min_sent_at:
        sql += " AND sent_at >= ?"
        args.append(min_sent_at)
    if max_sent_at:
        sql += " AND sent_at <= ?"
        args.append(max_sent_at)
    order = " ORDER BY sent_at DESC, id DESC" if sort_by == "-sent_at" else " ORDER BY sent_at, id"
    return [_message(ctx, r) for r in ctx.q("phone", sql + order + paging(page_index, page_limit), args)]


@api(
    "phone",
    "show_text_message",
    "GET",
    "/messages/{text_message_id}",
    "Show one text message.",
    _MID,
    returns={"text_message_id": "integer", "sender": "dict", "receiver": "dict", "message": "string"},
)
def show_text_message(ctx: AppContext, uid: int, text_message_id: int) -> dict[str, Any]:
    return _message(
        ctx,
        ctx.one(
            "phone",
            "SELECT * FROM text_messages WHERE id = ? AND (sender_id = ? OR receiver_id = ?)",
            (text_message_id, uid, uid),
            "text message",
        ),
    )


@api(
    "phone",
    "send_text_message",
    "POST",
    "/messages",
    "Send a text message to a phone number.",
    Param("phone_number", "string", "Recipient's phone number.", required=True, nullable=False),
    Param("message", "string", "The text to send.", required=True, nullable=False),
    returns={"text_message_id": "integer", "message": "string"},
)
def send_text_message(ctx: AppContext, uid: int, phone_number: str, message: str) -> dict[str, Any]:
    other = ctx.q("phone", "SELECT id FROM users WHERE phone_number = ?", (phone_number.strip(),))
    if not other:
        raise ApiError(404, f"No phone user with number {phone_number!r}.")
    if not message.strip():
        raise ApiError(422, "The message may not be empty.")
    mid = ctx.dbs.insert(
        "phone",
        "text_messages",
        {"sender_id": uid, "receiver_id": other[0]["id"], "message": message, "sent_at": ctx.now_str},
    )
    return {"text_message_id": mid, "message": "Text message sent."}


@api("phone", "delete_text_message", "DELETE", "/messages/{text_message_id}", "Delete a text message.", _MID)
def delete_text_message(ctx: AppContext, uid: int, text_message_id: int) -> dict[str, str]:
    ctx.one(
        "phone",
        "SELECT id FROM text_messages WHERE id = ? AND (sender_id = ? OR receiver_id = ?)",
        (text_message_id, uid, uid),
        "text message",
    )
    ctx.dbs.execute("phone", "DELETE FROM text_messages WHERE id = ?", (text_message_id,))
    return {"message": "Text message deleted."}


def _alarm(r: dict[str, Any]) -> dict[str, Any]:
    return {
        "alarm_id": r["id"],
        "time": r["time"],
        "label": r["label"],
        "repeat_days": [d for d in (r["repeat_days"] or "").split(",") if d],
        "enabled": bool(r["enabled"]),
    }


def _days(value: list | None) -> str | None:
    if value is None:
        return None
    bad = [d for d in value if d not in _DAYS]
    if bad:
        raise ApiError(422, f"Unknown day(s) {bad}; use {list(_DAYS)}.")
    return ",".join(d for d in _DAYS if d in value)


def _time(value: str | None) -> str | None:
    if value is not None and not re.fullmatch(r"([01]\d|2[0-3]):[0-5]\d", value):
        raise ApiError(422, f"time must be HH:MM (24-hour), got {value!r}.")
    return value


@api(
    "phone",
    "show_alarms",
    "GET",
    "/alarms",
    "List your alarms.",
    paged=True,
    returns=[
        {
            "alarm_id": "integer",
            "time": "string",
            "label": "string",
            "repeat_days": "list",
            "enabled": "boolean",
        }
    ],
)
def show_alarms(ctx: AppContext, uid: int, page_index: int, page_limit: int) -> list[dict[str, Any]]:
    sql = "SELECT * FROM alarms WHERE user_id = ? ORDER BY id" + paging(page_index, page_limit)
    return [_alarm(r) for r in ctx.q("phone", sql, (uid,))]


@api(
    "phone",
    "show_alarm",
    "GET",
    "/alarms/{alarm_id}",
    "Show one alarm.",
    _AID,
    returns={"alarm_id": "integer", "time": "string", "label": "string", "enabled": "boolean"},
)
def show_alarm(ctx: AppContext, uid: int, alarm_id: int) -> dict[str, Any]:
    return _alarm(
        ctx.one("phone", "SELECT * FROM alarms WHERE id = ? AND user_id = ?", (alarm_id, uid), "alarm")
    )


@api(
    "phone",
    "create_alarm",
    "POST",
    "/alarms",
    "Create an alarm.",
    Param("time", "string", "Time as HH:MM, 24-hour.", required=True, nullable=False),
    Param("label", "string", "Label.", default=""),
    Param("repeat_days", "list", "Days it repeats on, e.g. ['mon'].", default=[]),
    Param("enabled", "boolean", "Whether it is on.", default=True, nullable=False),
    returns={"alarm_id": "integer", "message": "string"},
)
def create_alarm(
    ctx: AppContext, uid: int, time: str, label: str | None, repeat_days: list | None, enabled: bool
) -> dict[str, Any]:
    aid = ctx.dbs.insert(
        "phone",
        "alarms",
        {
            "user_id": uid,
            "time": _time(time),
            "label": label or "",
            "repeat_days": _days(repeat_days or []),
            "enabled": int(enabled),
            "created_at": ctx.now_str,
        },
    )
    return {"alarm_id": aid, "message": "Alarm created."}


@api(
    "phone",
    "update_alarm",
    "PATCH",
    "/alarms/{alarm_id}",
    "Update an alarm.",
    _AID,
    Param("time", "string", "New time as HH:MM."),
    Param("label", "string", "New label."),
    Param("repeat_days", "list", "New repeat days."),
    Param("enabled", "boolean", "Turn it on or off."),
)
def update_alarm(
    ctx: AppContext,
    uid: int,
    alarm_id: int,
    time: str | None,
    label: str | None,
    repeat_days: list | None,
    enabled: bool | None,
) -> dict[str, str]:
    ctx.one("phone", "SELECT id FROM alarms WHERE id = ? AND user_id = ?", (alarm_id, uid), "alarm")
    for col, val in (
        ("time", _time(time)),
        ("label", label),
        ("repeat_days", _days(repeat_days)),
        ("enabled", None if enabled is None else int(enabled)),
    ):
        if val is not None:
            ctx.dbs.execute("phone", f"UPDATE alarms SET {col} = ? WHERE id = ?", (val, alarm_id))
    return {"message": "Alarm updated."}


@api("phone", "delete_alarm", "DELETE", "/alarms/{alarm_id}", "Delete an alarm.", _AID)
def delete_alarm(ctx: AppContext, uid: int, alarm_id: int) -> dict[str, str]:
    ctx.one("phone", "SELECT id FROM alarms WHERE id = ? AND user_id = ?", (alarm_id, uid), "alarm")
    ctx.dbs.execute("phone", "DELETE FROM alarms WHERE id = ?", (alarm_id,))
    return {"message": "Alarm deleted."}
