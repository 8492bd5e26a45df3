"""Diplomacy as a native PettingZoo ``ParallelEnv``: the powers order together, as the game is played.

One step is one stage: every power due (all surviving powers in a press stage, the powers with
something to order in an orders stage) acts at once; the others' actions are ignored and their text
says they wait. A parallel step cannot ask a power again: unreadable lines are dropped at once and
reported in ``info["error"]`` and counted in ``info["invalid_actions"]``. Observations, spaces,
rewards and infos are those of :class:`arena.diplomacy.env.raw_env`.
"""

from __future__ import annotations

from typing import Any

from gymnasium.utils import seeding
from pettingzoo import ParallelEnv

from .env import raw_env
from .game import DiplomacyGame
from .observation import features, power_text
from .orders import check_orders, read_press

__all__ = ["parallel_env"]


class parallel_env(ParallelEnv):  # noqa: N801 - PettingZoo's naming convention
    """Diplomacy with simultaneous orders. Arguments as :class:`arena.diplomacy.env.raw_env`.

    Example:
        >>> e = parallel_env(max_year=1901)
        >>> obs, infos = e.reset(seed=0)
        >>> sum(i["acting"] for i in infos.values())
        7
        >>> obs, rewards, terms, truncs, infos = e.step({"france": "A PAR - BUR", "germany": "A MUN - BUR"})
        >>> infos["france"]["phase"], e.game.history[-1]["results"]["A PAR"]
        ('F1901M', ['bounce'])
    """

    metadata = {"name": "diplomacy_v0", "render_modes": ["ansi", "human", "svg"], "is_parallelizable": True}

    def __init__(self, **kwargs: Any):
        self._aec = raw_env(**kwargs)
        if self._aec.variant != "text":
            raise ValueError(
                f"parallel_env plays the text variant only, got variant={self._aec.variant!r} "
                "(the discrete view orders one unit per step: use env() or raw_env())"
            )
        self.config = self._aec.config
        self.render_mode = self._aec.render_mode
        self.possible_agents = list(self._aec.possible_agents)
        self.agents: list[str] = []
        self.np_random, self.np_random_seed = seeding.np_random(None)

    def observation_space(self, agent: str):
        return self._aec.observation_space(agent)

    def action_space(self, agent: str):
        return self._aec.action_space(agent)

    @property
    def game(self) -> DiplomacyGame:
        return self._aec.game

    def reset(self, seed: int | None = None, options: dict[str, Any] | None = None):
        self._aec.reset(seed=seed, options=options)
        if seed is not None:
            self.np_random, self.np_random_seed = seeding.np_random(seed)
        self.agents = list(self.possible_agents)
        return {a: self._observe(a) for a in self.agents}, self._infos()

    def _observe(self, agent: str) -> dict[str, Any]:
        power = self._aec._power[agent]
        g = self.game
        return {
            "observation": features(g, power),
            "text": power_text(g, power, error=self._aec._errors[agent], max_chars=self._aec.max_text_chars),
        }

    def _infos(self) -> dict[str, dict[str, Any]]:
        self._aec._update_infos()
        return {a: self._aec.infos[a] for a in self.agents}

    def step(self, actions: dict[str, Any]):
        g = self.game
        aec = self._aec
        errors_of = aec._errors
        for a in self.agents:
            errors_of[a] = ""
        stage, due = g.stage, list(g.acting)
        replies: dict[str, Any] = {}
        for power in due:
            agent = power.lower()
            action = actions.get(agent)
            text = action if isinstance(action, str) else None
            if text is None:
                errors = [f"no text action given for {agent}, whose turn it is"] if action is None else [
                    f"the action must be text, got {type(action).__name__}"
                ]
                reply: Any = []
            elif stage == "press":
                reply, errors = read_press(text, power, g.config.max_message_chars)
            else:
                reply, errors = check_orders(g, power, text)
            if errors:
                aec._invalid[agent] += len(errors)
                errors_of[agent] = "; ".join(errors) + " (those lines were dropped)"
            replies[power] = reply
        for power in due:  # every reply is read against the same position before any is applied
            if stage == "press":
                g.submit(power, press=replies[power])
            else:
                g.submit(power, orders=replies[power])
        aec._steps += 1
        rewards = {a: 0.0 for a in self.agents}
        scores = g.scores() if g.done else None
        terminations = {}
        for a in self.agents:
            power = aec._power[a]
            ended = g.done or not g.alive(power)
            terminations[a] = ended
            if g.done:
                rewards[a] = scores[power]
        cap = aec.max_cycles
        truncated = cap is not None and aec._steps >= cap and not g.done
        truncations = {a: truncated for a in self.agents}
        observations = {a: self._observe(a) for a in self.agents}
        infos = self._infos()
        self.agents = [a for a in self.agents if not (terminations[a] or truncations[a])]
        return observations, rewards, terminations, truncations, infos

    def render(self) -> str | None:
        return self._aec.render()

    def close(self) -> None:
        self._aec.close()

    def state(self):
        raise NotImplementedError("Diplomacy has no global state array; every power sees the same board")
