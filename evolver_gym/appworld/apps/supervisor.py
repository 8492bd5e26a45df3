"""The ``supervisor`` app: the user's profile, addresses, cards, account passwords and the active task."""

from __future__ import annotations

import json
from typing import Any

from ..apis import ApiError, AppContext, Param, api

__all__: list[str] = []


@api(
    "supervisor",
    "show_profile",
    "GET",
    "/profile",
    "Show your supervisor's profile: name, email, phone number, birthday.",
    auth=False,
    returns={
        "first_name": "string",
        "last_name": "string",
        "email": "string",
        "phone_number": "string",
        "birthday": "string",
    },
)
def show_profile(ctx: AppContext, _uid: Any) -> dict[str, Any]:
    row = ctx.one("phone", "SELECT * FROM users WHERE id = ?", (ctx.supervisor_id,), "profile")
    born = ctx.q(
        "phone", "SELECT birthday FROM contacts WHERE phone_number = ? LIMIT 1", (row["phone_number"],)
    )
    return {
        "first_name": row["first_name"],
        "last_name": row["last_name"],
        "email": row["email"],
        "phone_number": row["phone_number"],
        "birthday": born[0]["birthday"] if born else None,
    }


@api(
    "supervisor",
    "show_addresses",
    "GET",
    "/addresses",
    "List your supervisor's saved addresses.",
    auth=False,
    returns=[
        {
            "name": "string",
            "street_address": "string",
            "city": "string",
            "state": "string",
            "zip_code": "string",
        }
    ],
)
def show_addresses(ctx: AppContext, _uid: Any) -> list[dict[str, Any]]:
    return [
        {k: r[k] for k in ("name", "street_address", "city", "state", "zip_code")}
        for r in ctx.q("supervisor", "SELECT * FROM addresses ORDER BY id")
    ]


@api(
    "supervisor",
    "show_payment_cards",
    "GET",
    "/payment_cards",
    "List your supervisor's payment cards.",
    auth=False,
    returns=[
        {
            "payment_card_id": "integer",
            "card_name": "string",
            "owner_name": "string",
            "card_number": "string",
            "expiry_date": "string",
            "cvv": "string",
        }
    ],
)
def show_payment_cards(ctx: AppContext, _uid: Any) -> list[dict[str, Any]]:
    return [
        {
            "payment_card_id": r["id"],
            **{k: r[k] for k in ("card_name", "owner_name", "card_number", "expiry_date", "cvv")},
        }
        for r in ctx.q("supervisor", "SELECT * FROM payment_cards ORDER BY id")
    ]


@api(
    "supervisor",
    "show_account_passwords",
    "GET",
    "/account_passwords",
    "List the passwords of your supervisor's app accounts.",
    auth=False,
    returns=[{"account_name": "string", "password": "string"}],
)
def show_account_passwords(ctx: AppContext, _uid: Any) -> list[dict[str, Any]]:
    return [
        {"account_name": r["account_name"], "password": r["password"]}
        for r in ctx.q("supervisor", "SELECT * FROM account_passwords ORDER BY id")
    ]


@api(
    "supervisor",
    "show_active_task",
    "GET",
    "/active_task",
    "Show the task you are working on and its status.",
    auth=False,
    returns={"task_id": "string", "instruction": "string", "status": "string"},
)
def show_active_task(ctx: AppContext, _uid: Any) -> dict[str, Any]:
    row = ctx.one("supervisor", "SELECT * FROM active_task ORDER BY id DESC LIMIT 1", (), "active task")
    return {"task_id": row["task_id"], "instruction": row["instruction"], "status": row["status"]}


@api(
    "supervisor",
    "complete_task",
    "POST",
    "/active_task/complete",
    "Mark the active task as done. Give the answer for questions (None for tasks that only ask for "
    "actions), and status 'fail' if you cannot complete it.",
    Param("answer", "any", "The answer to the task's question, if it asks one."),
    Param(
        "status",
        "string",
        "'success' or 'fail'.",
        default="success",
        nullable=False,
        choices=("success", "fail"),
    ),
    auth=False,
)
def complete_task(ctx: AppContext, _uid: Any, answer: Any, status: str) -> dict[str, Any]:
    row = ctx.one("supervisor", "SELECT * FROM active_task ORDER BY id DESC LIMIT 1", (), "active task")
    if row["status"] != "active":
        raise ApiError(409, "The task is already completed.")
    try:
        encoded = None if answer is None else json.dumps(answer)
    except (TypeError, ValueError) as e:
        raise ApiError(422, f"The answer must be JSON-serialisable: {e}") from e
    ctx.dbs.execute(
        "supervisor",
        "UPDATE active_task SET status = ?, answer = ? WHERE id = ?",
        (status, encoded, row["id"]),
    )
    return {"message": "Task marked complete."}
