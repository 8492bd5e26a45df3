"""The ``Attribution`` wrapper: label every step of an episode when it ends.

* ``Attribution`` - records the episode and writes ``info["attribution"]`` on its final step.
* ``make_attributor`` - an attributor from a name (``oracle``, ``rules``, ``env-rules``, ``llm-judge``), for
  configuration files where objects cannot be written.
* ``attribution_record`` - the ``info["attribution"]`` record of a finished trajectory (the wrapper's,
  and the trainer's for an episode it cut before the environment ended it).
"""

from __future__ import annotations

import json
import warnings
from typing import Any, SupportsFloat

import gymnasium as gym

from evolver_gym.core import Trajectory
from evolver_gym.core.llm import LLMError

from ..plugin import TrajectoryRecorder
from .base import Attributor
from .judge import LLMJudgeAttributor
from .rules import EnvRuleAttributor, MissingProgress, OracleAttributor, RuleAttributor

__all__ = ["ATTRIBUTOR_NAMES", "Attribution", "attribution_record", "make_attributor"]

ATTRIBUTOR_NAMES = ("oracle", "rules", "env-rules", "llm-judge")


def make_attributor(spec: Attributor | str, *, client: Any = None, llm_config: Any = None,
                    **kwargs: Any) -> Attributor:
    """``spec`` itself if it is an attributor, else the one it names.

    ``"llm-judge"`` asks ``client`` (a ``ChatClient``), or the ``attributor`` role of
    ``build_clients(llm_config)`` (a YAML path or dict); ``kwargs`` go to the attributor.
    """
    if not isinstance(spec, str):
        if not callable(getattr(spec, "attribute", None)):
            raise TypeError(f"attributor must have an attribute(trajectory) method, got {type(spec).__name__}")
        return spec
    if spec == "oracle":
        return OracleAttributor(**kwargs)
    if spec == "rules":
        return RuleAttributor(**kwargs)
    if spec == "env-rules":
        return EnvRuleAttributor(**kwargs)
    if spec == "llm-judge":
        if client is None:
            if llm_config is None:
                raise ValueError("attributor 'llm-judge' needs client= or llm_config= (YAML path or dict)")
            from evolver_gym.core.llm import build_clients

            client = build_clients(llm_config).client_for("attributor")
        return LLMJudgeAttributor(client, **kwargs)
    raise ValueError(f"unknown attributor {spec!r}; choose from {ATTRIBUTOR_NAMES} or pass an Attributor")


def _jsonable(value: Any) -> Any:
    return json.loads(json.dumps(value, default=lambda o: o.item() if hasattr(o, "item") else str(o)))


