"""The API layer: declarative API specs, parameter checking, bearer tokens and dispatch.

* ``Param`` / ``ApiSpec`` - one parameter / one API of one app (what ``api_docs`` shows).
* ``api`` - decorator registering a handler ``fn(ctx, user_id, **params)`` under an app.
* ``ApiError`` - raised by handlers; becomes a non-200 response (401, 404, 409, 422, ...).
* ``AppContext`` - per-episode state the handlers see: databases, frozen now, issued tokens.
* ``dispatch`` - validate and run one call, returning ``(status_code, json_body)``; never raises.
* ``REGISTRY`` / ``APP_DESCRIPTIONS`` - every registered API, and one line per app.

Calls behave like AppWorld's: keyword arguments only, ``access_token`` for APIs that need a
login (a missing or bad one is a 401), ``page_index`` (default 0) and ``page_limit`` (default 5,
at most 20) on list APIs, JSON in and out.
"""

from __future__ import annotations

import datetime as dt
import random
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from .db import AppDatabases

__all__ = [
    "Param",
    "ApiSpec",
    "ApiError",
    "AppContext",
    "api",
    "dispatch",
    "REGISTRY",
    "APP_DESCRIPTIONS",
    "PAGE_PARAMS",
    "MAX_PAGE_LIMIT",
]

MAX_PAGE_LIMIT = 20
_TYPES: dict[str, tuple[type, ...]] = {
    "string": (str,),
    "integer": (int,),
    "number": (int, float),
    "boolean": (bool,),
    "list": (list,),
    "any": (object,),
}
# the databases store 64-bit integers; anything wider is refused before it reaches them
INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1


def _wide_int(value: Any) -> int | None:
    """The first integer in ``value`` (nested lists and objects too) outside the 64-bit range, else None."""
    stack = [value]
    while stack:
        v = stack.pop()
        if isinstance(v, int) and not isinstance(v, bool):
            if not INT64_MIN <= v <= INT64_MAX:
                return v
        elif isinstance(v, (list, tuple)):
            stack.extend(v)
        elif isinstance(v, dict):
            stack.extend(v.values())
    return None


@dataclass(frozen=True)
class Param:
    """One API parameter as documented by ``api_docs.show_api_doc``."""

    name: str
    type: str = "string"
    description: str = ""
    required: bool = False
    default: Any = None
    constraints: tuple[str, ...] = ()
    nullable: bool = True
    min: float | None = None
    max: float | None = None
    choices: tuple[Any, ...] | None = None

    def doc(self) -> dict[str, Any]:
        constraints = list(self.constraints)
        if self.min is not None:
            constraints.append(f"value >= {self.min}")
        if self.max is not None:
            constraints.append(f"value <= {self.max}")
        if self.choices is not None:
            constraints.append(f"value in {list(self.choices)}")
        return {
            "name": self.name,
            "type": self.type,
            "required": self.required,
            "description": self.description,
            "default": self.default,
            "constraints": constraints,
        }


PAGE_PARAMS = (
    Param(
        "page_index",
        "integer",
        "The index of the page of results to return.",
        default=0,
        min=0,
        nullable=False,
    ),
    Param(
        "page_limit",
        "integer",
        "The maximum number of results per page.",
        default=5,
        min=1,
        max=MAX_PAGE_LIMIT,
        nullable=False,
    ),
)
_TOKEN = Param(
    "access_token",
    "string",
    "Access token obtained from this app's login API.",
    required=True,
    nullable=False,
)


@dataclass
class ApiSpec:
    """One API: where it lives, what it takes, what it returns, and its handler."""

    app: str
    name: str
    method: str
    path: str
    description: str
    params: tuple[Param, ...]
    auth: bool
    returns: Any
    handler: Callable[..., Any]

    def doc(self, with_schemas: bool = True) -> dict[str, Any]:
        out = {
            "app_name": self.app,
            "api_name": self.name,
            "path": self.path,
            "method": self.method,
            "description": self.description,
            "parameters": [p.doc() for p in self.params],
        }
        if with_schemas:
            out["response_schemas"] = {"success": self.returns, "failure": {"message": "string"}}
        return out


REGISTRY: dict[str, dict[str, ApiSpec]] = {}
APP_DESCRIPTIONS: dict[str, str] = {}


class ApiError(Exception):
    """A failed call: ``status`` is the HTTP-style code, ``message`` what went wrong."""

    def __init__(self, status: int, message: str):
        super().__init__(message)
        self.status = status
        self.message = message


def api(
    app: str,
    name: str,
    method: str,
    path: str,
    description: str,
    *params: Param,
    auth: bool = True,
    paged: bool = False,
    returns: Any = None,
) -> Callable:
    """Register ``fn(ctx, user_id, **params)`` as ``apis.<app>.<name>``."""

    def wrap(fn: Callable) -> Callable:
        all_params = ((_TOKEN,) if auth else ()) + tuple(params) + (PAGE_PARAMS if paged else ())
        if name in REGISTRY.setdefault(app, {}):
            raise ValueError(f"API {app}.{name} registered twice")
        REGISTRY[app][name] = ApiSpec(
            app,
            name,
            method,
            path,
            description,
            all_params,
            auth,
            returns if returns is not None else {"message": "string"},
            fn,
        )
        return fn

    return wrap


