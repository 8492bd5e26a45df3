"""Portability of agent code: AppWorld's 457 APIs, by real name and parameters, here and in the embedded world.

Reads the API list of the installed package (``appworld/collections/apis.pyi``, every API with its
parameters), then counts, per app:

* ``evolver/AppWorldApps-v0``: APIs served under the same app and API name, with the same parameter
  names, and reachable: a call with placeholder values for the required parameters (and no access
  token) is answered by the app's own route (any status but 404/405, which would mean no route);
* ``evolver/AppWorld-v0`` (the embedded world): APIs with the same app and API name, and with the same
  parameter names as well.

Run (needs ``bash scripts/setup.sh appworld-apps``): python benchmarks/appworld_apps_portability.py
"""

from __future__ import annotations

import ast
from collections import Counter
from pathlib import Path

from evolver_gym.appworld.apis import REGISTRY
from evolver_gym.appworld_apps.backend import AppsServer, find_python, unavailable_reason

CLASS_TO_APP = {
    "ApiDocApis": "api_docs", "SupervisorApis": "supervisor", "AmazonApis": "amazon", "PhoneApis": "phone",
    "FileSystemApis": "file_system", "SpotifyApis": "spotify", "VenmoApis": "venmo", "GmailApis": "gmail",
    "SplitwiseApis": "splitwise", "SimpleNoteApis": "simple_note", "TodoistApis": "todoist",
}  # fmt: skip
# parameters the package's stub spells by their FastAPI plumbing, not as the caller passes them
PLUMBING = {"data": ["username", "password"], "request": [], "user": []}
PLACEHOLDER = {"integer": 1, "number": 1.0, "string": "x", "boolean": True, "array": [], "object": {}}


def real_apis() -> dict[tuple[str, str], list[str]]:
    """``(app, api) -> parameter names`` from the installed package's ``collections/apis.pyi``."""
    python = Path(find_python())
    stub = next(python.parent.parent.glob("lib/python3*/site-packages/appworld/collections/apis.pyi"))
    out = {}
    for cls in ast.parse(stub.read_text()).body:
        if isinstance(cls, ast.ClassDef) and cls.name in CLASS_TO_APP:
            for fn in cls.body:
                if isinstance(fn, ast.FunctionDef):
                    names = []
                    for a in fn.args.args:
                        names += PLUMBING.get(a.arg, [a.arg])
                    out[(CLASS_TO_APP[cls.name], fn.name)] = sorted(n for n in names if n != "access_token")
    return out


def embedded_params(app: str, api: str) -> list[str] | None:
    spec = REGISTRY.get(app, {}).get(api)
    if spec is None:
        return None
    params = getattr(spec, "params", None) or getattr(spec, "parameters", None) or {}
    names = [p if isinstance(p, str) else getattr(p, "name", str(p)) for p in params]
    return sorted(n for n in names if n != "access_token")


def main() -> None:
    reason = unavailable_reason()
    if reason is not None:
        raise SystemExit(f"AppWorld's apps are not installed: {reason}")
    real = real_apis()
    with AppsServer() as server:
        server.open_world(0)
        server.request("reset", task={"instruction": "portability"})
        catalog = server.request("apis")["apis"]
        served = {
            (app, a["name"]): (sorted(p["name"] for p in a["parameters"] if p["name"] != "access_token"), a)
            for app, apis in catalog.items()
            for a in apis
        }
        rows: dict[str, Counter] = {}
        for (app, api), params in sorted(real.items()):
            c = rows.setdefault(app, Counter())
            c["total"] += 1
            if (app, api) in served:
                c["name"] += 1
                got, doc = served[(app, api)]
                c["params"] += got == params
                kwargs = {p["name"]: PLACEHOLDER.get(p["type"], "x") for p in doc["parameters"] if p["required"]}
                kwargs.pop("access_token", None)
                status = server.request("call", app=app, api=api, kwargs=kwargs)["status"]
                c["reachable"] += status not in (404, 405)
            emb = embedded_params(app, api)
            c["emb_name"] += emb is not None
            c["emb_params"] += emb is not None and emb == params
    keys = ("total", "name", "params", "reachable", "emb_name", "emb_params")
    print(
        "| app | APIs | AppWorldApps-v0: same name | same parameters | reachable "
        "| AppWorld-v0: same name | same parameters |"
    )
    print("|---|---|---|---|---|---|---|")
    total = Counter()
    for app, c in rows.items():
        total.update(c)
        print("| " + " | ".join([app, *(str(c[k]) for k in keys)]) + " |")
    share = [f"**{total[k]}** ({100 * total[k] / total['total']:.0f}%)" for k in keys[1:]]
    print("| **all** | " + " | ".join([f"**{total['total']}**", *share]) + " |")


if __name__ == "__main__":
    main()
