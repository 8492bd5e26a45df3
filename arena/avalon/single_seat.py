"""One Avalon seat as a single-agent Gymnasium text environment (``evolver/AvalonSeat-v0``).

* ``SingleSeat`` - the learning seat acts in text; every other seat is a given player (rule bots by
  default); the episode is one game; reward +1/-1 for the seat's side at the end.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Sequence
from typing import Any

import gymnasium as gym

from evolver_gym.core import Task, UnicodeText
from evolver_gym.core.seeding import derive_seed
from evolver_gym.core.stats import wilson_interval

from .bots import Player, make_player
from .env import raw_env
from .rules import ROLE_TITLES, AvalonConfig

__all__ = ["SingleSeat", "ENV_ID", "SPLIT_SIZES", "evaluation_report"]

ENV_ID = "evolver/AvalonSeat-v0"
SPLIT_SIZES = {"train": 1000, "dev": 100, "test": 200}
_EXAMPLES = (
    "PASS",
    "SAY: I am loyal to Arthur.",
    "TEAM: 0, 1",
    "VOTE: approve",
    "VOTE: reject",
    "QUEST: success",
    "ASSASSINATE: 1",
)


def evaluation_report(per_task: list[dict[str, Any]], final_infos: list[dict[str, Any]], k: int) -> dict[str, Any]:
    """``{"arena": ...}`` for ``evolver eval``: the seat's win rate over its games; a game the budget cut
    before its end (no ``evaluation`` in its final info) counts as lost."""
    games = len(final_infos)
    wins = sum(int(bool(info.get("success", False))) for info in final_infos)
    unfinished = sum(1 for info in final_infos if "evaluation" not in info)
    by_side: dict[str, list[int]] = defaultdict(list)
    for info in final_infos:
        by_side[str(info.get("side", "unknown"))].append(int(bool(info.get("success", False))))
    return {"arena": {
        "games": games,
        "wins": wins,
        "win_rate": wins / games,
        "win_rate_ci95": list(wilson_interval(wins, games)),
        "unfinished": unfinished,
        "by_side": {
            side: {
                "games": len(v),
                "wins": sum(v),
                "win_rate": sum(v) / len(v),
                "win_rate_ci95": list(wilson_interval(sum(v), len(v))),
            }
            for side, v in sorted(by_side.items())
        },
    }}


class SingleSeat(gym.Env):
    """Avalon from one seat: text observation in, text action out.

    **Observation**: the seat's transcript (rules, night knowledge, public events, its own hidden
    choices, the instruction). **Action**: a reply in the text protocol (``TEAM: 0, 2``,
    ``VOTE: approve``, ``QUEST: success``, ``ASSASSINATE: 3``, ``SAY: ...``); ``<think>`` is dropped.
    An invalid reply keeps the turn (the observation says why) up to ``max_retries`` times, then a
    seeded fallback is played for the seat.

    **Tasks**: ``tasks(split)`` for ``train``/``dev``/``test``; a task fixes the game seed (deal and
    first leader), the learning seat and optionally its role. Same task, same seed: same game.

    **Reward**: +1 if the seat's side wins, -1 if it loses, at the last step; 0 before.

    **Info** (every step): ``task``, ``instruction``, ``step``, ``action_valid``, ``error``, ``phase``,
    ``role``, ``side``, ``legal_actions``; privileged ``progress`` (share of the three quests the
    seat's side needs, never shown to the policy); at the end ``success``, ``score`` (1.0 win / 0.0
    loss), ``evaluation`` (winner, end_reason, roles, invalid and fallback counts).

    Args:
        num_players: 5 to 10.
        role: Give the learning seat this role in every task (``None``: as dealt).
        opponents: A player kind (``"rule"``, ``"random"``, ``"rule_votes"``), a list of kinds (one
            per other seat, in seat order) or a callable ``seat -> Player``.
        config: Rules; other rule keywords build one when omitted.
        max_text_chars: Longest observation.
        render_mode: ``"ansi"`` renders the seat's transcript.

    Example:
        >>> env = SingleSeat(num_players=5)
        >>> obs, info = env.reset(seed=0, options={"split": "dev", "index": 3})
        >>> info["action_valid"], "Night: you are Player" in obs
        (True, True)
    """

    metadata = {"render_modes": ["ansi"], "render_fps": 1}
    evaluation_report = staticmethod(evaluation_report)  # win rates for `evolver eval`

    def __init__(
        self,
        num_players: int = 5,
        role: str | None = None,
        opponents: str | Sequence[str] | Callable[[int], Player] = "rule",
        config: AvalonConfig | None = None,
        max_text_chars: int = 16384,
        render_mode: str | None = None,
        **rules: Any,
    ):
        if config is None:
            config = AvalonConfig(num_players=num_players, **rules)
        if role is not None and role not in config.roles_in_play():
            raise ValueError(f"role {role!r} is not in play; roles: {sorted(set(config.roles_in_play()))}")
        if render_mode not in (None, "ansi"):
            raise ValueError(f"render_mode must be 'ansi' or None, got {render_mode!r}")
        if isinstance(opponents, str):
            make_player(opponents)  # validates the kind, naming it if unknown
        elif not callable(opponents):
            opponents = list(opponents)
            if len(opponents) != config.num_players - 1:
                raise ValueError(f"opponents lists {len(opponents)} kinds; {config.num_players - 1} needed")
        self.config = config
        self.role = role
        self.opponents = opponents
        self.render_mode = render_mode
        self._aec = raw_env(config=config, variant="text", max_text_chars=max_text_chars)
        self.observation_space = UnicodeText(max_text_chars)
        self.action_space = UnicodeText(4096, examples=_EXAMPLES)
        self.task: Task | None = None
        self.seat = 0
        self._players: list[Player | None] = []
        self._steps = 0

    # -- tasks ------------------------------------------------------------------------------
    def _task(self, split: str, index: int) -> Task:
        n = self.config.num_players
        seed = derive_seed("avalon-seat", split, index, n)
        seat = index % n
        who = f" as {ROLE_TITLES[self.role]}" if self.role else ""
        return Task(
            task_id=f"{ENV_ID}/{split}/{index}",
            env_id=ENV_ID,
            split=split,
            seed=seed,
            instruction=f"Play Avalon ({n} players) from seat {seat}{who} and help your side win.",
            goal={
                "game_seed": seed,
                "seat": seat,
                "role": self.role,
                "num_players": n,
                "config": self.config.to_dict(),
            },
            metadata={"index": index},
        )

    def tasks(self, split: str = "train") -> list[Task]:
        """The task list of ``split`` (``train``, ``dev``, ``test``)."""
        if split not in SPLIT_SIZES:
            raise ValueError(f"unknown split {split!r}; splits: {sorted(SPLIT_SIZES)}")
        return [self._task(split, i) for i in range(SPLIT_SIZES[split])]

    def profile(self) -> dict[str, Any]:
        """What a task proposer needs to know about the world."""
        return {
            "entities": {
                "players": list(range(self.config.num_players)),
                "roles": sorted(set(self.config.roles_in_play())),
            },
            "attributes": {"side": ["good", "evil"], "quest_result": ["success", "fail"]},
            "operations": [
                "SAY: <text>",
                "PASS",
                "TEAM: <players>",
                "VOTE: approve|reject",
                "QUEST: success|fail",
                "ASSASSINATE: <player>",
            ],
        }

    def oracle(self, task: Task) -> list[str]:
        """Avalon has no action list that wins against every table; returns ``[]``."""
        return []

    def hindsight_task(self, trajectory: Any) -> Task | None:
        """Games do not yield verifiable hindsight tasks; returns ``None``."""
        return None

    def _resolve(self, options: dict[str, Any]) -> Task:
        if "task" in options:
            return Task.from_dict(options["task"])
        if "task_id" in options:
            tid = str(options["task_id"])
            prefix = f"{ENV_ID}/"
            try:
                split, index = tid[len(prefix) :].rsplit("/", 1) if tid.startswith(prefix) else ("", "x")
                return self._task(split, int(index)) if split in SPLIT_SIZES else self._bad(tid)
            except ValueError:
                return self._bad(tid)
        split = options.get("split", "train")
        if split not in SPLIT_SIZES:
            raise ValueError(f"unknown split {split!r}; splits: {sorted(SPLIT_SIZES)}")
        index = options.get("index")
        if index is None:
            index = int(self.np_random.integers(SPLIT_SIZES[split]))
        return self._task(split, int(index))

    @staticmethod
    def _bad(task_id: str) -> Task:
        raise ValueError(f"unknown task_id {task_id!r}; expected '{ENV_ID}/<split>/<index>'")

    # -- episode ----------------------------------------------------------------------------
    def _opponent(self, seat: int, other_index: int) -> Player:
        if isinstance(self.opponents, str):
            return make_player(self.opponents)
        if callable(self.opponents):
            return self.opponents(seat)
        return make_player(self.opponents[other_index])

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        super().reset(seed=seed)
        task = self._resolve(dict(options or {}))
        goal = task.goal
        self.task, self.seat = task, int(goal.get("seat", 0))
        n = self.config.num_players
        if not 0 <= self.seat < n:
            raise ValueError(f"task seat {self.seat} is outside 0..{n - 1}")
        aec = self._aec
        aec.reset(seed=int(goal.get("game_seed", task.seed)))
        role = goal.get("role")
        if role:
            roles = list(aec.game.roles)
            other = roles.index(role)
            roles[self.seat], roles[other] = roles[other], roles[self.seat]
            aec.reset(
                seed=int(goal.get("game_seed", task.seed)),
                options={"roles": roles, "leader": aec.game.leader},
            )
        others = [s for s in range(n) if s != self.seat]
        self._players = [None] * n
        for i, s in enumerate(others):
            p = self._opponent(s, i)
            p.reset(s, derive_seed(task.seed, "opponent", s))
            self._players[s] = p
        self._steps = 0
        self._advance()
        return self._obs(), self._info(valid=True, error="")

    def _advance(self) -> None:
        """Let the other seats play until it is the learning seat's turn or the game ends."""
        aec, g = self._aec, self._aec.game
        while not g.done and g.actor != self.seat:
            p = self._players[g.actor]
            agent = aec.possible_agents[g.actor]
            text = aec.observe(agent)["text"] if p.needs_text else None
            aec.step(p.act(g.view(g.actor), text))

    def step(self, action: Any):
        aec, g = self._aec, self._aec.game
        agent = aec.possible_agents[self.seat]
        if g.done:
            return self._obs(), 0.0, True, False, self._info(False, "the game is over; call reset()")
        if not isinstance(action, str):
            action = str(action)  # the text protocol reads any other value by its text form
        self._steps += 1
        invalid0, fallback0 = aec._invalid[agent], aec._fallbacks[agent]
        aec.step(action)
        valid = aec._invalid[agent] == invalid0
        error = "" if valid else (aec._errors[agent] or "invalid reply; a fallback action was played for you")
        if aec._fallbacks[agent] > fallback0:
            error = "invalid reply; a fallback action was played for you"
        self._advance()
        reward = 0.0
        if g.done:
            reward = 1.0 if (g.winner == "evil") == g.is_evil[self.seat] else -1.0
        return self._obs(), reward, g.done, False, self._info(valid, error)

    def _obs(self) -> str:
        return self._aec.observe(self._aec.possible_agents[self.seat])["text"]

    def _info(self, valid: bool, error: str) -> dict[str, Any]:
        aec, g = self._aec, self._aec.game
        agent = aec.possible_agents[self.seat]
        base = aec.infos[agent] if agent in aec.infos else {}
        evil = g.is_evil[self.seat]
        fails = sum(1 for q in g.quests if not q[2])
        info = {
            "task": self.task.public(),
            "instruction": self.task.instruction,
            "step": self._steps,
            "action_valid": bool(valid),
            "error": error,
            "phase": g.phase,
            "role": g.roles[self.seat],
            "side": "evil" if evil else "good",
            "legal_actions": list(base.get("legal_actions", [])),
            "progress": min(1.0, (fails if evil else len(g.quests) - fails) / 3.0),
        }
        if g.done:
            won = (g.winner == "evil") == evil
            info.update(
                success=won,
                score=1.0 if won else 0.0,
                progress=1.0 if won else info["progress"],
                evaluation={
                    "winner": g.winner,
                    "end_reason": g.end_reason,
                    "roles": list(g.roles),
                    "invalid_actions": aec._invalid[agent],
                    "fallback_actions": aec._fallbacks[agent],
                },
            )
        return info

    def render(self) -> str | None:
        if self.render_mode == "ansi" and self._aec.game is not None:
            return self._obs()
        return None
