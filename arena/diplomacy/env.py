"""Diplomacy as a PettingZoo AEC environment (the manual is the docstring of ``arena.diplomacy_v0``).

* ``raw_env`` - the turn-based environment: the powers due in a stage reply one after the other;
  the engine adjudicates once every power has ordered.
* ``env`` - ``raw_env`` with PettingZoo's order enforcement.
"""

from __future__ import annotations

from typing import Any

import gymnasium
import numpy as np
from gymnasium import spaces
from gymnasium.utils import seeding
from pettingzoo import AECEnv
from pettingzoo.utils import wrappers

from evolver_gym.core.spaces import UnicodeText

from .game import AGENTS, POWERS, DiplomacyConfig, DiplomacyGame
from .observation import feature_size, features, power_text
from .orders import check_orders, read_press

__all__ = ["raw_env", "env", "RENDER_MODES"]

RENDER_MODES = ("ansi", "human", "svg")
_TEXT_EXAMPLES = (
    "PASS",
    "A PAR - BUR\nA MAR - SPA\nF BRE - MAO",
    "A PAR H",
    "F LON - NTH\nA LVP - YOR",
    "TO ENGLAND: I will keep out of the Channel.",
    "TO ALL: peace this year?",
    "WAIVE",
    "no orders today",
)


