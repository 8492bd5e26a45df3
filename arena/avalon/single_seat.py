"""One Avalon seat as a single-agent Gymnasium text environment (``evolver/AvalonSeat-v0``).

* ``SingleSeat`` - the learning seat acts in text; every other seat is a given player (rule bots by
  default); the episode is one game; reward +1/-1 for the seat's side at the end.
"""

from __future__ import annotations

import os
import secrets
import tempfile
from collections import defaultdict
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import gymnasium as gym

from evolver_gym.core import Task, UnicodeText
from evolver_gym.core.seeding import derive_seed, make_random
from evolver_gym.core.stats import wilson_interval

from .actions import ParseError
from .bots import Player
from .credit import step_credit
from .engine import IllegalAction
from .env import raw_env
from .observation import SeatStream
from .opponents import SELF, check_opponent, make_opponent
from .play import seat_streams, turn_text
from .rules import ROLE_TITLES, AvalonConfig
from .tasks import SPLIT_SIZES, resolve_task

__all__ = ["SingleSeat", "ENV_ID", "SPLIT_SIZES", "DEAL_KEY_ENV", "force_role", "host_deal_key", "evaluation_report"]

ENV_ID = "evolver/AvalonSeat-v0"
DEAL_KEY_ENV = "EVOLVER_ARENA_DEAL_KEY"


def host_deal_key() -> str:
    """The host's secret that turns public task seeds into deals.

    ``$EVOLVER_ARENA_DEAL_KEY`` when set; otherwise a random key created once per host (user cache
    folder, ``evolver-gym/arena-deal-key``, written atomically) so that a task is the same game in
    every run on this host, while the task id and seed alone say nothing about the deal.
    """
    key = os.environ.get(DEAL_KEY_ENV)
    if key:
        return key
    folder = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "evolver-gym"
    path = folder / "arena-deal-key"
    try:
        return path.read_text().strip()
    except FileNotFoundError:
        pass
    folder.mkdir(parents=True, exist_ok=True)
    with tempfile.NamedTemporaryFile("w", dir=folder, delete=False) as f:
        f.write(secrets.token_hex(16))
    try:
        os.link(f.name, path)  # the first writer wins; a concurrent one reads that key
    except FileExistsError:
        pass
    finally:
        os.unlink(f.name)
    return path.read_text().strip()


def force_role(roles: Sequence[str], seat: int, role: str, seed: int) -> list[str]:
    """The deal ``roles`` with ``seat`` holding ``role``: the seat swaps with a holder of ``role``
    drawn uniformly (the seat itself included) from ``seed``, so a uniform deal stays uniform among
    the deals where the seat holds ``role`` and no seat number says anything about the other sides.

    Example:
        >>> dealt = ["servant", "merlin", "servant", "assassin", "minion"]
        >>> forced = force_role(dealt, 1, "servant", seed=3)
        >>> forced[1], sorted(forced) == sorted(dealt)
        ('servant', True)
    """
    roles = list(roles)
    if not 0 <= seat < len(roles):
        raise ValueError(f"seat {seat} is outside 0..{len(roles) - 1}")
    holders = [i for i, held in enumerate(roles) if held == role]
    if not holders:
        raise ValueError(f"role {role!r} is not in the deal {roles}")
    other = make_random(seed, "force-role", seat, role).choice(holders)
    roles[seat], roles[other] = roles[other], roles[seat]
    return roles


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


def _copy(actions: list[str] | None) -> list[str] | None:
    return None if actions is None else list(actions)


