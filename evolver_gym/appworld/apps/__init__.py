"""The apps of the world; importing this package registers every API.

* ``api_docs`` and ``supervisor`` - the two utility apps (documentation; the user's own data and task).
* ``phone``, ``music``, ``payments``, ``notes``, ``todo`` - the user apps seen in every split.
* ``mail`` - the user app held out for the ``test_challenge`` split.
"""

from __future__ import annotations

from . import accounts, api_docs, mail, music, notes, payments, phone, supervisor, todo  # noqa: F401

__all__ = ["SEEN_APPS", "HELD_OUT_APPS"]

SEEN_APPS = ("phone", "music", "payments", "notes", "todo")
HELD_OUT_APPS = ("mail",)
