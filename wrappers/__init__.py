"""Stackable Gymnasium wrappers: self-questioning, self-navigating and self-attributing.

* ``wrappers.questioning`` - task synthesis and curricula.
* ``wrappers.navigation`` - experience pools and experience-context injection.
* ``wrappers.attribution`` - per-step credit labels from an oracle, rules or an LLM judge.
* ``wrappers.league`` - past checkpoints of the policy as opponents of multi-seat games, with Elo (no wrapper).
"""

# Marks this package as evolver-gym's (another distribution on the registry is also named `wrappers`).
__evolver_gym_package__ = True
