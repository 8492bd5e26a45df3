"""The ``notes`` app: notes with titles, content, tags and pins."""

from __future__ import annotations

from typing import Any

from ..apis import ApiError, AppContext, Param, api, paging

__all__: list[str] = []

_NID = Param("note_id", "integer", "ID of the note.", required=True, nullable=False)
_NOTE = {
    "note_id": "integer",
    "title": "string",
    "content": "string",
    "tags": "list[string]",
    "pinned": "boolean",
    "created_at": "string",
    "updated_at": "string",
}


def _note(r: dict[str, Any]) -> dict[str, Any]:
    return {
        "note_id": r["id"],
        "title": r["title"],
        "content": r["content"],
        "tags": [t for t in (r["tags"] or "").split(",") if t],
        "pinned": bool(r["pinned"]),
        "created_at": r["created_at"],
        "updated_at": r["updated_at"],
    }


def _own(ctx: AppContext, uid: int, nid: int) -> dict[str, Any]:
    return ctx.one("notes", "SELECT * FROM notes WHERE id = ? AND owner_id = ?", (nid, uid), "note")


@api(
    "notes",
    "search_notes",
    "GET",
    "/notes",
    "List or search your notes (title and content), newest first. "
    "Content is cut to 50 characters; show_note gives the whole note.",
    Param("query", "string", "Text in the title or content."),
    Param("tag", "string", "Only notes with this tag."),
    Param("pinned", "boolean", "Only pinned (True) or unpinned (False) notes."),
    paged=True,
    returns=[_NOTE],
)
def search_notes(
    ctx: AppContext,
    uid: int,
    query: str | None,
    tag: str | None,
    pinned: bool | None,
    page_index: int,
    page_limit: int,
) -> list[dict[str, Any]]:
    sql, args = "SELECT * FROM notes WHERE owner_id = ?", [uid]
    if query:
        sql += " AND (title || ' ' || content) LIKE ?"
        args.append(f"%{query}%")
    if tag:
        sql += " AND (',' || tags || ',') LIKE ?"
        args.append(f"%,{tag},%")
    if pinned is not None:
        sql += " AND pinned = ?"
        args.append(int(pinned))
    rows = ctx.q("notes", sql + " ORDER BY updated_at DESC, id DESC" + paging(page_index, page_limit), args)
    return [{**_note(r), "content": r["content"][:50]} for r in rows]


@api("notes", "show_note", "GET", "/notes/{note_id}", "Show one note in full.", _NID, returns=_NOTE)
def show_note(ctx: AppContext, uid: int, note_id: int) -> dict[str, Any]:
    return _note(_own(ctx, uid, note_id))


@api(
    "notes",
    "create_note",
    "POST",
    "/notes",
    "Create a note.",
    Param("title", "string", "Title.", required=True, nullable=False),
    Param("content", "string", "Body.", default=""),
    Param("tags", "list", "Tags.", default=[]),
    Param("pinned", "boolean", "Pin it.", default=False, nullable=False),
    returns={"note_id": "integer", "message": "string"},
)
def create_note(ctx: AppContext, uid: int, title: str, content: str | None, tags: list | None, pinned: bool):
    if not title.strip():
        raise ApiError(422, "The title may not be empty.")
    nid = ctx.dbs.insert(
        "notes",
        "notes",
        {
            "owner_id": uid,
            "title": title,
            "content": content or "",
            "tags": ",".join(map(str, tags or [])),
            "pinned": int(pinned),
            "created_at": ctx.now_str,
            "updated_at": ctx.now_str,
        },
    )
    return {"note_id": nid, "message": "Note created."}


@api(
    "notes",
    "update_note",
    "PATCH",
    "/notes/{note_id}",
    "Change a note's title, content, tags or pin.",
    _NID,
    Param("title", "string", "New title."),
    Param("content", "string", "New content (replaces the old)."),
    Param("tags", "list", "New tags."),
    Param("pinned", "boolean", "Pin or unpin."),
)
def update_note(
    ctx: AppContext,
    uid: int,
    note_id: int,
    title: str | None,
    content: str | None,
    tags: list | None,
    pinned: bool | None,
) -> dict[str, str]:
    _own(ctx, uid, note_id)
    vals = {
        "title": title,
        "content": content,
        "tags": None if tags is None else ",".join(map(str, tags)),
        "pinned": None if pinned is None else int(pinned),
    }
    for col, val in vals.items():
        if val is not None:
            ctx.dbs.execute(
                "notes",
                f"UPDATE notes SET {col} = ?, updated_at = ? WHERE id = ?",
                (val, ctx.now_str, note_id),
            )
    return {"message": "Note updated."}


@api(
    "notes",
    "append_to_note",
    "POST",
    "/notes/{note_id}/append",
    "Append text to the end of a note, on a new line.",
    _NID,
    Param("content", "string", "Text to append.", required=True, nullable=False),
)
def append_to_note(ctx: AppContext, uid: int, note_id: int, content: str) -> dict[str, str]:
    row = _own(ctx, uid, note_id)
    new = f"{row['content']}\n{content}" if row["content"] else content
    ctx.dbs.execute(
        "notes", "UPDATE notes SET content = ?, updated_at = ? WHERE id = ?", (new, ctx.now_str, note_id)
    )
    return {"message": "Note updated."}


@api("notes", "delete_note", "DELETE", "/notes/{note_id}", "Delete a note.", _NID)
def delete_note(ctx: AppContext, uid: int, note_id: int) -> dict[str, str]:
    _own(ctx, uid, note_id)
    ctx.dbs.execute("notes", "DELETE FROM notes WHERE id = ?", (note_id,))
    return {"message": "Note deleted."}


@api("notes", "show_tags", "GET", "/tags", "List the tags used on your notes.", returns=["string"])
def show_tags(ctx: AppContext, uid: int) -> list[str]:
    tags = {
        t
        for r in ctx.q("notes", "SELECT tags FROM notes WHERE owner_id = ?", (uid,))
        for t in (r["tags"] or "").split(",")
        if t
    }
    return sorted(tags)
