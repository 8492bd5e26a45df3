"""The ``api_docs`` app: app list, API list per app, one API's documentation, keyword search."""

from __future__ import annotations

import re
from typing import Any

from ..apis import APP_DESCRIPTIONS, REGISTRY, ApiError, AppContext, Param, api, paging  # noqa: F401

__all__: list[str] = []

_APP = Param("app_name", "string", "Name of the app.", required=True, nullable=False)


def _spec(app_name: str, api_name: str | None = None):
    if app_name not in REGISTRY:
        raise ApiError(404, f"No app named '{app_name}'. Apps: {sorted(REGISTRY)}.")
    if api_name is None:
        return REGISTRY[app_name]
    if api_name not in REGISTRY[app_name]:
        raise ApiError(404, f"No API named '{api_name}' in app '{app_name}'.")
    return REGISTRY[app_name][api_name]


@api(
    "api_docs",
    "show_app_descriptions",
    "GET",
    "/app_descriptions",
    "List every app with a one-line description.",
    auth=False,
    returns=[{"name": "string", "description": "string"}],
)
def show_app_descriptions(ctx: AppContext, _uid: Any) -> list[dict[str, str]]:
    return [{"name": a, "description": APP_DESCRIPTIONS[a]} for a in REGISTRY]


@api(
    "api_docs",
    "show_api_descriptions",
    "GET",
    "/api_descriptions/{app_name}",
    "List the APIs of one app with a one-line description each.",
    _APP,
    auth=False,
    returns=[{"name": "string", "description": "string"}],
)
def show_api_descriptions(ctx: AppContext, _uid: Any, app_name: str) -> list[dict[str, str]]:
    return [{"name": n, "description": s.description} for n, s in _spec(app_name).items()]


@api(
    "api_docs",
    "show_api_doc",
    "GET",
    "/api_doc/{app_name}/{api_name}",
    "Show the full documentation of one API: path, method, parameters and response schemas.",
    _APP,
    Param("api_name", "string", "Name of the API.", required=True, nullable=False),
    auth=False,
    returns={
        "app_name": "string",
        "api_name": "string",
        "path": "string",
        "method": "string",
        "description": "string",
        "parameters": "list",
        "response_schemas": "dict",
    },
)
def show_api_doc(ctx: AppContext, _uid: Any, app_name: str, api_name: str) -> dict[str, Any]:
    return _spec(app_name, api_name).doc()


@api(
    "api_docs",
    "search_api_docs",
    "GET",
    "/search",
    "Search API documentation by keywords; best matches first.",
    Param("query", "string", "Keywords to look for.", required=True, nullable=False),
    auth=False,
    paged=True,
    returns=[{"app_name": "string", "api_name": "string", "description": "string"}],
)
def search_api_docs(ctx: AppContext, _uid: Any, query: str, page_index: int, page_limit: int) -> list[dict]:
    words = set(re.findall(r"[a-z]+", query.lower()))
    scored = []
    for app, specs in REGISTRY.items():
        for name, spec in specs.items():
            text = set(re.findall(r"[a-z]+", f"{app} {name.replace('_', ' ')} {spec.description}".lower()))
            score = len(words & text)
            if score:
                scored.append((-score, app, name, spec.description))
    scored.sort()
    start = page_index * page_limit
    return [
        {"app_name": a, "api_name": n, "description": d} for _, a, n, d in scored[start : start + page_limit]
    ]
