"""Avalon with the seats of chosen roles played by one text policy (``evolver/AvalonSeats-v0``).

* ``AvalonSeats`` - a PettingZoo ``ParallelEnv`` whose agents are the seats the policy plays: the
  seats holding a trainable role (they learn) and, against the ``self`` opponent, every other seat
  too (played by the same policy, not learning). Every other seat is an opponent from the arena's one
  factory (:func:`arena.avalon.opponents.make_opponent`). ``evolver train`` trains it with one GRPO row
  per learning seat and game (``evolver_train.rollout.play_seat_episodes``).
* ``seat_evaluation_report`` - per-role and per-side win rates with Wilson intervals (``evolver eval``).

A seat's observation holds only what is new since its last turn (:class:`~arena.avalon.observation.SeatStream`):
the rules and its night knowledge at its first turn, then the transcript lines it has not read yet (public
events and its own hidden choices, at most ``max_new_lines`` of them), the reason its last reply was
refused, and the question. A whole game then fits a small token budget, where the single-seat view
re-sends the whole transcript every turn. Every host shows a ``checkpoint:<path>`` seat the same stream.

Example:
    >>> env = AvalonSeats(num_players=5, trainable_roles=["merlin", "servant"], deal_key="doc")
    >>> obs, infos = env.reset(seed=0, options={"split": "dev", "index": 0})
    >>> sorted(infos[a]["role"] for a in env.agents), env.num_learning_seats
    (['merlin', 'servant', 'servant'], 3)
    >>> acting = [a for a in env.agents if infos[a]["acting"]]
    >>> all(obs[a].startswith("Avalon with 5 players") for a in acting)
    True
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from evolver_gym.core import Task
from evolver_gym.core.seeding import derive_seed, make_random
from evolver_gym.core.stats import wilson_interval

from ..extras import PETTINGZOO_USERS, missing_extra

try:
    from pettingzoo import ParallelEnv
except ModuleNotFoundError as exc:  # the 'arena' extra
    raise missing_extra(exc, PETTINGZOO_USERS) from exc

from .actions import ParseError
from .credit import step_credit
from .engine import IllegalAction
from .env import raw_env
from .observation import SeatStream, allowed_action_texts, seat_text
from .opponents import SELF, check_opponent, make_opponent
from .rules import ROLE_TITLES, ROLES, AvalonConfig
from .single_seat import host_deal_key
from .tasks import SPLIT_SIZES, resolve_task

__all__ = ["AvalonSeats", "ENV_ID", "seat_evaluation_report"]

ENV_ID = "evolver/AvalonSeats-v0"


def seat_evaluation_report(per_task: list[dict[str, Any]], final_infos: list[dict[str, Any]], k: int) -> dict[str, Any]:
    """``{"arena": ...}`` for ``evolver eval``: win rates (Wilson 95% intervals) per role of the learning
    seats, and per side counting each game once; a game the budget cut before its end counts as lost."""
    def rate(wins: int, n: int) -> dict[str, Any]:
        return {"games": n, "wins": wins, "win_rate": wins / n if n else None,
                "win_rate_ci95": list(wilson_interval(wins, n))}

    by_role: dict[str, list[int]] = defaultdict(list)
    by_side: dict[str, dict[int, int]] = defaultdict(dict)
    unfinished: set[int] = set()
    # A game's seats come one after another; the k samples of a deal replay the same game id, so a game
    # ends where the id changes or a seat comes again.
    game, game_id, seats_seen = -1, None, set()
    for info in final_infos:
        seat, this_id = info.get("seat", id(info)), info.get("game", id(info))
        if this_id != game_id or seat in seats_seen:
            game, game_id, seats_seen = game + 1, this_id, set()
        seats_seen.add(seat)
        won = int(bool(info.get("success", False)))
        by_role[str(info.get("role", "unknown"))].append(won)
        by_side[str(info.get("side", "unknown"))][game] = won  # the seats of a side win or lose together
        if "evaluation" not in info:
            unfinished.add(game)
    games = {g for side in by_side.values() for g in side}
    return {"arena": {
        "games": len(games),
        "seats": len(final_infos),
        "unfinished": len(unfinished),
        "opponents": sorted({str(i.get("opponents")) for i in final_infos}),
        "by_role": {role: rate(sum(v), len(v)) for role, v in sorted(by_role.items())},
        "by_side": {side: rate(sum(v.values()), len(v)) for side, v in sorted(by_side.items())},
    }}


class AvalonSeats(ParallelEnv):
    """Avalon where one text policy plays the seats of ``trainable_roles``; PettingZoo parallel API.

    **Agents**: after ``reset``, ``agents`` are the seats the policy plays in this game (``player_<i>``):
    the learning seats (``num_learning_seats`` of them, every game) and, against ``self``, the others.
    **Step**: ``step(actions)`` takes a reply for every agent whose ``infos[agent]["acting"]`` is true
    (the others' entries are ignored); the game then moves on, the opponents playing their turns, until
    some agent must act again or the game ends. Votes and quest cards are simultaneous: every pending
    agent acts in the same step. An unreadable or illegal reply is replaced at once by a seeded fallback
    and counted (``action_valid`` false, ``error`` says why; the seat's next observation too).
    **Observation**: text, for an acting agent only (``""`` otherwise): what is new since its last turn
    (see the module docstring). **Reward**: +1/-1 to every agent at the end, for its side's result.

    **Tasks**: ``tasks(split)`` (``train``/``dev``/``test``); a task holds a public seed. The deal, the
    first leader, the opponents drawn from a mix and their seeds come from that seed and the host's
    ``deal_key``, never shown: the same task and key replay the same game up to the policy's replies.

    **Info** (every agent, every step): ``task``, ``instruction``, ``step`` (the agent's own turns),
    ``acting``, ``learning``, ``seat``, ``role``, ``side``, ``phase``, ``allowed_actions`` (the complete
    replies accepted now, proposals enumerated team by team; ``None`` for free text (discussion), ``[]``
    when not acting), ``action_valid``, ``error``, ``opponents`` (the spec the other seats were drawn
    from), ``game`` (an id of this game: task and reset seed); privileged, never shown to the policy:
    ``progress`` (share of the three quests its side needs) and ``step_credit`` (the rules' judgement of
    the reply it just played, :func:`arena.avalon.credit.step_credit`, ``None`` when it did not act or no
    rule applies). At the end: ``success``, ``score`` (1.0 win / 0.0 loss), ``evaluation`` (winner,
    end_reason, roles, the agent's invalid and fallback counts, opponents).

    Args:
        num_players: 5 to 10.
        trainable_roles: Roles whose seats the policy plays and learns from, e.g. ``["merlin",
            "servant"]`` (good) or ``["assassin", "minion"]`` (evil); each must be in play.
        opponents: The other seats: one spec (``rule``, ``rule_votes``, ``random``, ``llm:<model>@<url>``,
            ``checkpoint:<path>``, ``self``) or a mapping spec -> weight, drawn per game from the deal.
            ``reset(options={"opponents": spec})`` overrides it for one game (the league's checkpoints).
        config: Rules; other rule keywords (``discussion_rounds``, ``special_roles``, ...) build one.
        deal_key: Host secret mixed into every deal (default: the host's key).
        max_new_lines: Most transcript lines in one observation (older unread lines are summarised as
            omitted); the first observation also holds the rules.
    """

    metadata = {"name": "avalon_seats_v0", "render_modes": [], "is_parallelizable": True}
    evaluation_report = staticmethod(seat_evaluation_report)  # per-role win rates for `evolver eval`

    def __init__(self, num_players: int = 5, trainable_roles: Sequence[str] = ("merlin", "servant"),
                 opponents: str | Mapping[str, float] = "rule", config: AvalonConfig | None = None,
                 deal_key: str | None = None, max_new_lines: int = 40, **rules: Any):
        if config is None:
            config = AvalonConfig(num_players=num_players, **rules)
        in_play = config.roles_in_play()
        if isinstance(trainable_roles, str) or not trainable_roles:
            raise ValueError(f"trainable_roles must be a non-empty list of roles, got {trainable_roles!r}")
        roles = tuple(dict.fromkeys(trainable_roles))
        missing = [r for r in roles if r not in in_play]
        if missing:
            raise ValueError(f"trainable_roles: {missing[0]!r} is not in play; roles in play: "
                             f"{sorted(set(in_play), key=ROLES.index)}")
        mix = {opponents: 1.0} if isinstance(opponents, str) else dict(opponents)
        if not mix or any(not isinstance(w, (int, float)) or w < 0 for w in mix.values()) or sum(mix.values()) <= 0:
            raise ValueError(f"opponents must be a spec or a mapping spec -> weight >= 0, got {opponents!r}")
        for spec in mix:
            check_opponent(spec)
        if deal_key is not None and (not isinstance(deal_key, str) or not deal_key):
            raise ValueError(f"deal_key must be a non-empty string, got {deal_key!r}")
        if not isinstance(max_new_lines, int) or max_new_lines < 1:
            raise ValueError(f"max_new_lines must be a positive int, got {max_new_lines!r}")
        self.config, self.trainable_roles, self.opponents = config, roles, mix
        self.num_learning_seats = sum(1 for r in in_play if r in roles)
        self.max_new_lines = max_new_lines
        self._deal_key = deal_key if deal_key is not None else host_deal_key()
        self._aec = raw_env(config=config, variant="text")  # the game, reply decoding and fallbacks
        self.possible_agents = list(self._aec.possible_agents)
        self.agents: list[str] = []
        self.task: Task | None = None
        self.np_random = np.random.default_rng(0)

    def observation_space(self, agent: str):
        return self._aec._obs_space["text"]

    def action_space(self, agent: str):
        return self._aec.action_space(agent)

    @property
    def game(self):
        return self._aec.game

    # -- tasks --------------------------------------------------------------------------------
    def _task(self, split: str, index: int) -> Task:
        n = self.config.num_players
        who = ", ".join(ROLE_TITLES[r] for r in self.trainable_roles)
        return Task(task_id=f"{ENV_ID}/{split}/{index}", env_id=ENV_ID, split=split,
                    seed=derive_seed("avalon-seats", split, index, n),
                    instruction=f"Play Avalon ({n} players) as every {who} and help your side win.",
                    goal={"trainable_roles": list(self.trainable_roles), "num_players": n,
                          "config": self.config.to_dict()},
                    metadata={"index": index})

    def tasks(self, split: str = "train") -> list[Task]:
        """The task list of ``split`` (``train``, ``dev``, ``test``)."""
        if split not in SPLIT_SIZES:
            raise ValueError(f"unknown split {split!r}; splits: {sorted(SPLIT_SIZES)}")
        return [self._task(split, i) for i in range(SPLIT_SIZES[split])]

    # -- episode ------------------------------------------------------------------------------
    def reset(self, seed: int | None = None, options: dict[str, Any] | None = None):
        options = dict(options or {})
        if seed is not None:
            self.np_random = np.random.default_rng(seed)
        self.task = task = resolve_task(options, self._task, ENV_ID, self.np_random)
        game_seed = derive_seed(self._deal_key, "avalon-deal", task.seed)
        self._aec.reset(seed=game_seed)
        g = self.game
        spec = options.get("opponents")
        if spec is None:
            specs, weights = list(self.opponents), list(self.opponents.values())
            spec = make_random(game_seed, "opponents").choices(specs, weights)[0]
        self.spec = check_opponent(spec)
        learning = [s for s in range(g.n) if g.roles[s] in self.trainable_roles]
        policy = range(g.n) if self.spec == SELF else learning
        self._learning = {f"player_{s}": s in learning for s in policy}
        self.agents = [f"player_{s}" for s in policy]
        self._players: dict[int, Any] = {}
        for s in range(g.n):
            if f"player_{s}" not in self._learning:
                self._players[s] = player = make_opponent(self.spec)()
                player.reset(s, derive_seed(game_seed, "opponent", s))
        self._streams = [SeatStream(self.max_new_lines) for _ in range(g.n)]  # what each seat has read
        self._errors = [""] * g.n
        self._turns = dict.fromkeys(self.agents, 0)
        self._invalid = dict.fromkeys(self.agents, 0)
        self._game_id = f"{task.task_id}@{seed}"
        self._advance()
        return self._observations(), self._infos(acted={})

    def _observe(self, seat: int) -> str:
        """What ``seat`` has not read yet, and the question: the rules too at its first turn."""
        return self._streams[seat].observe(self.game, seat, error=self._errors[seat], simultaneous=True)

    def _bot_turns(self) -> dict[int, Any]:
        g = self.game
        out = {}
        for s in g.pending():
            p = self._players.get(s)
            if p is None:
                continue
            text = None
            if p.needs_text:  # a model seat: what is new (a conversation), else its whole transcript
                text = self._observe(s) if getattr(p, "conversation", False) else seat_text(
                    g, s, "text", simultaneous=True)
            out[s] = p.act(g.view(s, simultaneous=True), text)
        return out

    def _play(self, replies: dict[int, Any]) -> dict[int, tuple[bool, float | None]]:
        """Play one round of the pending seats' replies (a fallback for a bad one); per seat, whether its
        reply was valid and the rules' credit of it, judged on the state they all replied to."""
        g, aec = self.game, self._aec
        judged, moves = {}, []
        for seat in g.pending():
            try:
                if replies.get(seat) is None:
                    raise ParseError("no reply was given")
                code, speech = aec._decode(seat, replies[seat])
                judged[seat], self._errors[seat] = (True, step_credit(g, seat, code)), ""
            except (ParseError, IllegalAction) as exc:
                code, speech = aec._fallback(seat), None
                judged[seat], self._errors[seat] = (False, None), f"{exc}; a fallback action was played for you"
            moves.append((code, speech))
        for code, speech in moves:
            g.step(code, speech)
        return judged

    def _advance(self) -> None:
        """The opponents play until one of the agents must act or the game ends."""
        g = self.game
        while not g.done and not any(f"player_{s}" in self._learning for s in g.pending()):
            self._play(self._bot_turns())

    def step(self, actions: dict[str, Any]):
        g = self.game
        if not self.agents:
            raise RuntimeError("the game is over; call reset()")
        replies = self._bot_turns()
        for s in g.pending():
            agent = f"player_{s}"
            if agent in self._learning:
                replies[s] = actions.get(agent)
                self._turns[agent] += 1
        judged = self._play(replies)
        acted = {f"player_{s}": v for s, v in judged.items() if f"player_{s}" in self._learning}
        for agent, (valid, _) in acted.items():
            self._invalid[agent] += not valid
        self._advance()
        rewards = dict.fromkeys(self.agents, 0.0)
        if g.done:
            for a in self.agents:
                rewards[a] = 1.0 if (g.winner == "evil") == g.is_evil[int(a[7:])] else -1.0
        observations, infos = self._observations(), self._infos(acted)
        terminations = dict.fromkeys(self.agents, g.done)
        truncations = dict.fromkeys(self.agents, False)
        if g.done:
            self.agents = []
        return observations, rewards, terminations, truncations, infos

    def _observations(self) -> dict[str, str]:
        pending = set(self.game.pending())
        return {a: self._observe(int(a[7:])) if int(a[7:]) in pending else "" for a in self.agents}

    def _infos(self, acted: dict[str, tuple[bool, float | None]]) -> dict[str, dict[str, Any]]:
        g = self.game
        pending = set(g.pending())
        fails = sum(1 for q in g.quests if not q[2])
        infos = {}
        for a in self.agents:
            s = int(a[7:])
            evil, acting = g.is_evil[s], s in pending
            valid, credit = acted.get(a, (True, None))
            allowed = allowed_action_texts(g, s, simultaneous=True) if acting else []  # None: free speech
            info = {
                "task": self.task.public(), "instruction": self.task.instruction, "step": self._turns[a],
                "acting": acting, "learning": self._learning[a], "seat": s, "role": g.roles[s],
                "side": "evil" if evil else "good", "phase": g.phase, "allowed_actions": allowed,
                "action_valid": valid, "error": "" if valid else self._errors[s], "opponents": self.spec,
                "game": self._game_id, "step_credit": credit,
                "progress": min(1.0, (fails if evil else len(g.quests) - fails) / 3.0),
            }
            if g.done:
                won = (g.winner == "evil") == evil
                info.update(success=won, score=1.0 if won else 0.0, progress=1.0 if won else info["progress"],
                            evaluation={"winner": g.winner, "end_reason": g.end_reason, "roles": list(g.roles),
                                        "invalid_actions": self._invalid[a], "opponents": self.spec})
            infos[a] = info
        return infos

    def render(self) -> None:
        return None

    def close(self) -> None:
        self._aec.close()

    def state(self):
        raise NotImplementedError("Avalon has no global state array: every view is a seat's information set")
