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

__all__ = ["raw_env", "env", "RENDER_MODES", "VARIANTS", "MAX_CHOICES"]

RENDER_MODES = ("ansi", "human", "svg")
VARIANTS = ("text", "discrete")
MAX_CHOICES = 256  # discrete view: 0 = no order, then up to 255 legal orders of one unit (93 seen at most)
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
        variant: ``"text"`` (a power's orders as one text reply) or ``"discrete"`` (one unit per
            step: ``Discrete(256)``, 0 = no order, ``i`` = the unit's ``i``-th legal order in sorted
            order, under ``"action_mask"``; no press).
        config: A :class:`DiplomacyConfig` instead of the rule keywords.
        render_mode: ``"ansi"`` (returns the board as text), ``"human"`` (prints it) or ``"svg"``
            (returns the engine's SVG map).
        max_text_chars: Longest text observation (older press is dropped first).
        max_cycles: Optional cap on environment steps; every power is truncated there.

    Example:
        >>> e = raw_env(max_year=1901)
        >>> e.reset(seed=0)
        >>> e.agent_selection, e.infos["austria"]["legal_orders"]["BUD"][:2], e.infos["austria"]["allowed_actions"]
        ('austria', ['A BUD - GAL', 'A BUD - RUM'], None)
        >>> e.step("A BUD - SER\\nA VIE - GAL\\nF TRI - ALB")
        >>> e.agent_selection, e.infos["austria"]["phase"]
        ('england', 'S1901M')
    """

    metadata = {"name": "diplomacy_v0", "render_modes": list(RENDER_MODES), "is_parallelizable": True}

    def __init__(
        self,
        max_year: int = 1910,
        press_rounds: int = 0,
        variant: str = "text",
        config: DiplomacyConfig | None = None,
        render_mode: str | None = None,
        max_text_chars: int = 32768,
        max_cycles: int | None = None,
        **rules: Any,
    ):
        super().__init__()
        if variant not in VARIANTS:
            raise ValueError(f"variant must be one of {VARIANTS}, got {variant!r}")
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
        if variant == "discrete" and config.press_rounds:
            raise ValueError(
                f"the discrete variant has no press (press_rounds={config.press_rounds}); use variant='text'"
            )
        self.config = config
        self.variant = variant
        self.render_mode = render_mode
        self.max_text_chars = max_text_chars
        self.max_cycles = max_cycles
        self.possible_agents = list(AGENTS)
        self._power = dict(zip(AGENTS, POWERS))
        parts: dict[str, spaces.Space] = {"observation": spaces.Box(0.0, 1.0, (feature_size(),), np.float32)}
        if variant == "discrete":
            parts["action_mask"] = spaces.Box(0, 1, (MAX_CHOICES,), np.int8)
            self._act_space: spaces.Space = spaces.Discrete(MAX_CHOICES)
        else:
            self._act_space = UnicodeText(8192, examples=_TEXT_EXAMPLES)
        parts["text"] = UnicodeText(max_text_chars)
        self._obs_space = spaces.Dict(parts)
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
        self._cursors: dict[str, _UnitCursor] = {}  # discrete view: each power's progress this phase
        self.infos = {a: {} for a in self.agents}
        self._settle()

    def observe(self, agent: str) -> dict[str, Any]:
        power = self._power[agent]
        g = self.game
        if self.variant == "text":
            return {
                "observation": features(g, power),
                "text": power_text(g, power, error=self._errors[agent], max_chars=self.max_text_chars),
            }
        cursor = self._cursor_of(power)
        mask = np.zeros(MAX_CHOICES, dtype=np.int8)
        if cursor is None:
            return {
                "observation": features(g, power),
                "action_mask": mask,
                "text": power_text(g, power, error=self._errors[agent], max_chars=self.max_text_chars),
            }
        mask[: len(cursor.choices()) + 1] = 1
        if cursor.quota_used():
            mask[1:] = 0
        lines = [f"Order {cursor.i + 1} of {len(cursor.locs)}: your unit in {cursor.loc}. Reply with one number:"]
        lines += [f"  {i}: {o}" for i, o in enumerate(["no order", *cursor.choices()]) if mask[i]]
        text = power_text(g, power, error=self._errors[agent], max_chars=self.max_text_chars, instruction=lines)
        return {"observation": features(g, power, cursor.loc), "action_mask": mask, "text": text}

    def _cursor_of(self, power: str) -> _UnitCursor | None:
        """The discrete view's unit-by-unit state of ``power`` if it is ordering now."""
        g = self.game
        if g.done or g.stage != "orders" or power not in g.acting or power in g.submitted:
            return None
        c = self._cursors.get(power)
        if c is None or c.phase != g.phase:
            c = self._cursors[power] = _UnitCursor(g, power)
        return c

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
        if self.variant == "discrete":
            self._step_unit(agent, power, action)
            return
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

    def _step_unit(self, agent: str, power: str, action: Any) -> None:
        """Discrete view: ``action`` orders the next unit; the last unit's order submits them all."""
        cursor = self._cursor_of(power)
        mask = self.observe(agent)["action_mask"]
        code = int(action) if type(action) is int or isinstance(action, np.integer) else None
        if code is None or not 0 <= code < MAX_CHOICES or not mask[code]:
            self._invalid[agent] += 1
            self._errors[agent] = f"{action!r} is not an allowed choice for the unit in {cursor.loc}; it got no order"
            code = 0
        else:
            self._errors[agent] = ""
        cursor.choose(code)
        if cursor.i < len(cursor.locs):
            self._update_infos()
            self._check_truncation()
            if self.truncations[agent]:
                self.agent_selection = agent
            return
        del self._cursors[power]
        orders, errors = check_orders(self.game, power, "\n".join(cursor.orders))
        assert not errors, errors  # every choice was one of the engine's legal orders
        self.game.submit(power, orders=orders)
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
                "ordering": None,
                "power": p,
                "centers": len(g.centers(p)),
                "units": len(g.units(p)),
                "invalid_actions": self._invalid[a],
                "error": self._errors[a],
            }
            if self.variant == "text":
                legal = g.legal_orders(p) if acting and g.stage == "orders" else {}
                info["legal_orders"] = {loc: list(orders) for loc, orders in legal.items()}
                info["allowed_actions"] = self._allowed_actions(acting, legal)
                # Deprecated until 0.2: every legal order line, of all units in one list.
                info["legal_actions"] = [o for orders in legal.values() for o in orders]
            else:
                info["legal_actions"] = []  # deprecated until 0.2; the discrete view's choices are its mask
            if acting and self.variant == "discrete":
                cursor = self._cursor_of(p)
                info["ordering"] = cursor.loc if cursor is not None else None
            if g.done:
                info.update(winner=g.winner, end_reason=g.end_reason, scores=scores,
                            supply_centers={q: len(g.centers(q)) for q in POWERS})
            self.infos[a] = info

    def _allowed_actions(self, acting: bool, legal: dict[str, list[str]]) -> list[str] | None:
        """The text variant's ``info["allowed_actions"]`` (see the manual's Info section)."""
        if not acting or self.game.done:
            return []
        if self.game.stage == "press" or len(legal) > 1:
            return None  # free press, or a set of orders (one line per unit): not one list of replies
        return [*(o for orders in legal.values() for o in orders), "PASS"]  # one unit: one order, or none

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


