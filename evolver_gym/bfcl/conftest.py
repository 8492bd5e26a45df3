"""Doctest collection: this package's examples need bfcl-eval; without it they are not collected."""

from evolver_gym.bfcl.package import bfcl_available

collect_ignore_glob = [] if bfcl_available() else ["*.py"]
