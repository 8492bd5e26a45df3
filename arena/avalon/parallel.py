"""Avalon as a native PettingZoo ``ParallelEnv``: votes and quest cards are simultaneous.

* ``parallel_env`` - every seat whose choice is due acts in the same step: all players vote
  together, all quest members play their cards together; discussion, proposals and the
  assassination take one step each. Seats with nothing to do see a NOOP-only mask (code 0).

Same observations, spaces, rewards and variants as :class:`arena.avalon.env.raw_env`. A parallel
step cannot ask a seat again, so an invalid action is replaced at once by the seeded fallback and
counted (``info["invalid_actions"]``, ``info["fallback_actions"]``, ``info["error"]``).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from gymnasium.utils import seeding

from ..extras import PETTINGZOO_USERS, missing_extra

try:
    from pettingzoo import ParallelEnv
except ModuleNotFoundError as exc:  # the 'arena' extra
    raise missing_extra(exc, PETTINGZOO_USERS) from exc

from .actions import ParseError
from .engine import AvalonGame, IllegalAction
from .env import raw_env
from .observation import allowed_action_texts, features, legal_action_texts, seat_text
from .rules import GOOD_ROLES

__all__ = ["parallel_env"]


class parallel_env(ParallelEnv):  # noqa: N801 - PettingZoo's naming convention
    """Avalon with simultaneous hidden choices. Arguments as :class:`arena.avalon.env.raw_env`.

    Example:
        >>> env = parallel_env(num_players=5, discussion_rounds=0)
        >>> obs, infos = env.reset(seed=0)
        >>> leader = next(a for a, i in infos.items() if i["acting"])
        >>> team = int(np.flatnonzero(obs[leader]["action_mask"])[0])
        >>> obs, *_ = env.step({a: (team if a == leader else 0) for a in env.agents})
        >>> sum(bool(o["action_mask"][0]) for o in obs.values())   # everyone votes now, no NOOP
        0
    """

    metadata = {"name": "avalon_v0", "render_modes": ["ansi", "human"], "is_parallelizable": True}

    def __init__(self, **kwargs: Any):
        # The AEC env holds the shared configuration, spaces, decoding and fallbacks.
        self._aec = raw_env(**kwargs)
        self.config = self._aec.config
        self.variant = self._aec.variant
        self.render_mode = self._aec.render_mode
        self.codec = self._aec.codec
        self.possible_agents = list(self._aec.possible_agents)
        self.agents: list[str] = []
        self._mask_key, self._mask_alias = self._aec._mask_key, self._aec._mask_alias
        self.np_random, self.np_random_seed = seeding.np_random(None)

    def observation_space(self, agent: str):
        return self._aec.observation_space(agent)

    def action_space(self, agent: str):
        return self._aec.action_space(agent)

    @property
    def game(self) -> AvalonGame:
        return self._aec.game

    def reset(self, seed: int | None = None, options: dict[str, Any] | None = None):
        self._aec.reset(seed=seed, options=options)
        self.agents = list(self.possible_agents)
        self._invalid = {a: 0 for a in self.agents}
        self._fallbacks = {a: 0 for a in self.agents}
        self._errors = {a: "" for a in self.agents}
        return {a: self._observe(a) for a in self.agents}, self._infos()

    def _observe(self, agent: str) -> dict[str, Any]:
        seat = self._aec._seat[agent]
        g = self.game
        mask = np.zeros(self.codec.size, dtype=np.int8)
        codes = g.legal_codes(seat, simultaneous=True)
        if codes:
            mask[list(codes)] = 1
        else:
            mask[0] = 1  # NOOP: nothing to do this step
        text = seat_text(
            g, seat, self.variant, error=self._errors[agent], max_chars=self._aec.max_text_chars, simultaneous=True
        )
        obs = {"observation": features(g, seat), self._mask_key: mask, "text": text}
        if self._mask_alias:  # the text variant's deprecated name of the same mask
            obs[self._mask_alias] = mask
        return obs

    def _infos(self) -> dict[str, dict[str, Any]]:
        g = self.game
        pending = set(g.pending())
        infos = {}
        for a in self.agents:
            seat = self._aec._seat[a]
            info = {
                "phase": g.phase,
                "acting": seat in pending,
                "role": g.roles[seat],
                "side": "evil" if g.is_evil[seat] else "good",
                "invalid_actions": self._invalid[a],
                "fallback_actions": self._fallbacks[a],
                "error": self._errors[a],
            }
            if self.variant == "text":
                info["allowed_actions"] = allowed_action_texts(g, seat, simultaneous=True)
                info["legal_actions"] = legal_action_texts(g, seat, simultaneous=True)  # deprecated until 0.2
            if g.done:
                info.update(winner=g.winner, end_reason=g.end_reason, roles=list(g.roles))
            infos[a] = info
        return infos

    def step(self, actions: dict[str, Any]):
        g = self.game
        for a in self.agents:
            self._errors[a] = ""
        for seat in g.pending():
            agent = self.possible_agents[seat]
            action = actions.get(agent)
            try:
                if action is None:
                    raise ParseError(f"no action given for {agent}, whose turn it is")
                code, speech = self._aec._decode(seat, action)
            except (ParseError, IllegalAction) as exc:
                self._invalid[agent] += 1
                self._fallbacks[agent] += 1
                self._errors[agent] = f"{exc}; a fallback action was played for you"
                code, speech = self._aec._fallback(seat), None
            g.step(code, speech)
        rewards = {a: 0.0 for a in self.agents}
        terminations = {a: g.done for a in self.agents}
        if g.done:
            for a in self.agents:
                good = g.roles[self._aec._seat[a]] in GOOD_ROLES
                rewards[a] = 1.0 if (g.winner == "good") == good else -1.0
        self._aec._steps += 1
        cap = self._aec.max_cycles
        truncated = cap is not None and self._aec._steps >= cap and not g.done
        truncations = {a: truncated for a in self.agents}
        observations = {a: self._observe(a) for a in self.agents}
        infos = self._infos()
        if g.done or truncated:
            self.agents = []
        return observations, rewards, terminations, truncations, infos

    def render(self) -> str | None:
        return self._aec.render()

    def close(self) -> None:
        self._aec.close()

    def state(self) -> np.ndarray:
        raise NotImplementedError("Avalon has no global state array: every view is a seat's information set")
