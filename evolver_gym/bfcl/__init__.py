"""BFCL-v3 multi-turn as ``evolver/BFCL-v0``, on the data, simulated APIs, decoder and checker of ``bfcl-eval``.

Install the package without its dependency tree (its pins must not enter this environment)::

    pip install --no-deps bfcl-eval==2026.3.23 mpmath

* ``BFCLEnv`` (:mod:`.env`) - the environment.
* :mod:`.package` - the installed package's files and modules; :mod:`.parsing` - the guarded decoder;
  :mod:`.runtime` - live instances and the checker; :mod:`.tasks` - splits, tasks, oracle, hindsight;
  :mod:`.policies` - the baseline callers.

Importing this package does not import ``bfcl_eval``; the env does on first use and raises
``BFCLUnavailable`` (an ``ImportError``) with the install line when it is missing.
"""

from .package import CATEGORIES, BFCLUnavailable, bfcl_available

__all__ = ["BFCLEnv", "BFCLUnavailable", "CATEGORIES", "bfcl_available"]


def __getattr__(name: str):
    if name == "BFCLEnv":
        from .env import BFCLEnv

        return BFCLEnv
    raise AttributeError(name)
