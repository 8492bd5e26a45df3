"""The ``todo`` app: projects holding tasks with due dates, priorities and labels."""

from __future__ import annotations

import datetime as dt
from typing import Any

from ..apis import ApiError, AppContext, Param, api, paging

__all__: list[str] = []

_PID = Param("project_id", "integer", "ID of the project.", required=True, nullable=False)
_TID = Param("task_id", "integer", "ID of the task.", required=True, nullable=False)
_TASK = {
    "task_id": "integer",
    "project_id": "integer",
    "title": "string",
    "due_date": "string",
    "priority": "integer (1 highest .. 4 lowest)",
    "labels": "list[string]",
    "completed": "boolean",
}


def _task(r: dict[str, Any]) -> dict[str, Any]:
    return {
        "task_id": r["id"],
        "project_id": r["project_id"],
        "title": r["title"],
        "due_date": r["due_date"],
        "priority": r["priority"],
        "labels": [x for x in (r["labels"] or "").split(",") if x],
        "completed": bool(r["completed"]),
        "completed_at": r["completed_at"],
    }


def _date(value: str | None) -> str | None:
    if value is None:
        return None
    try:
        return dt.date.fromisoformat(value).isoformat()
    except ValueError as e:
        raise ApiError(422, f"due_date must be YYYY-MM-DD, got {value!r}.") from e


def _own_task(ctx: AppContext, uid: int, tid: int) -> dict[str, Any]:
    return ctx.one("todo", "SELECT * FROM tasks WHERE id = ? AND owner_id = ?", (tid, uid), "task")


@api(
    "todo",
    "show_projects",
    "GET",
    "/projects",
    "List your projects.",
    paged=True,
    returns=[{"project_id": "integer", "name": "string", "created_at": "string"}],
)
def show_projects(ctx: AppContext, uid: int, page_index: int, page_limit: int) -> list[dict[str, Any]]:
    return [
        {"project_id": r["id"], "name": r["name"], "created_at": r["created_at"]}
        for r in ctx.q(
            "todo",
            "SELECT * FROM projects WHERE owner_id = ? ORDER BY id" + paging(page_index, page_limit),
            (uid,),
        )
    ]


@api(
    "todo",
    "create_project",
    "POST",
    "/projects",
    "Create a project.",
    Param("name", "string", "Project name.", required=True, nullable=False),
    returns={"project_id": "integer", "message": "string"},
)
def create_project(ctx: AppContext, uid: int, name: str) -> dict[str, Any]:
    pid = ctx.dbs.insert("todo", "projects", {"owner_id": uid, "name": name, "created_at": ctx.now_str})
    return {"project_id": pid, "message": "Project created."}


@api(
    "todo", "delete_project", "DELETE", "/projects/{project_id}", "Delete a project and all its tasks.", _PID
)
def delete_project(ctx: AppContext, uid: int, project_id: int) -> dict[str, str]:
    ctx.one("todo", "SELECT id FROM projects WHERE id = ? AND owner_id = ?", (project_id, uid), "project")
    ctx.dbs.execute("todo", "DELETE FROM tasks WHERE project_id = ?", (project_id,))
    ctx.dbs.execute("todo", "DELETE FROM projects WHERE id = ?", (project_id,))
    return {"message": "Project deleted."}


@api(
    "todo",
    "show_tasks",
    "GET",
    "/tasks",
    "List your tasks, ordered by due date; filter by project, completion, due-date range or text.",
    Param("project_id", "integer", "Only tasks of this project."),
    Param("completed", "boolean", "Only completed (True) or open (False) tasks."),
    Param("min_due_date", "string", "Only tasks due on or after this YYYY-MM-DD."),
    Param("max_due_date", "string", "Only tasks due on or before this YYYY-MM-DD."),
    Param("query", "string", "Text in the title."),
    paged=True,
    returns=[_TASK],
)
def show_tasks(
    ctx: AppContext,
    uid: int,
    project_id: int | None,
    completed: bool | None,
    min_due_date: str | None,
    max_due_date: str | None,
    query: str | None,
    page_index: int,
    page_limit: int,
) -> list[dict]:
    sql, args = "SELECT * FROM tasks WHERE owner_id = ?", [uid]
    for cond, val in (
        ("project_id = ?", project_id),
        ("completed = ?", None if completed is None else int(completed)),
        ("due_date >= ?", _date(min_due_date)),
        ("due_date <= ?", _date(max_due_date)),
        ("title LIKE ?", f"%{query}%" if query else None),
    ):
        if val is not None:
            sql += f" AND {cond}"
            args.append(val)
    return [
        _task(r) for r in ctx.q("todo", sql + " ORDER BY due_date, id" + paging(page_index, page_limit), args)
    ]


