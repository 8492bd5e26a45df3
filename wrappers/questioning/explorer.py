"""Exploration: play an environment from the start states of seed tasks and record what happens.

* ``ExplorationPolicy`` - the protocol: ``reset(task, rng)`` then ``__call__(obs, info) -> action``.
* ``RandomExplorer`` - random over ``info["allowed_actions"]`` (novel actions first), or samples
  from the action space when the environment does not list its actions.
* ``LLMExplorer`` - a curiosity-driven LLM guided by the environment's ``profile()``: breadth first,
  then depth with a myopic window, temperature 1.
* ``CallableExplorer`` - any ``policy(obs, info) -> action`` callable.
* ``Explorer`` - runs a policy for ``n`` episodes over seed tasks and returns ``Trajectory`` records.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import Any, Protocol, runtime_checkable

import numpy as np

from evolver_gym.core import Task, Trajectory, derive_seed, make_rng, record_episode
from evolver_gym.core.llm import ChatClient, LLMError

from .prompts import explorer_messages

__all__ = ["CallableExplorer", "ExplorationPolicy", "Explorer", "LLMExplorer", "RandomExplorer"]


@runtime_checkable
class ExplorationPolicy(Protocol):
    def reset(self, task: Task, rng: np.random.Generator) -> None: ...

    def __call__(self, observation: str, info: dict[str, Any]) -> str: ...


_WORD = re.compile(r"[a-zA-Z][a-zA-Z\-]{2,}")
_STOP = frozenset("the and for with that this from you your are any can will not but have has was"
                  " was what which who need want looking find buy price lower than dollars less".split())


def _vocabulary(profile: dict[str, Any]) -> list[str]:
    words: set[str] = set()

    def walk(x: Any) -> None:
        if isinstance(x, str):
            words.update(w.lower() for w in _WORD.findall(x))
        elif isinstance(x, dict):
            for k, v in x.items():
                walk(k)
                walk(v)
        elif isinstance(x, (list, tuple)):
            for v in x:
                walk(v)

    walk(profile)
    return sorted(words - _STOP)


class RandomExplorer:
    """Random exploration over the listed actions; unseen actions are preferred (breadth).

    With ``info["available_actions"]`` (WebShop style ``{"has_search_bar", "clickables"}``) it
    clicks a clickable not clicked yet in this episode when it can, and searches with 1-3 words
    drawn from the seed instruction and the profile vocabulary. Otherwise, with a list of actions in
    ``info["allowed_actions"]`` (the environment contract's) it picks one; else it samples the action
    space. A list under ``available_actions`` is still read, as the old name, until 0.2.
    """

    def __init__(self, profile: dict[str, Any] | None = None, action_space: Any = None, *,
                 search_prob: float = 0.3, max_query_words: int = 3):
        if not 0.0 <= search_prob <= 1.0:
            raise ValueError(f"RandomExplorer.search_prob must be in [0, 1], got {search_prob!r}")
        self.vocab = _vocabulary(profile or {})
        self.action_space = action_space
        self.search_prob = search_prob
        self.max_query_words = max_query_words
        self.rng = np.random.default_rng(0)
        self.taken: set[str] = set()
        self.words: list[str] = list(self.vocab)

    def reset(self, task: Task, rng: np.random.Generator) -> None:
        self.rng = rng
        self.taken = set()
        seed_words = [w.lower() for w in _WORD.findall(task.instruction) if w.lower() not in _STOP]
        # The seed instruction's words are what users ask about: weigh them in (x3) beside the profile.
        self.words = seed_words * 3 + self.vocab or ["item"]

    def _query(self) -> str:
        k = int(self.rng.integers(1, self.max_query_words + 1))
        picks = self.rng.choice(len(self.words), size=min(k, len(self.words)), replace=False)
        return " ".join(self.words[int(i)] for i in picks)

    def __call__(self, observation: str, info: dict[str, Any]) -> str:
        avail = info.get("available_actions")
        if isinstance(avail, dict):
            clicks = [f"click[{c}]" for c in avail.get("clickables", [])]
            fresh = [c for c in clicks if c not in self.taken]
            if avail.get("has_search_bar") and (not clicks or self.rng.random() < self.search_prob or not fresh):
                action = f"search[{self._query()}]"
            else:
                options = fresh or clicks
                action = options[int(self.rng.integers(len(options)))] if options else f"search[{self._query()}]"
        elif listed := info.get("allowed_actions") or (avail if isinstance(avail, (list, tuple)) else None):
            fresh = [a for a in listed if a not in self.taken] or list(listed)
            action = str(fresh[int(self.rng.integers(len(fresh)))])
        elif self.action_space is not None:
            self.action_space.seed(int(self.rng.integers(2**31)))
            action = str(self.action_space.sample())
        else:
            raise ValueError("RandomExplorer needs info['allowed_actions'] or an action_space to sample from")
        self.taken.add(action)
        return action


_ACTION_LINE = re.compile(r"^\s*action\s*:\s*(.+?)\s*$", re.IGNORECASE | re.MULTILINE)
_BRACKETED = re.compile(r"\b[a-z_]+\[[^\]\n]*\]")


def parse_action(reply: str) -> str:
    """The action in an explorer reply: the last ``Action:`` line, else the last ``verb[arg]``, else
    the last non-empty line."""
    found = _ACTION_LINE.findall(reply or "")
    if found:
        return found[-1].strip().strip("`").strip()
    found = _BRACKETED.findall(reply or "")
    if found:
        return found[-1]
    lines = [ln.strip() for ln in (reply or "").splitlines() if ln.strip()]
    return lines[-1] if lines else ""


class LLMExplorer:
    """Curiosity-driven LLM exploration guided by the environment profile.

    Args:
        client: The explorer model (sampled at ``temperature``, 1.0 by default as in AgentEvolver).
        profile: The environment's ``profile()``.
        breadth_steps: Steps of the breadth phase (whole history shown).
        depth_window: Observation/action pairs shown in the depth phase (myopic window).
        action_hint: A line telling the model the action syntax (e.g. ``search[...]`` / ``click[...]``).
    """

    def __init__(self, client: ChatClient, profile: dict[str, Any] | None = None, *, breadth_steps: int = 3,
                 depth_window: int = 17, temperature: float = 1.0, action_hint: str = "", **chat_overrides: Any):
        if not isinstance(client, ChatClient):
            raise TypeError(f"LLMExplorer.client must implement ChatClient, got {type(client)}")
        if breadth_steps < 0 or depth_window < 0:
            raise ValueError(
                f"LLMExplorer breadth_steps/depth_window must be >= 0, got {breadth_steps}, {depth_window}")
        self.client = client
        self.profile = dict(profile or {})
        self.breadth_steps = breadth_steps
        self.depth_window = depth_window
        self.action_hint = action_hint
        self.chat_overrides = {"temperature": temperature, **chat_overrides}
        self.history: list[tuple[str, str]] = []
        self.example = ""

    def reset(self, task: Task, rng: np.random.Generator) -> None:
        self.history = []
        self.example = task.instruction
        self.seed = int(rng.integers(2**31))

    def __call__(self, observation: str, info: dict[str, Any]) -> str:
        msgs = explorer_messages(self.profile, self.example, self.history, observation, step=len(self.history),
                                 breadth=self.breadth_steps, window=self.depth_window, action_hint=self.action_hint)
        # LLMError propagates: the Explorer ends this exploration and keeps what it has.
        action = parse_action(self.client.chat(msgs, **self.chat_overrides))
        self.history.append((observation, action))
        return action


class CallableExplorer:
    """Wraps any ``policy(observation, info) -> action`` as an exploration policy."""

    def __init__(self, policy: Callable[[str, dict[str, Any]], str]):
        if not callable(policy):
            raise TypeError(f"CallableExplorer.policy must be callable, got {type(policy)}")
        self.policy = policy

    def reset(self, task: Task, rng: np.random.Generator) -> None:
        if hasattr(self.policy, "reset"):
            self.policy.reset(task, rng)

    def __call__(self, observation: str, info: dict[str, Any]) -> str:
        return self.policy(observation, info)


class Explorer:
    """Runs an exploration policy from seed tasks' start states and records trajectories.

    Args:
        env: The environment (reset with ``options={"task": seed_task}``).
        policy: An :class:`ExplorationPolicy` (or any callable, wrapped in :class:`CallableExplorer`).
        max_steps: Most steps per exploration.
        seed: Base seed; exploration ``i`` of a call uses ``derive_seed(seed, "explore", round, i)``.
    """

    def __init__(self, env: Any, policy: Any, *, max_steps: int = 15, seed: int = 0):
        if not isinstance(max_steps, int) or max_steps < 1:
            raise ValueError(f"Explorer.max_steps must be a positive int, got {max_steps!r}")
        self.env = env
        self.policy = policy if isinstance(policy, ExplorationPolicy) else CallableExplorer(policy)
        self.max_steps = max_steps
        self.seed = int(seed)

    def explore(self, seed_tasks: Sequence[Task], n: int, *, round_index: int = 0) -> list[Trajectory]:
        """``n`` explorations, cycling over ``seed_tasks`` in a seeded shuffled order."""
        if not seed_tasks:
            raise ValueError("Explorer.explore needs at least one seed task")
        order = make_rng(self.seed, "explore-order", round_index).permutation(len(seed_tasks))
        return [self.explore_one(seed_tasks[int(order[i % len(order)])],
                                 derive_seed(self.seed, "explore", round_index, i))
                for i in range(n)]

    def explore_one(self, task: Task, seed: int) -> Trajectory:
        """One exploration episode from ``task``'s start state (its reference is never passed on)."""
        public = Task.from_dict(task.public())
        self.policy.reset(public, make_rng(seed))
        failure: list[str] = []

        def act(observation: str, info: dict[str, Any]) -> str:
            try:
                return self.policy(observation, info)
            except LLMError as exc:  # the explorer model failed for good: keep the steps so far
                failure.append(f"explorer llm error ({exc.kind})")
                raise StopIteration from exc

        traj = record_episode(self.env, act, seed=task.seed, options={"task": public},
                              max_steps=self.max_steps, task=public)
        traj.metadata["explore_seed"] = seed
        if failure:
            traj.metadata["error"] = failure[0]
        return traj