class _UnitCursor:
    """The discrete view's progress through one power's units in one phase: the location asked
    next, its numbered choices (0 = no order), the orders chosen so far and the build or disband
    quota of a Winter."""

    def __init__(self, game: DiplomacyGame, power: str):
        self.power, self.phase = power, game.phase
        self.legal = game.legal_orders(power)
        self.locs = list(self.legal)
        self.i = 0
        self.orders: list[str] = []
        k = game.builds(power)
        self.quota = abs(k) if game.phase_type == "adjustments" else None

    @property
    def loc(self) -> str:
        return self.locs[self.i]

    def choices(self) -> list[str]:
        """The unit's legal orders (``WAIVE`` is choice 0), at most ``MAX_CHOICES - 1``."""
        return [o for o in self.legal[self.loc] if o != "WAIVE"][: MAX_CHOICES - 1]

    def quota_used(self) -> bool:
        return self.quota is not None and len(self.orders) >= self.quota

    def choose(self, code: int) -> None:
        if code:
            self.orders.append(self.choices()[code - 1])
        self.i += 1


def env(**kwargs: Any) -> AECEnv:
    """``raw_env`` with PettingZoo's order enforcement (and a bounds check for the discrete variant).

    Example:
        >>> e = env(max_year=1901)
        >>> e.reset(seed=0)
        >>> for agent in e.agent_iter():
        ...     obs, reward, terminated, truncated, info = e.last()
        ...     e.step(None if terminated or truncated else "PASS")
        >>> info["end_reason"], round(sum(info["scores"].values()), 6)
        ('year_limit', 1.0)
    """
    e: AECEnv = raw_env(**kwargs)
    if e.variant == "discrete":
        e = wrappers.AssertOutOfBoundsWrapper(e)
    return wrappers.OrderEnforcingWrapper(e)