@api("todo", "show_task", "GET", "/tasks/{task_id}", "Show one task.", _TID, returns=_TASK)
def show_task(ctx: AppContext, uid: int, task_id: int) -> dict[str, Any]:
    return _task(_own_task(ctx, uid, task_id))


@api(
    "todo",
    "create_task",
    "POST",
    "/tasks",
    "Create a task in a project.",
    _PID,
    Param("title", "string", "Title.", required=True, nullable=False),
    Param("due_date", "string", "Due date YYYY-MM-DD."),
    Param("priority", "integer", "1 (highest) to 4 (lowest).", default=4, nullable=False, min=1, max=4),
    Param("labels", "list", "Labels.", default=[]),
    returns={"task_id": "integer", "message": "string"},
)
def create_task(
    ctx: AppContext,
    uid: int,
    project_id: int,
    title: str,
    due_date: str | None,
    priority: int,
    labels: list | None,
) -> dict[str, Any]:
    ctx.one("todo", "SELECT id FROM projects WHERE id = ? AND owner_id = ?", (project_id, uid), "project")
    tid = ctx.dbs.insert(
        "todo",
        "tasks",
        {
            "project_id": project_id,
            "owner_id": uid,
            "title": title,
            "due_date": _date(due_date),
            "priority": priority,
            "labels": ",".join(map(str, labels or [])),
            "completed": 0,
            "completed_at": None,
            "created_at": ctx.now_str,
        },
    )
    return {"task_id": tid, "message": "Task created."}


@api(
    "todo",
    "update_task",
    "PATCH",
    "/tasks/{task_id}",
    "Change a task's title, due date, priority, labels or project.",
    _TID,
    Param("title", "string", "New title."),
    Param("due_date", "string", "New due date YYYY-MM-DD."),
    Param("priority", "integer", "New priority 1..4.", min=1, max=4),
    Param("labels", "list", "New labels."),
    Param("project_id", "integer", "Move to this project."),
)
def update_task(
    ctx: AppContext,
    uid: int,
    task_id: int,
    title: str | None,
    due_date: str | None,
    priority: int | None,
    labels: list | None,
    project_id: int | None,
) -> dict[str, str]:
    _own_task(ctx, uid, task_id)
    if project_id is not None:
        ctx.one("todo", "SELECT id FROM projects WHERE id = ? AND owner_id = ?", (project_id, uid), "project")
    for col, val in (
        ("title", title),
        ("due_date", _date(due_date)),
        ("priority", priority),
        ("labels", None if labels is None else ",".join(map(str, labels))),
        ("project_id", project_id),
    ):
        if val is not None:
            ctx.dbs.execute("todo", f"UPDATE tasks SET {col} = ? WHERE id = ?", (val, task_id))
    return {"message": "Task updated."}


@api("todo", "mark_task_done", "POST", "/tasks/{task_id}/done", "Mark a task as completed.", _TID)
def mark_task_done(ctx: AppContext, uid: int, task_id: int) -> dict[str, str]:
    if _own_task(ctx, uid, task_id)["completed"]:
        raise ApiError(409, "The task is already completed.")
    ctx.dbs.execute(
        "todo", "UPDATE tasks SET completed = 1, completed_at = ? WHERE id = ?", (ctx.now_str, task_id)
    )
    return {"message": "Task completed."}


@api("todo", "reopen_task", "POST", "/tasks/{task_id}/reopen", "Mark a completed task as open again.", _TID)
def reopen_task(ctx: AppContext, uid: int, task_id: int) -> dict[str, str]:
    if not _own_task(ctx, uid, task_id)["completed"]:
        raise ApiError(409, "The task is not completed.")
    ctx.dbs.execute("todo", "UPDATE tasks SET completed = 0, completed_at = NULL WHERE id = ?", (task_id,))
    return {"message": "Task reopened."}


@api("todo", "delete_task", "DELETE", "/tasks/{task_id}", "Delete a task.", _TID)
def delete_task(ctx: AppContext, uid: int, task_id: int) -> dict[str, str]:
    _own_task(ctx, uid, task_id)
    ctx.dbs.execute("todo", "DELETE FROM tasks WHERE id = ?", (task_id,))
    return {"message": "Task deleted."}