class Attribution(gym.Wrapper[str, str, str, str], gym.utils.RecordConstructorArgs):
    """Label each step of a finished episode GOOD or BAD with an attributor.

    The wrapper records every step (the observation the agent saw, its action, the reward and the
    environment's ``info``). When the episode ends (terminated or truncated), it builds the
    :class:`~evolver_gym.core.Trajectory` (``success`` and ``score`` from the final ``info``) and
    asks ``attributor.attribute``; the result goes into the final step's ``info`` only.
    Observations are never changed, so nothing an attributor writes reaches the acting policy.
    If the attributor raises ``LLMError``, every step gets the outcome's sign and ``fallback``
    is true. Put this wrapper outside ``TimeLimit`` so truncated episodes are labelled too.

    After the last step, ``info`` holds::

        info["attribution"] = {
            "attributor": "oracle",
            "labels": [{"step": 0, "label": "GOOD", "score": 1.0, "reason": "..."}, ...],
            "fallback": False,
        }

    and ``wrapper.last_trajectory`` is the labelled episode. With a ``reference`` attributor (the
    simulator oracle, to measure a rule attributor or a judge while it trains), the record also holds
    ``"reference": {"attributor": "oracle", "labels": ["GOOD", "BAD", ...]}``; it is left out for an
    episode the reference cannot label (an environment without ``info["progress"]`` for the oracle).

    Args:
        env: A text environment (single-agent contract of the project).
        attributor: Any :class:`~wrappers.attribution.base.Attributor`, or a name for
            :func:`make_attributor` (``"oracle"``, ``"rules"``, ``"llm-judge"``).
        info_key: The ``info`` key written (default ``"attribution"``).
        reference: An attributor (or its name) whose labels are written next to the attributor's, for
            agreement metrics only; they never become rewards. ``None``: none.
        **attributor_kwargs: Passed to :func:`make_attributor` when ``attributor`` is a name
            (``client``, ``llm_config``, or the attributor's own arguments).

    Example:
        >>> import gymnasium as gym
        >>> import evolver_gym  # noqa: F401
        >>> from wrappers.attribution import Attribution, AttributionPayload
        >>> env = Attribution(gym.make("evolver/WebShop-v0", num_products=50), "oracle")
        >>> task = env.unwrapped.tasks("dev")[0]
        >>> obs, info = env.reset(seed=0, options={"task": task})
        >>> for action in env.unwrapped.oracle(task):
        ...     obs, reward, terminated, truncated, info = env.step(action)
        >>> payload = AttributionPayload.from_info(info)
        >>> payload.attributor, len(payload.labels) == len(env.last_trajectory.steps), terminated
        ('oracle', True, True)
        >>> set(payload.step_rewards())
        {1.0}

    Change logs:
     * v0.2.0 - ``AttributionPayload`` reads what the wrapper writes.
     * v0.1.0 - Initially added.
    """

    def __init__(self, env: gym.Env, attributor: Attributor | str = "oracle", info_key: str = "attribution",
                 reference: Attributor | str | None = None, **attributor_kwargs: Any) -> None:
        if not isinstance(info_key, str) or not info_key:
            raise ValueError(f"info_key must be a non-empty string, got {info_key!r}")
        # No deep copy of the attributor: it may hold a live client (sockets, locks, a model).
        gym.utils.RecordConstructorArgs.__init__(self, attributor=attributor, info_key=info_key, reference=reference,
                                                 _disable_deepcopy=True, **attributor_kwargs)
        gym.Wrapper.__init__(self, env)
        self.attributor = make_attributor(attributor, **attributor_kwargs)
        self.reference = make_attributor(reference) if reference is not None else None
        self.info_key = info_key
        self.last_trajectory: Trajectory | None = None
        # A private deep copy of each step's info: an attributor that edits it cannot touch the caller's.
        self._recorder = TrajectoryRecorder(exclude=(info_key,))

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[str, dict[str, Any]]:
        obs, info = self.env.reset(seed=seed, options=options)
        reset_info = {k: v for k, v in info.items() if k not in ("task", self.info_key)}
        self._recorder.start(obs, info, reset_info=_jsonable(reset_info))
        return obs, info

    def step(self, action: str) -> tuple[str, SupportsFloat, bool, bool, dict[str, Any]]:
        if not self._recorder.active:
            raise gym.error.ResetNeeded("Attribution: call reset() before step()")
        obs, reward, terminated, truncated, info = self.env.step(action)
        self._recorder.record(action, obs, float(reward), info)
        if terminated or truncated:
            traj = self._recorder.finish(terminated, truncated, info)
            traj.metadata["final_observation"] = obs
            info = dict(info)
            info[self.info_key] = record = attribution_record(self.attributor, traj, self.reference)
            for step, label in zip(traj.steps, record["labels"]):
                step.info[self.info_key] = dict(label)
            self.last_trajectory = traj
        return obs, reward, terminated, truncated, info


def attribution_record(attributor: Attributor, trajectory: Trajectory,
                       reference: Attributor | None = None) -> dict[str, Any]:
    """The ``info["attribution"]`` record of ``trajectory``: ``attributor``'s labels (its fallback when
    an LLM call fails), and ``reference``'s labels under ``"reference"`` where it can label every step."""
    try:
        result = attributor.attribute(trajectory)
    except LLMError as exc:
        result = Attributor.fallback(attributor, trajectory, reason=f"attributor failed: {exc}"[:300])
    except MissingProgress:
        # A judge-graded synthetic task has no progress of its own; an episode must not stop training.
        warnings.warn("the oracle attributor met an episode without info['progress'] (a judge-graded task, or an "
                      "environment that does not emit it): its steps get the outcome's sign, fallback=True",
                      RuntimeWarning, stacklevel=2)
        result = Attributor.fallback(attributor, trajectory, reason="no info['progress'] to label by")
    record = result.to_info()
    if reference is not None:
        # Without info["progress"] there are no reference labels for this episode.
        try:
            checked = reference.attribute(trajectory)
        except (ValueError, LLMError):  # MissingProgress is one
            checked = None
        if checked is not None and len(checked.labels) == len(trajectory.steps):
            record["reference"] = {"attributor": checked.attributor, "labels": [lab.label for lab in checked.labels]}
    return record