class SingleSeat(gym.Env):
    """Avalon from one seat: text observation in, text action out.

    **Observation**: the seat's transcript (rules, night knowledge, public events, its own hidden
    choices, the instruction). **Action**: a reply in the text protocol (``TEAM: 0, 2``,
    ``VOTE: approve``, ``QUEST: success``, ``ASSASSINATE: 3``, ``SAY: ...``); ``<think>`` is dropped.
    An invalid reply keeps the turn (the observation says why) up to ``max_retries`` times, then a
    seeded fallback is played for the seat.

    **Tasks**: ``tasks(split)`` for ``train``/``dev``/``test``; a task fixes the learning seat,
    optionally its role, and a public seed. The deal, the first leader and the other seats' random
    choices come from that seed *and* the host's ``deal_key``, which the policy never sees: the
    task id, the task and ``info`` reveal nothing hidden, while the host replays the same game for
    the same task and key (reproducible evaluation and training).

    **Reward**: +1 if the seat's side wins, -1 if it loses, at the last step; 0 before.

    **Info** (every step): ``task``, ``instruction``, ``step``, ``action_valid``, ``error``, ``phase``,
    ``role``, ``side``, ``allowed_actions`` (every reply the seat may give now, as complete text
    the protocol parses, teams spelt out; ``None`` in discussion, where any text is speech; an empty
    list once the game is over), ``legal_actions`` (deprecated until 0.2: the reply forms, templates
    included); privileged ``progress`` (share of the three quests the seat's side needs, never shown
    to the policy); after a step, privileged ``step_credit`` (the rules' judgement of the reply just
    played, :func:`arena.avalon.credit.step_credit`: -1, 0 or ``None``); at the end ``success``,
    ``score`` (1.0 win / 0.0 loss), ``evaluation`` (winner, end_reason, roles, invalid and fallback counts).

    Args:
        num_players: 5 to 10.
        role: Give the learning seat this role in every task (``None``: as dealt).
        opponents: An opponent spec (``"rule"``, ``"random"``, ``"rule_votes"``, ``"llm:<model>@<url>"``,
            ``"checkpoint:<path>"``: :func:`arena.avalon.opponents.make_opponent`), a list of specs (one
            per other seat, in seat order) or a callable ``seat -> Player``.
        config: Rules; other rule keywords build one when omitted.
        deal_key: Host secret mixed into every game seed (default: :func:`host_deal_key`). Keep it
            out of the policy's reach; the same key gives the same games.
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
        deal_key: str | None = None,
        max_text_chars: int = 16384,
        render_mode: str | None = None,
        **rules: Any,
    ):
        if deal_key is not None and (not isinstance(deal_key, str) or not deal_key):
            raise ValueError(f"deal_key must be a non-empty string, got {deal_key!r}")
        if config is None:
            config = AvalonConfig(num_players=num_players, **rules)
        if role is not None and role not in config.roles_in_play():
            raise ValueError(f"role {role!r} is not in play; roles: {sorted(set(config.roles_in_play()))}")
        if render_mode not in (None, "ansi"):
            raise ValueError(f"render_mode must be 'ansi' or None, got {render_mode!r}")
        if isinstance(opponents, str) or not callable(opponents):
            specs = [opponents] if isinstance(opponents, str) else list(opponents)
            for spec in specs:  # validates each spec, naming it if unknown
                if check_opponent(spec) == SELF:
                    raise ValueError("opponents: 'self' seats are played by the policy; use evolver/AvalonSeats-v0")
            if not isinstance(opponents, str):
                opponents = specs
                if len(opponents) != config.num_players - 1:
                    raise ValueError(f"opponents lists {len(opponents)} kinds; {config.num_players - 1} needed")
        self.config = config
        self.role = role
        self.opponents = opponents
        self._deal_key = deal_key if deal_key is not None else host_deal_key()
        self.render_mode = render_mode
        self._aec = raw_env(config=config, variant="text", max_text_chars=max_text_chars)
        self.observation_space = UnicodeText(max_text_chars)
        self.action_space = UnicodeText(4096, examples=_EXAMPLES)
        self.task: Task | None = None
        self.seat = 0
        self._players: list[Player | None] = []
        self._streams: dict[int, SeatStream] = {}
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
        """Avalon has no action list that wins against every table; returns ``[]``. The reference
        players are :meth:`reference_policies` (they read the game as it goes)."""
        return []

    def reference_policies(self) -> dict[str, Callable[[str, dict[str, Any]], str]]:
        """Baseline players for the learning seat, as ``policy(observation, info) -> reply``
        (what ``evolver play`` scores): ``rule`` (the AvalonBench-style rule bot) and ``random``
        (a random legal action). They decide from the seat's own information set only."""

        def player(kind: str) -> Callable[[str, dict[str, Any]], str]:
            bot, state = make_opponent(kind)(), {"game": None}

            def act(observation: str, info: dict[str, Any]) -> str:
                game = self._aec.game
                if state["game"] is not game:  # a new episode: reseed the bot from the game
                    state["game"] = game
                    bot.reset(self.seat, derive_seed(self._deal_key, "reference", self.task.seed))
                return self._aec.codec.describe(int(bot.act(game.view(self.seat))))

            return act

        return {"rule": player("rule"), "random": player("random")}

    def hindsight_task(self, trajectory: Any) -> Task | None:
        """Games do not yield verifiable hindsight tasks; returns ``None``."""
        return None

    def _resolve(self, options: dict[str, Any]) -> Task:
        return resolve_task(options, self._task, ENV_ID, self.np_random)

    # -- episode ----------------------------------------------------------------------------
    def _opponent(self, seat: int, other_index: int) -> Player:
        if isinstance(self.opponents, str):
            return make_opponent(self.opponents)()
        if callable(self.opponents):
            return self.opponents(seat)
        return make_opponent(self.opponents[other_index])()

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        super().reset(seed=seed)
        task = self._resolve(dict(options or {}))
        goal = task.goal
        self.task, self.seat = task, int(goal.get("seat", 0))
        n = self.config.num_players
        if not 0 <= self.seat < n:
            raise ValueError(f"task seat {self.seat} is outside 0..{n - 1}")
        aec = self._aec
        # The deal follows from the public task seed only together with the host's secret key.
        game_seed = derive_seed(self._deal_key, "avalon-deal", task.seed)
        aec.reset(seed=game_seed)
        role = goal.get("role")
        if role:
            aec.reset(
                seed=game_seed,
                options={"roles": force_role(aec.game.roles, self.seat, role, game_seed), "leader": aec.game.leader},
            )
        others = [s for s in range(n) if s != self.seat]
        self._players = [None] * n
        for i, s in enumerate(others):
            p = self._opponent(s, i)
            p.reset(s, derive_seed(game_seed, "opponent", s))
            self._players[s] = p
        self._streams = seat_streams(self._players)
        self._steps = 0
        self._advance()
        return self._obs(), self._info(valid=True, error="")

    def _advance(self) -> None:
        """Let the other seats play until it is the learning seat's turn or the game ends."""
        aec, g = self._aec, self._aec.game
        while not g.done and g.actor != self.seat:
            p = self._players[g.actor]
            aec.step(p.act(g.view(g.actor), turn_text(aec, g.actor, p, self._streams)))

    def step(self, action: Any):
        aec, g = self._aec, self._aec.game
        agent = aec.possible_agents[self.seat]
        if g.done:
            return self._obs(), 0.0, True, False, self._info(False, "the game is over; call reset()")
        if not isinstance(action, str):
            action = str(action)  # the text protocol reads any other value by its text form
        self._steps += 1
        invalid0, fallback0 = aec._invalid[agent], aec._fallbacks[agent]
        try:  # judged before it is played, from what the seat knows (arena.avalon.credit)
            credit = step_credit(g, self.seat, aec._decode(self.seat, action)[0])
        except (ParseError, IllegalAction):  # an unreadable or illegal reply: counted invalid, not judged
            credit = None
        aec.step(action)
        valid = aec._invalid[agent] == invalid0
        error = "" if valid else (aec._errors[agent] or "invalid reply; a fallback action was played for you")
        if aec._fallbacks[agent] > fallback0:
            error = "invalid reply; a fallback action was played for you"
        self._advance()
        reward = 0.0
        if g.done:
            reward = 1.0 if (g.winner == "evil") == g.is_evil[self.seat] else -1.0
        return self._obs(), reward, g.done, False, {**self._info(valid, error), "step_credit": credit}

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
            "allowed_actions": _copy(base.get("allowed_actions", [])),
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
