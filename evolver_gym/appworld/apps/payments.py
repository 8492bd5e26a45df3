"""The ``payments`` app: friends, balance, money transfers and payment requests."""

from __future__ import annotations

from typing import Any

from ..apis import ApiError, AppContext, Param, api, paging

__all__: list[str] = []

_EMAIL = Param("user_email", "string", "Email of the other user.", required=True, nullable=False)
_RID = Param("payment_request_id", "integer", "ID of the payment request.", required=True, nullable=False)
_AMOUNT = Param("amount", "number", "Amount in dollars.", required=True, nullable=False, min=0.01)


def _user(ctx: AppContext, email: str) -> dict[str, Any]:
    return ctx.one("payments", "SELECT * FROM users WHERE email = ?", (email.strip().lower(),), "user")


def _names(ctx: AppContext, ids: set[int]) -> dict[int, dict[str, str]]:
    marks = ",".join("?" * len(ids))
    rows = ctx.q(
        "payments", f"SELECT id, first_name, last_name, email FROM users WHERE id IN ({marks})", list(ids)
    )
    return {r["id"]: {"name": f"{r['first_name']} {r['last_name']}", "email": r["email"]} for r in rows}


def _tx(ctx: AppContext, rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    if not rows:
        return []
    who = _names(ctx, {r["sender_id"] for r in rows} | {r["receiver_id"] for r in rows})
    return [
        {
            "transaction_id": r["id"],
            "sender": who[r["sender_id"]],
            "receiver": who[r["receiver_id"]],
            "amount": r["amount"],
            "description": r["description"],
            "created_at": r["created_at"],
        }
        for r in rows
    ]


def _req(ctx: AppContext, rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    if not rows:
        return []
    who = _names(ctx, {r["requester_id"] for r in rows} | {r["payer_id"] for r in rows})
    return [
        {
            "payment_request_id": r["id"],
            "requester": who[r["requester_id"]],
            "payer": who[r["payer_id"]],
            "amount": r["amount"],
            "description": r["description"],
            "status": r["status"],
            "created_at": r["created_at"],
            "resolved_at": r["resolved_at"],
        }
        for r in rows
    ]


def _move(ctx: AppContext, sender: int, receiver: int, amount: float, description: str) -> int:
    bal = ctx.one("payments", "SELECT balance FROM users WHERE id = ?", (sender,), "account")["balance"]
    if bal + 1e-9 < amount:
        raise ApiError(422, f"Insufficient balance: {bal:.2f} < {amount:.2f}.")
    ctx.dbs.execute(
        "payments", "UPDATE users SET balance = round(balance - ?, 2) WHERE id = ?", (amount, sender)
    )
    ctx.dbs.execute(
        "payments", "UPDATE users SET balance = round(balance + ?, 2) WHERE id = ?", (amount, receiver)
    )
    return ctx.dbs.insert(
        "payments",
        "transactions",
        {
            "sender_id": sender,
            "receiver_id": receiver,
            "amount": round(amount, 2),
            "description": description,
            "created_at": ctx.now_str,
        },
    )


@api("payments", "show_balance", "GET", "/balance", "Show your balance.", returns={"balance": "number"})
def show_balance(ctx: AppContext, uid: int) -> dict[str, float]:
    return {"balance": ctx.one("payments", "SELECT balance FROM users WHERE id = ?", (uid,))["balance"]}


@api(
    "payments",
    "show_friends",
    "GET",
    "/friends",
    "List your friends on the app.",
    Param("query", "string", "Text in the name or email."),
    paged=True,
    returns=[{"name": "string", "email": "string", "friends_since": "string"}],
)
def show_friends(
    ctx: AppContext, uid: int, query: str | None, page_index: int, page_limit: int
) -> list[dict]:
    sql, args = (
        (
            "SELECT u.first_name, u.last_name, u.email, f.created_at FROM friendships f JOIN users u "
            "ON u.id = f.friend_id WHERE f.user_id = ?"
        ),
        [uid],
    )
    if query:
        sql += " AND (u.first_name || ' ' || u.last_name || ' ' || u.email) LIKE ?"
        args.append(f"%{query}%")
    return [
        {"name": f"{r['first_name']} {r['last_name']}", "email": r["email"], "friends_since": r["created_at"]}
        for r in ctx.q("payments", sql + " ORDER BY f.id" + paging(page_index, page_limit), args)
    ]


@api("payments", "add_friend", "POST", "/friends", "Add a friend by email.", _EMAIL)
def add_friend(ctx: AppContext, uid: int, user_email: str) -> dict[str, str]:
    other = _user(ctx, user_email)
    if other["id"] == uid or ctx.q(
        "payments", "SELECT id FROM friendships WHERE user_id = ? AND friend_id = ?", (uid, other["id"])
    ):
        raise ApiError(409, "Already friends (or yourself).")
    ctx.dbs.insert(
        "payments", "friendships", {"user_id": uid, "friend_id": other["id"], "created_at": ctx.now_str}
    )
    return {"message": "Friend added."}


@api("payments", "remove_friend", "DELETE", "/friends/{user_email}", "Remove a friend.", _EMAIL)
def remove_friend(ctx: AppContext, uid: int, user_email: str) -> dict[str, str]:
    other = _user(ctx, user_email)
    ctx.one(
        "payments",
        "SELECT id FROM friendships WHERE user_id = ? AND friend_id = ?",
        (uid, other["id"]),
        "friendship",
    )
    ctx.dbs.execute(
        "payments", "DELETE FROM friendships WHERE user_id = ? AND friend_id = ?", (uid, other["id"])
    )
    return {"message": "Friend removed."}


@api(
    "payments",
    "show_transactions",
    "GET",
    "/transactions",
    "List your transactions, newest first; filter by direction, the other user, and time range.",
    Param(
        "direction",
        "string",
        "'sent', 'received' or 'any'.",
        default="any",
        nullable=False,
        choices=("sent", "received", "any"),
    ),
    Param("user_email", "string", "Only transactions with this user."),
    Param("min_created_at", "string", "Only transactions at or after this ISO date-time."),
    Param("max_created_at", "string", "Only transactions at or before this ISO date-time."),
    paged=True,
    returns=[
        {
            "transaction_id": "integer",
            "sender": "dict",
            "receiver": "dict",
            "amount": "number",
            "description": "string",
            "created_at": "string",
        }
    ],
)
def show_transactions(
    ctx: AppContext,
    uid: int,
    direction: str,
    user_email: str | None,
    min_created_at: str | None,
    max_created_at: str | None,
    page_index: int,
    page_limit: int,
) -> list[dict[str, Any]]:
    cond = {
        "sent": "sender_id = ?",
        "received": "receiver_id = ?",
        "any": "(sender_id = ? OR receiver_id = ?)",
    }
    sql = f"SELECT * FROM transactions WHERE {cond[direction]}"
    args: list[Any] = [uid] * (2 if direction == "any" else 1)
    if user_email:
        other = ctx.q("payments", "SELECT id FROM users WHERE email = ?", (user_email.strip().lower(),))
        sql += " AND (sender_id = ? OR receiver_id = ?)"
        args += [other[0]["id"] if other else -1] * 2
    if min_created_at:
        sql += " AND created_at >= ?"
        args.append(min_created_at)
    if max_created_at:
        sql += " AND created_at <= ?"
        args.append(max_created_at)
    return _tx(
        ctx,
        ctx.q("payments", sql + " ORDER BY created_at DESC, id DESC" + paging(page_index, page_limit), args),
    )


@api(
    "payments",
    "show_transaction",
    "GET",
    "/transactions/{transaction_id}",
    "Show one transaction.",
    Param("transaction_id", "integer", "ID of the transaction.", required=True, nullable=False),
    returns={"transaction_id": "integer", "amount": "number"},
)
def show_transaction(ctx: AppContext, uid: int, transaction_id: int) -> dict[str, Any]:
    return _tx(
        ctx,
        [
            ctx.one(
                "payments",
                "SELECT * FROM transactions WHERE id = ? AND (sender_id = ? OR receiver_id = ?)",
                (transaction_id, uid, uid),
                "transaction",
            )
        ],
    )[0]


@api(
    "payments",
    "send_money",
    "POST",
    "/transactions",
    "Send money from your balance to another user.",
    Param("receiver_email", "string", "Email of the receiver.", required=True, nullable=False),
    _AMOUNT,
    Param("description", "string", "What it is for.", default=""),
    returns={"transaction_id": "integer", "message": "string"},
)
def send_money(
    ctx: AppContext, uid: int, receiver_email: str, amount: float, description: str | None
) -> dict:
    other = _user(ctx, receiver_email)
    if other["id"] == uid:
        raise ApiError(422, "You cannot send money to yourself.")
    return {
        "transaction_id": _move(ctx, uid, other["id"], float(amount), description or ""),
        "message": "Sent.",
    }


@api(
    "payments",
    "add_to_balance",
    "POST",
    "/balance",
    "Top up your balance from one of your payment cards.",
    _AMOUNT,
    Param(
        "payment_card_id",
        "integer",
        "ID of the card (see supervisor payment cards).",
        required=True,
        nullable=False,
    ),
)
def add_to_balance(ctx: AppContext, uid: int, amount: float, payment_card_id: int) -> dict[str, str]:
    if uid != ctx.supervisor_id or not ctx.q(
        "supervisor", "SELECT id FROM payment_cards WHERE id = ?", (payment_card_id,)
    ):
        raise ApiError(404, "The payment card does not exist.")
    ctx.dbs.execute(
        "payments", "UPDATE users SET balance = round(balance + ?, 2) WHERE id = ?", (amount, uid)
    )
    return {"message": "Balance topped up."}


@api(
    "payments",
    "show_payment_requests",
    "GET",
    "/payment_requests",
    "List payment requests, newest first: those you received (you pay) or sent (you asked).",
    Param(
        "direction",
        "string",
        "'received' or 'sent'.",
        default="received",
        nullable=False,
        choices=("received", "sent"),
    ),
    Param(
        "status",
        "string",
        "'pending', 'approved', 'denied' or None for all.",
        choices=("pending", "approved", "denied", None),
    ),
    paged=True,
    returns=[
        {
            "payment_request_id": "integer",
            "requester": "dict",
            "payer": "dict",
            "amount": "number",
            "description": "string",
            "status": "string",
            "created_at": "string",
        }
    ],
)
def show_payment_requests(
    ctx: AppContext, uid: int, direction: str, status: str | None, page_index: int, page_limit: int
) -> list[dict[str, Any]]:
    col = "payer_id" if direction == "received" else "requester_id"
    sql, args = f"SELECT * FROM payment_requests WHERE {col} = ?", [uid]
    if status:
        sql += " AND status = ?"
        args.append(status)
    return _req(
        ctx,
        ctx.q("payments", sql + " ORDER BY created_at DESC, id DESC" + paging(page_index, page_limit), args),
    )


@api(
    "payments",
    "show_payment_request",
    "GET",
    "/payment_requests/{payment_request_id}",
    "Show one payment request.",
    _RID,
    returns={"payment_request_id": "integer", "status": "string"},
)
def show_payment_request(ctx: AppContext, uid: int, payment_request_id: int) -> dict[str, Any]:
    return _req(
        ctx,
        [
            ctx.one(
                "payments",
                "SELECT * FROM payment_requests WHERE id = ? AND (payer_id = ? OR requester_id = ?)",
                (payment_request_id, uid, uid),
                "payment request",
            )
        ],
    )[0]


@api(
    "payments",
    "create_payment_request",
    "POST",
    "/payment_requests",
    "Ask another user to pay you.",
    _EMAIL,
    _AMOUNT,
    Param("description", "string", "What it is for.", default=""),
    returns={"payment_request_id": "integer", "message": "string"},
)
def create_payment_request(
    ctx: AppContext, uid: int, user_email: str, amount: float, description: str | None
):
    other = _user(ctx, user_email)
    if other["id"] == uid:
        raise ApiError(422, "You cannot request money from yourself.")
    rid = ctx.dbs.insert(
        "payments",
        "payment_requests",
        {
            "requester_id": uid,
            "payer_id": other["id"],
            "amount": round(float(amount), 2),
            "description": description or "",
            "status": "pending",
            "created_at": ctx.now_str,
            "resolved_at": None,
        },
    )
    return {"payment_request_id": rid, "message": "Payment request sent."}


def _pending(ctx: AppContext, uid: int, rid: int) -> dict[str, Any]:
    row = ctx.one(
        "payments",
        "SELECT * FROM payment_requests WHERE id = ? AND payer_id = ?",
        (rid, uid),
        "payment request",
    )
    if row["status"] != "pending":
        raise ApiError(409, f"The payment request is already {row['status']}.")
    return row


@api(
    "payments",
    "approve_payment_request",
    "POST",
    "/payment_requests/{payment_request_id}/approve",
    "Approve a payment request you received: the amount is paid from your balance.",
    _RID,
)
def approve_payment_request(ctx: AppContext, uid: int, payment_request_id: int) -> dict[str, str]:
    row = _pending(ctx, uid, payment_request_id)
    _move(ctx, uid, row["requester_id"], row["amount"], row["description"])
    ctx.dbs.execute(
        "payments",
        "UPDATE payment_requests SET status = 'approved', resolved_at = ? WHERE id = ?",
        (ctx.now_str, payment_request_id),
    )
    return {"message": "Payment request approved."}


@api(
    "payments",
    "deny_payment_request",
    "POST",
    "/payment_requests/{payment_request_id}/deny",
    "Deny a payment request you received.",
    _RID,
)
def deny_payment_request(ctx: AppContext, uid: int, payment_request_id: int) -> dict[str, str]:
    _pending(ctx, uid, payment_request_id)
    ctx.dbs.execute(
        "payments",
        "UPDATE payment_requests SET status = 'denied', resolved_at = ? WHERE id = ?",
        (ctx.now_str, payment_request_id),
    )
    return {"message": "Payment request denied."}
