"""Account APIs every user app shares: login, logout, account and profile views, renames, passwords.

* ``register_account_apis`` - add the account APIs to one app.

The login username is the account's email, except for the phone app, which logs in by phone number.
"""

from __future__ import annotations

from typing import Any

from ..apis import APP_DESCRIPTIONS, ApiError, AppContext, Param, api
from ..world import USER_APPS

__all__ = ["register_account_apis", "person_view"]


def person_view(row: dict[str, Any]) -> dict[str, Any]:
    return {"first_name": row["first_name"], "last_name": row["last_name"], "email": row["email"]}


def register_account_apis(app: str, login_by: str) -> None:
    label = "phone number" if login_by == "phone_number" else "email address"

    @api(
        app,
        "login",
        "POST",
        "/auth/token",
        f"Log in to your {app} account with your {label} and password; "
        "returns an access token for the other APIs.",
        Param("username", "string", f"Your {label}.", required=True, nullable=False),
        Param("password", "string", "Your account password.", required=True, nullable=False),
        auth=False,
        returns={"access_token": "string", "token_type": "string"},
    )
    def login(ctx: AppContext, _uid: Any, username: str, password: str) -> dict[str, Any]:
        rows = ctx.q(app, f"SELECT id, password FROM users WHERE {login_by} = ?", (username.strip(),))
        if not rows or rows[0]["password"] != password:
            raise ApiError(401, "Invalid credentials.")
        return {"access_token": ctx.issue_token(app, rows[0]["id"]), "token_type": "Bearer"}

    @api(app, "logout", "DELETE", "/auth/token", "Log out, invalidating the access token.")
    def logout(ctx: AppContext, uid: int) -> dict[str, Any]:
        for tok, owner in list(ctx.tokens.items()):
            if owner == (app, uid):
                del ctx.tokens[tok]
        return {"message": "Successfully logged out."}

    @api(
        app,
        "show_account",
        "GET",
        "/account",
        "Show your own account details.",
        returns={
            "first_name": "string",
            "last_name": "string",
            "email": "string",
            "phone_number": "string",
            "created_at": "string",
        },
    )
    def show_account(ctx: AppContext, uid: int) -> dict[str, Any]:
        row = ctx.one(app, "SELECT * FROM users WHERE id = ?", (uid,), "account")
        return {k: row[k] for k in ("first_name", "last_name", "email", "phone_number", "created_at")}

    @api(
        app,
        "show_profile",
        "GET",
        "/profiles/{email}",
        f"Show the public profile of a {app} user by email.",
        Param("email", "string", "Email address of the user.", required=True, nullable=False),
        returns={"first_name": "string", "last_name": "string", "email": "string"},
    )
    def show_profile(ctx: AppContext, uid: int, email: str) -> dict[str, Any]:
        return person_view(
            ctx.one(app, "SELECT * FROM users WHERE email = ?", (email.strip().lower(),), "user")
        )

    @api(
        app,
        "update_account_name",
        "PATCH",
        "/account/name",
        "Change the first and/or last name on your account.",
        Param("first_name", "string", "New first name."),
        Param("last_name", "string", "New last name."),
    )
    def update_account_name(ctx: AppContext, uid: int, first_name: str | None, last_name: str | None):
        if first_name is None and last_name is None:
            raise ApiError(422, "Give first_name, last_name or both.")
        for col, val in (("first_name", first_name), ("last_name", last_name)):
            if val is not None:
                ctx.dbs.execute(app, f"UPDATE users SET {col} = ? WHERE id = ?", (val, uid))
        return {"message": "Account name updated."}

    @api(
        app,
        "change_password",
        "PATCH",
        "/account/password",
        "Change your account password.",
        Param("old_password", "string", "Your current password.", required=True, nullable=False),
        Param(
            "new_password",
            "string",
            "The new password, at least 8 characters.",
            required=True,
            nullable=False,
        ),
    )
    def change_password(ctx: AppContext, uid: int, old_password: str, new_password: str):
        row = ctx.one(app, "SELECT password FROM users WHERE id = ?", (uid,), "account")
        if row["password"] != old_password:
            raise ApiError(401, "The old password is wrong.")
        if len(new_password) < 8:
            raise ApiError(422, "The new password must have at least 8 characters.")
        ctx.dbs.execute(app, "UPDATE users SET password = ? WHERE id = ?", (new_password, uid))
        return {"message": "Password changed."}


APP_DESCRIPTIONS.update(
    {
        "api_docs": "Look up the apps available, the APIs of each app, and the documentation of each API.",
        "supervisor": "Your supervisor's own data: profile, addresses, payment cards, account passwords; "
        "and the task you are working on, which you mark complete here.",
        "phone": "A phone: contacts and how you know them, text messages, alarms, and the current date and time.",
        "music": "A music streaming service: songs, albums, artists, your library, liked songs, playlists "
        "and play history.",
        "payments": "A peer-to-peer payments app: friends, balance, money transfers and payment requests.",
        "notes": "A note-taking app: notes with titles, content, tags and pins.",
        "todo": "A to-do list manager: projects holding tasks with due dates, priorities and labels.",
        "mail": "An email client: inbox and sent folders, reading, sending, replying and deleting emails.",
    }
)
for _app in USER_APPS:
    register_account_apis(_app, "phone_number" if _app == "phone" else "email")