class raw_env(AECEnv):  # noqa: N801 - PettingZoo's naming convention
    """The Diplomacy AEC environment. See :mod:`arena.diplomacy_v0` for the manual.

    Args:
        max_year: Last year played (the game ends after its Winter as a draw scored by centres).
        press_rounds: Press stages before each movement phase's orders (0: no press).
        config: A :class:`DiplomacyConfig` instead of the rule keywords.
        render_mode: ``"ansi"`` (returns the board as text), ``"human"`` (prints it) or ``"svg"``
            (returns the engine's SVG map).
        max_text_chars: Longest text observation (older press is dropped first).
        max_cycles: Optional cap on environment steps; every power is truncated there.

    Example:
        >>> e = raw_env(max_year=1901)
        >>> e.reset(seed=0)
        >>> e.agent_selection, e.infos["austria"]["legal_actions"][:2]
        ('austria', ['A BUD - GAL', 'A BUD - RUM'])
        >>> e.step("A BUD - SER\\nA VIE - GAL\\nF TRI - ALB")
        >>> e.agent_selection, e.infos["austria"]["phase"]
        ('england', 'S1901M')
    """

    metadata = {"name": "diplomacy_v0", "render_modes": list(RENDER_MODES), "is_parallelizable": True}

    def __init__(
        self,
        max_year: int = 1910,
        press_rounds: int = 0,
        config: DiplomacyConfig | None = None,
        render_mode: str | None = None,
        max_text_chars: int = 32768,
        max_cycles: int | None = None,
        **rules: Any,
    ):
        super().__init__()
        if render_mode is not None and render_mode not in RENDER_MODES:
            raise ValueError(f"render_mode must be one of {RENDER_MODES} or None, got {render_mode!r}")
        if not isinstance(max_text_chars, int) or max_text_chars < 4096:
            raise ValueError(f"max_text_chars must be an int >= 4096, got {max_text_chars!r}")
        if max_cycles is not None and (not isinstance(max_cycles, int) or max_cycles < 1):
            raise ValueError(f"max_cycles must be a positive int or None, got {max_cycles!r}")
        if config is None:
            config = DiplomacyConfig(max_year=max_year, press_rounds=press_rounds, **rules)
        elif rules:
            config = config.with_(**rules)
        self.config = config
        self.render_mode = render_mode
        self.max_text_chars = max_text_chars
        self.max_cycles = max_cycles
        self.possible_agents = list(AGENTS)
        self._power = dict(zip(AGENTS, POWERS))
        self._obs_space = spaces.Dict(
            {
                "observation": spaces.Box(0.0, 1.0, (feature_size(),), np.float32),
                "text": UnicodeText(max_text_chars),
            }
        )
        self._act_space = UnicodeText(8192, examples=_TEXT_EXAMPLES)
        self.game: DiplomacyGame | None = None
        self.np_random, self.np_random_seed = seeding.np_random(None)

    def observation_space(self, agent: str) -> spaces.Space:
        return self._obs_space

    def action_space(self, agent: str) -> spaces.Space:
        return self._act_space

    # -- episode ----------------------------------------------------------------------------
    def reset(self, seed: int | None = None, options: dict[str, Any] | None = None) -> None:
        """New game from the standard opening, or from ``options["start"]`` (see
        :class:`~arena.diplomacy.game.DiplomacyGame`). The game has no chance: the seed only seeds
        ``np_random`` (and the action space's samples)."""
        if seed is not None:
            self.np_random, self.np_random_seed = seeding.np_random(seed)
            self._act_space.seed(int(self.np_random.integers(2**31)))
        options = options or {}
        self.game = DiplomacyGame(self.config, options.get("start"))
        self.agents = list(self.possible_agents)
        self.rewards = dict.fromkeys(self.agents, 0.0)
        self._cumulative_rewards = dict.fromkeys(self.agents, 0.0)
        self.terminations = dict.fromkeys(self.agents, False)
        self.truncations = dict.fromkeys(self.agents, False)
        self._invalid = dict.fromkeys(self.agents, 0)
        self._errors = dict.fromkeys(self.agents, "")
        self._retries = 0
        self._steps = 0
        self.infos = {a: {} for a in self.agents}
        self._settle()

    def observe(self, agent: str) -> dict[str, Any]:
        power = self._power[agent]
        g = self.game
        return {
            "observation": features(g, power),
            "text": power_text(g, power, error=self._errors[agent], max_chars=self.max_text_chars),
        }

    # -- stepping ---------------------------------------------------------------------------
    def step(self, action: Any) -> None:
        agent = self.agent_selection
        if self.terminations[agent] or self.truncations[agent]:
            self._was_dead_step(action)
            return
        power = self._power[agent]
        g = self.game
        self._cumulative_rewards[agent] = 0.0
        self._clear_rewards()
        self._steps += 1
        text = action if isinstance(action, str) else None
        if g.stage == "press":
            sent, errors = read_press(text, power, g.config.max_message_chars) if text is not None else (
                [],
                [f"the action must be text, got {type(action).__name__}"],
            )
            self._invalid[agent] += len(errors)
            self._errors[agent] = "; ".join(errors)
            self._retries = 0
            g.submit(power, press=sent)  # press is not asked again: what was readable is sent
        else:
            orders, errors = check_orders(g, power, text) if text is not None else (
                [],
                [f"the action must be text, got {type(action).__name__}"],
            )
            self._invalid[agent] += len(errors)
            if errors and self._retries < g.config.max_retries:
                self._retries += 1
                self._errors[agent] = "; ".join(errors) + " (nothing was ordered yet: reply again)"
                self._update_infos()
                self._check_truncation()
                return
            self._errors[agent] = "; ".join(errors) + (" (those lines were dropped)" if errors else "")
            self._retries = 0
            g.submit(power, orders=orders)
        self._settle()

    def _settle(self) -> None:
        """After the game moved: rewards and terminations, the next power to act, the infos."""
        g = self.game
        for a in self.agents:
            p = self._power[a]
            if not self.terminations[a] and (g.done or not g.alive(p)):
                self.terminations[a] = True
                self.rewards[a] = g.scores()[p] if g.done else 0.0
        self._update_infos()
        if any(self.rewards.values()):
            self._accumulate_rewards()
        self._check_truncation()
        pending = [a for a in self.agents if self._power[a] in g.acting and self._power[a] not in g.submitted]
        dead = [a for a in self.agents if self.terminations[a] or self.truncations[a]]
        if dead:
            self.agent_selection = dead[0]
            self._skip_agent_selection = pending[0] if pending else None
        elif pending:
            self.agent_selection = pending[0]

    def _was_dead_step(self, action: Any) -> None:
        if action is not None:
            raise ValueError("when an agent is dead, the only valid action is None")
        agent = self.agent_selection
        for table in (self.terminations, self.truncations, self.rewards, self._cumulative_rewards, self.infos):
            del table[agent]
        self.agents.remove(agent)
        dead = [a for a in self.agents if self.terminations[a] or self.truncations[a]]
        if dead:
            self.agent_selection = dead[0]
        elif getattr(self, "_skip_agent_selection", None) is not None:
            self.agent_selection = self._skip_agent_selection
            self._skip_agent_selection = None
        self._clear_rewards()

    def _check_truncation(self) -> None:
        if self.max_cycles is not None and self._steps >= self.max_cycles and not self.game.done:
            for a in self.agents:
                self.truncations[a] = True

    def _update_infos(self) -> None:
        g = self.game
        scores = g.scores() if g.done else None
        for a in self.agents:
            p = self._power[a]
            acting = p in g.acting and p not in g.submitted
            info = {
                "phase": g.phase,
                "phase_type": g.phase_type,
                "stage": "end" if g.done else g.stage,
                "acting": acting,
                "power": p,
                "centers": len(g.centers(p)),
                "units": len(g.units(p)),
                "invalid_actions": self._invalid[a],
                "error": self._errors[a],
                "legal_actions": (
                    [o for orders in g.legal_orders(p).values() for o in orders]
                    if acting and g.stage == "orders"
                    else []
                ),
            }
            if g.done:
                info.update(winner=g.winner, end_reason=g.end_reason, scores=scores,
                            supply_centers={q: len(g.centers(q)) for q in POWERS})
            self.infos[a] = info

    # -- rendering --------------------------------------------------------------------------
    def render(self) -> str | None:
        if self.render_mode is None:
            gymnasium.logger.warn("render() called without a render_mode; pass 'ansi', 'human' or 'svg'.")
            return None
        g = self.game
        if g is None:
            text = "(no game yet: call reset())"
        elif self.render_mode == "svg":
            return g.render_svg()
        else:
            from .observation import _board_lines, _last_phase_lines

            text = "\n".join([f"Phase {g.phase}, stage {g.stage if not g.done else 'end'}", *_board_lines(g),
                              *_last_phase_lines(g)])
        if self.render_mode == "human":
            print(text)
            return None
        return text

    def close(self) -> None:
        pass


def env(**kwargs: Any) -> AECEnv:
    """``raw_env`` with PettingZoo's order enforcement (the actions are text: no bounds check).

    Example:
        >>> e = env(max_year=1901)
        >>> e.reset(seed=0)
        >>> for agent in e.agent_iter():
        ...     obs, reward, terminated, truncated, info = e.last()
        ...     e.step(None if terminated or truncated else "PASS")
        >>> info["end_reason"], round(sum(info["scores"].values()), 6)
        ('year_limit', 1.0)
    """
    return wrappers.OrderEnforcingWrapper(raw_env(**kwargs))