@dataclass
class AppContext:
    """Per-episode state behind the APIs."""

    dbs: AppDatabases
    now: dt.datetime
    supervisor_id: int = 1
    token_seed: int = 0
    tokens: dict[str, tuple[str, int]] = field(default_factory=dict)
    num_calls: int = 0

    def __post_init__(self) -> None:
        self._rng = random.Random(self.token_seed)

    @property
    def now_str(self) -> str:
        return self.now.replace(microsecond=0).isoformat()

    def issue_token(self, app: str, user_id: int) -> str:
        token = f"{app}-{self._rng.getrandbits(96):024x}"
        self.tokens[token] = (app, user_id)
        return token

    def q(self, app: str, sql: str, params: tuple | list = ()) -> list[dict[str, Any]]:
        return self.dbs.query(app, sql, params)

    def one(self, app: str, sql: str, params: tuple | list = (), what: str = "record") -> dict[str, Any]:
        rows = self.dbs.query(app, sql, params)
        if not rows:
            raise ApiError(404, f"The {what} does not exist.")
        return rows[0]


def _check(p: Param, value: Any) -> Any:
    if value is None:
        if p.nullable:
            return None
        raise ApiError(422, f"Parameter '{p.name}' may not be null.")
    ok = _TYPES[p.type]
    if p.type in ("integer", "number") and isinstance(value, bool) or not isinstance(value, ok):
        raise ApiError(
            422, f"Parameter '{p.name}' must be of type {p.type}, got {type(value).__name__} {value!r:.60}."
        )
    if p.type == "integer" and isinstance(value, float):
        raise ApiError(422, f"Parameter '{p.name}' must be an integer, got {value!r}.")
    wide = _wide_int(value)
    if wide is not None:
        raise ApiError(
            422,
            f"Parameter '{p.name}' holds an integer of {wide.bit_length()} bits; integers must be 64-bit integers "
            f"(between {INT64_MIN} and {INT64_MAX}).",
        )
    if p.min is not None and value < p.min:
        raise ApiError(422, f"Parameter '{p.name}' must be >= {p.min}, got {value!r}.")
    if p.max is not None and value > p.max:
        raise ApiError(422, f"Parameter '{p.name}' must be <= {p.max}, got {value!r}.")
    if p.choices is not None and value not in p.choices:
        raise ApiError(422, f"Parameter '{p.name}' must be one of {list(p.choices)}, got {value!r}.")
    return value


def dispatch(ctx: AppContext, app: str, name: str, kwargs: dict[str, Any]) -> tuple[int, Any]:
    """Run ``apis.<app>.<name>(**kwargs)``; returns ``(status, body)`` and never raises."""
    ctx.num_calls += 1
    spec = REGISTRY.get(app, {}).get(name)
    if spec is None:
        if app not in REGISTRY:
            return 404, {"message": f"No app named '{app}'. Apps: {sorted(REGISTRY)}."}
        return 404, {"message": f"No API named '{name}' in app '{app}'."}
    if not isinstance(kwargs, dict):
        return 422, {"message": "Arguments must be given as keyword arguments."}
    known = {p.name: p for p in spec.params}
    unknown = sorted(set(kwargs) - set(known))
    if unknown:
        return 422, {"message": f"Unexpected parameter(s) {unknown} for {app}.{name}."}
    try:
        values = {}
        for p in spec.params:
            if p.name in kwargs:
                values[p.name] = _check(p, kwargs[p.name])
            elif p.required:
                if p.name == "access_token":
                    raise ApiError(
                        401,
                        "You are either not authorized to access this API endpoint or your "
                        "access token is missing, invalid or expired.",
                    )
                raise ApiError(422, f"Missing required parameter '{p.name}' for {app}.{name}.")
            else:
                values[p.name] = p.default
        user_id = None
        if spec.auth:
            token = values.pop("access_token")
            owner = ctx.tokens.get(token) if isinstance(token, str) else None
            if owner is None or owner[0] != app:
                raise ApiError(
                    401,
                    "You are either not authorized to access this API endpoint or your "
                    "access token is missing, invalid or expired.",
                )
            user_id = owner[1]
        return 200, spec.handler(ctx, user_id, **values)
    except ApiError as e:
        return e.status, {"message": e.message}
    except Exception as e:  # a handler bug must not take the environment down
        return 500, {"message": f"Internal error in {app}.{name}: {type(e).__name__}: {e}"}


def paging(page_index: int, page_limit: int) -> str:
    """SQL ``LIMIT/OFFSET`` for a page (values already validated); an offset past SQLite's range is an empty page.

    Example:
        >>> paging(2, 5)
        ' LIMIT 5 OFFSET 10'
        >>> paging(2**62, 20) == f" LIMIT 20 OFFSET {INT64_MAX}"
        True
    """
    return f" LIMIT {int(page_limit)} OFFSET {min(int(page_index) * int(page_limit), INT64_MAX)}"
