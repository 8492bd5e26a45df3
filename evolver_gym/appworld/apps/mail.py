"""The ``mail`` app (held out for the challenge split): inbox, sent folder, reading, sending, replying."""

from __future__ import annotations

from typing import Any

from ..apis import ApiError, AppContext, Param, api, paging

__all__: list[str] = []

_EID = Param("email_id", "integer", "ID of the email.", required=True, nullable=False)
_MAIL = {
    "email_id": "integer",
    "folder": "string",
    "sender": "string",
    "recipient": "string",
    "subject": "string",
    "body": "string",
    "is_read": "boolean",
    "sent_at": "string",
}


def _mail(r: dict[str, Any]) -> dict[str, Any]:
    return {
        "email_id": r["id"],
        "folder": r["folder"],
        "sender": r["sender"],
        "recipient": r["recipient"],
        "subject": r["subject"],
        "body": r["body"],
        "is_read": bool(r["is_read"]),
        "sent_at": r["sent_at"],
    }


def _own(ctx: AppContext, uid: int, eid: int) -> dict[str, Any]:
    return ctx.one("mail", "SELECT * FROM emails WHERE id = ? AND owner_id = ?", (eid, uid), "email")


def _deliver(ctx: AppContext, uid: int, to: str, subject: str, body: str) -> int:
    me = ctx.one("mail", "SELECT email FROM users WHERE id = ?", (uid,))["email"]
    other = ctx.q("mail", "SELECT id FROM users WHERE email = ?", (to.strip().lower(),))
    if not other:
        raise ApiError(404, f"No mail user with address {to!r}.")
    eid = ctx.dbs.insert(
        "mail",
        "emails",
        {
            "owner_id": uid,
            "folder": "sent",
            "sender": me,
            "recipient": to.strip().lower(),
            "subject": subject,
            "body": body,
            "is_read": 1,
            "sent_at": ctx.now_str,
        },
    )
    ctx.dbs.insert(
        "mail",
        "emails",
        {
            "owner_id": other[0]["id"],
            "folder": "inbox",
            "sender": me,
            "recipient": to.strip().lower(),
            "subject": subject,
            "body": body,
            "is_read": 0,
            "sent_at": ctx.now_str,
        },
    )
    return eid


@api(
    "mail",
    "show_emails",
    "GET",
    "/emails",
    "List emails in a folder, newest first; filter by sender, recipient, text, read state.",
    Param(
        "folder", "string", "'inbox' or 'sent'.", default="inbox", nullable=False, choices=("inbox", "sent")
    ),
    Param("sender", "string", "Sender's address."),
    Param("recipient", "string", "Recipient's address."),
    Param("query", "string", "Text in the subject or body."),
    Param("is_read", "boolean", "Read state."),
    paged=True,
    returns=[_MAIL],
)
def show_emails(
    ctx: AppContext,
    uid: int,
    folder: str,
    sender: str | None,
    recipient: str | None,
    query: str | None,
    is_read: bool | None,
    page_index: int,
    page_limit: int,
) -> list[dict]:
    sql, args = "SELECT * FROM emails WHERE owner_id = ? AND folder = ?", [uid, folder]
    for cond, val in (
        ("sender = ?", sender and sender.strip().lower()),
        ("recipient = ?", recipient and recipient.strip().lower()),
        ("(subject || ' ' || body) LIKE ?", f"%{query}%" if query else None),
        ("is_read = ?", None if is_read is None else int(is_read)),
    ):
        if val is not None:
            sql += f" AND {cond}"
            args.append(val)
    return [
        _mail(r)
        for r in ctx.q("mail", sql + " ORDER BY sent_at DESC, id DESC" + paging(page_index, page_limit), args)
    ]


@api(
    "mail",
    "show_email",
    "GET",
    "/emails/{email_id}",
    "Show one email (does not mark it read).",
    _EID,
    returns=_MAIL,
)
def show_email(ctx: AppContext, uid: int, email_id: int) -> dict[str, Any]:
    return _mail(_own(ctx, uid, email_id))


@api(
    "mail",
    "send_email",
    "POST",
    "/emails",
    "Send an email.",
    Param("recipient", "string", "Recipient's address.", required=True, nullable=False),
    Param("subject", "string", "Subject.", required=True, nullable=False),
    Param("body", "string", "Body.", default=""),
    returns={"email_id": "integer", "message": "string"},
)
def send_email(ctx: AppContext, uid: int, recipient: str, subject: str, body: str | None) -> dict[str, Any]:
    return {"email_id": _deliver(ctx, uid, recipient, subject, body or ""), "message": "Email sent."}


@api(
    "mail",
    "reply_to_email",
    "POST",
    "/emails/{email_id}/reply",
    "Reply to the sender of an email; the subject becomes 'Re: <subject>'.",
    _EID,
    Param("body", "string", "Body.", required=True, nullable=False),
    returns={"email_id": "integer", "message": "string"},
)
def reply_to_email(ctx: AppContext, uid: int, email_id: int, body: str) -> dict[str, Any]:
    row = _own(ctx, uid, email_id)
    subject = row["subject"] if row["subject"].startswith("Re: ") else f"Re: {row['subject']}"
    return {"email_id": _deliver(ctx, uid, row["sender"], subject, body), "message": "Reply sent."}


@api(
    "mail",
    "mark_email",
    "PATCH",
    "/emails/{email_id}",
    "Mark an email read or unread.",
    _EID,
    Param("is_read", "boolean", "True for read.", required=True, nullable=False),
)
def mark_email(ctx: AppContext, uid: int, email_id: int, is_read: bool) -> dict[str, str]:
    _own(ctx, uid, email_id)
    ctx.dbs.execute("mail", "UPDATE emails SET is_read = ? WHERE id = ?", (int(is_read), email_id))
    return {"message": "Email updated."}


@api("mail", "delete_email", "DELETE", "/emails/{email_id}", "Delete an email.", _EID)
def delete_email(ctx: AppContext, uid: int, email_id: int) -> dict[str, str]:
    _own(ctx, uid, email_id)
    ctx.dbs.execute("mail", "DELETE FROM emails WHERE id = ?", (email_id,))
    return {"message": "Email deleted."}
