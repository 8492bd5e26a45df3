"""Doctest collection: this package's examples need the optional ``diplomacy`` engine; without it
they are not collected (``pip install 'evolver-gym[diplomacy]'``)."""

from importlib.util import find_spec


def _engine_installed() -> bool:
    try:
        return find_spec("diplomacy") is not None
    except (ImportError, ValueError):
        return False


collect_ignore_glob = [] if _engine_installed() else ["*.py"]
