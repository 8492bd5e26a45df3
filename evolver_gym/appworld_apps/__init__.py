"""AppWorld's real apps, offline: a generated world on the installed ``appworld`` package's own apps.

* ``AppWorldAppsEnv`` - ``evolver/AppWorldApps-v0`` (see :mod:`.env`): agent code in this project's
  sandbox, API calls answered by the 9 real apps and their 457 APIs, judged on the database diff.
* ``AppsServer`` / ``unavailable_reason`` - the app server process and why it cannot start here
  (``appworld==0.1.3.post1`` lives in its own virtualenv: ``bash scripts/setup.sh appworld-apps``).
* ``TEMPLATES`` / ``build_tasks`` - the scenario templates and their tasks (see :mod:`.tasks`).

The apps' code ships encrypted in the package and is unpacked by its own ``appworld install``; none of
it is copied here.
"""

from __future__ import annotations

from .backend import AppsServer, AppsServerError, unavailable_reason
from .tasks import TEMPLATES, build_tasks

__all__ = ["AppWorldAppsEnv", "AppsServer", "AppsServerError", "unavailable_reason", "TEMPLATES", "build_tasks"]


def __getattr__(name: str):
    if name == "AppWorldAppsEnv":
        from .env import AppWorldAppsEnv

        return AppWorldAppsEnv
    raise AttributeError(name)
