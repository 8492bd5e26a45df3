"""Avalon as a PettingZoo AEC environment (the manual is the docstring of ``arena.avalon_v0``).

* ``raw_env`` - the AEC environment (discrete or text action variant).
* ``env`` - ``raw_env`` with PettingZoo's standard wrappers.
* ``turn_based_parallel_env`` - PettingZoo's turn-based parallel view of ``raw_env`` (only the
  acting seat's action is applied). The native parallel env is :mod:`arena.avalon.parallel`.
"""

from __future__ import annotations

from typing import Any

import gymnasium
import numpy as np
from gymnasium import spaces
from gymnasium.utils import seeding

from evolver_gym.core.spaces import UnicodeText

from ..extras import PETTINGZOO_USERS, missing_extra

try:
    from pettingzoo import AECEnv
    from pettingzoo.utils import wrappers
    from pettingzoo.utils.conversions import turn_based_aec_to_parallel
    from pettingzoo.utils.env_logger import EnvLogger
    from pettingzoo.utils.wrappers.order_enforcing import AECOrderEnforcingIterable, AECOrderEnforcingIterator
except ModuleNotFoundError as exc:  # the 'arena' extra
    raise missing_extra(exc, PETTINGZOO_USERS) from exc

from .actions import ActionCodec, ParseError, parse_action, sanitize_speech
from .engine import AvalonGame, IllegalAction, SeatView
from .observation import _layout, allowed_action_texts, features, legal_action_texts, legal_mask, seat_text
from .rules import GOOD_ROLES, AvalonConfig

__all__ = ["raw_env", "env", "turn_based_parallel_env", "VARIANTS", "RENDER_VIEWS"]

VARIANTS = ("discrete", "text")
RENDER_VIEWS = ("public", "omniscient")
_TEXT_EXAMPLES = (
    "PASS",
    "SAY: I am loyal to Arthur.",
    "TEAM: 0, 1",
    "TEAM: 0, 1, 2",
    "VOTE: approve",
    "VOTE: reject",
    "QUEST: success",
    "QUEST: fail",
    "ASSASSINATE: 0",
    "ASSASSINATE: 1",
    "I have no idea.",
)


class _PlayedAsSuccess(IllegalAction):
    """A Fail card from a seat that must play Success; it is played as Success, not asked again."""


class raw_env(AECEnv):  # noqa: N801 - PettingZoo's naming convention
    """The Avalon AEC environment. See :mod:`arena.avalon_v0` for the full manual.

    Args:
        num_players: 5 to 10 (ignored when ``config`` is given).
        variant: ``"discrete"`` (``Discrete`` flat code) or ``"text"`` (string actions parsed by the
            text protocol, the complete legal replies in ``info["allowed_actions"]``); both put the mask
            over the flat code under ``"action_mask"`` (the text variant also under the deprecated
            ``"legal_mask"``, the same array, until 0.2).
        config: An :class:`AvalonConfig`; other rule keywords (``special_roles``, ``hammer``, ...)
            build one when it is omitted.
        render_mode: ``"ansi"`` (returns the transcript) or ``"human"`` (prints it).
        render_view: ``"public"`` (what a spectator may see), ``"omniscient"`` (roles shown) or a
            seat ``"player_<i>"`` (that seat's own text observation).
        max_text_chars: Longest text observation; older transcript lines are dropped beyond it.
        max_cycles: Optional cap on environment steps; the game is truncated for all seats there.
    """

    metadata = {"name": "avalon_v0", "render_modes": ["ansi", "human"], "is_parallelizable": False}

    def __init__(
        self,
        num_players: int = 5,
        variant: str = "discrete",
        config: AvalonConfig | None = None,
        render_mode: str | None = None,
        render_view: str = "public",
        max_text_chars: int = 32768,
        max_cycles: int | None = None,
        **rules: Any,
    ):
        super().__init__()
        if variant not in VARIANTS:
            raise ValueError(f"variant must be one of {VARIANTS}, got {variant!r}")
        if render_mode is not None and render_mode not in self.metadata["render_modes"]:
            raise ValueError(
                f"render_mode must be one of {self.metadata['render_modes']} or None, got {render_mode!r}"
            )
        n_seats = config.num_players if config is not None else num_players
        seat_views = [f"player_{i}" for i in range(n_seats)] if isinstance(n_seats, int) else []
        if render_view not in RENDER_VIEWS and render_view not in seat_views:
            raise ValueError(
                f"render_view must be one of {RENDER_VIEWS} or a seat 'player_<i>', got {render_view!r}"
            )
        if not isinstance(max_text_chars, int) or max_text_chars < 2048:
            raise ValueError(f"max_text_chars must be an int >= 2048, got {max_text_chars!r}")
        if max_cycles is not None and (not isinstance(max_cycles, int) or max_cycles < 1):
            raise ValueError(f"max_cycles must be a positive int or None, got {max_cycles!r}")
        if config is None:
            config = AvalonConfig(num_players=num_players, **rules)
        elif rules:
            config = config.with_(**rules)
        self.config = config
        self.variant = variant
        self.render_mode = render_mode
        self.render_view = render_view
        self.max_text_chars = max_text_chars
        self.max_cycles = max_cycles
        n = config.num_players
        self.codec = ActionCodec(n)
        self.possible_agents = [f"player_{i}" for i in range(n)]
        self._seat = {a: i for i, a in enumerate(self.possible_agents)}
        self._mask_key = "action_mask"
        # The text variant's mask was "legal_mask": the same array stays under that name until 0.2.
        self._mask_alias = "legal_mask" if variant == "text" else None
        mask_space = spaces.Box(0, 1, (self.codec.size,), np.int8)
        self._obs_space = spaces.Dict(
            {
                "observation": spaces.Box(0.0, 1.0, (_layout(n).size,), np.float32),
                self._mask_key: mask_space,
                "text": UnicodeText(max_text_chars),
                **({self._mask_alias: mask_space} if self._mask_alias else {}),
            }
        )
        if variant == "discrete":
            self._act_space: spaces.Space = spaces.Discrete(self.codec.size)
        else:
            self._act_space = UnicodeText(4096, examples=_TEXT_EXAMPLES)
        self.game: AvalonGame | None = None
        self.np_random, self.np_random_seed = seeding.np_random(None)

    # -- spaces (same object every call, as api_test requires) ------------------------------
    def observation_space(self, agent: str) -> spaces.Space:
        return self._obs_space

    def action_space(self, agent: str) -> spaces.Space:
        return self._act_space

    # -- episode ----------------------------------------------------------------------------
    def reset(self, seed: int | None = None, options: dict[str, Any] | None = None) -> None:
        """New deal. ``options`` may fix ``roles`` (one per seat) and ``leader`` (a seat)."""
        if seed is not None:
            self.np_random, self.np_random_seed = seeding.np_random(seed)
        options = options or {}
        if "roles" in options:
            leader = options.get("leader")
            if leader is None:
                leader = int(self.np_random.integers(self.config.num_players))
            self.game = AvalonGame(self.config, tuple(options["roles"]), int(leader))
        else:
            self.game = AvalonGame.deal(self.config, self.np_random)
            if "leader" in options:
                self.game = AvalonGame(self.config, self.game.roles, int(options["leader"]))
        self.agents = agents = self.possible_agents[:]
        self.rewards = dict.fromkeys(agents, 0.0)  # immutable values: one shared default is safe
        self._cumulative_rewards = dict.fromkeys(agents, 0.0)
        self.terminations = dict.fromkeys(agents, False)
        self.truncations = dict.fromkeys(agents, False)
        self._invalid = dict.fromkeys(agents, 0)
        self._fallbacks = dict.fromkeys(agents, 0)
        self._errors = dict.fromkeys(agents, "")
        self._retries = 0
        self._steps = 0
        self.agent_selection = self.possible_agents[self.game.actor]
        self.infos = {a: {} for a in self.agents}
        g = self.game
        self._seat_info = {a: (g.roles[s], "evil" if g.is_evil[s] else "good") for a, s in self._seat.items()}
        self._update_infos()

    def observe(self, agent: str) -> dict[str, Any]:
        seat = self._seat[agent]
        g = self.game
        obs = {
            "observation": features(g, seat),
            self._mask_key: legal_mask(g, seat, self.codec.size),
            "text": seat_text(
                g, seat, self.variant, error=self._errors[agent], max_chars=self.max_text_chars
            ),
        }
        if self._mask_alias:
            obs[self._mask_alias] = obs[self._mask_key]
        return obs

    def info_set(self, agent: str) -> SeatView:
        """What ``agent`` may know now, as a structured view (what the bots decide from)."""
        return self.game.view(self._seat[agent])

    def _decode(self, seat: int, action: Any) -> tuple[int, str | None]:
        """Action -> (code, speech); raises ``ParseError``/``IllegalAction`` with the reason."""
        g = self.game
        if isinstance(action, str):
            if self.variant != "text":
                raise ParseError("the discrete variant takes an integer action code, got text")
            parsed = parse_action(action, g.phase, self.codec, team_size=g.team_size)
            if parsed.code is None:
                return self.codec.PASS, sanitize_speech(parsed.speech or "", self.config.max_message_chars)
            code = parsed.code
        else:
            try:
                code = int(action)
            except (TypeError, ValueError, OverflowError):
                raise ParseError(f"action {action!r} is neither an action code nor text") from None
        legal = g.legal_codes(seat, simultaneous=True)
        if code not in legal:
            if code == self.codec.FAIL and g.phase == "quest" and legal == self.codec.SUCCESS_ONLY:
                # A must-succeed seat's Fail card is played as Success at once: asking again would
                # keep the turn and show everyone that this seat is good.
                raise _PlayedAsSuccess("good players must play SUCCESS; your card was played as SUCCESS")
            desc = self.codec.describe(code) if 0 <= code < self.codec.size else str(code)
            raise IllegalAction(f"{desc!r} is not legal for Player {seat} in phase {g.phase}")
        return code, None

    def _fallback(self, seat: int) -> int:
        """Seeded, deterministic fallback: PASS / random team / reject / success / random target."""
        g, c = self.game, self.codec
        phase = g.phase
        if phase == "discussion":
            return c.PASS
        if phase == "vote":
            return c.REJECT
        if phase == "quest":
            return c.SUCCESS
        legal = g.legal_codes(seat)
        return int(legal[int(self.np_random.integers(len(legal)))])

    def step(self, action: Any) -> None:
        agent = self.agent_selection
        if self.terminations[agent] or self.truncations[agent]:
            self._was_dead_step(action)
            return
        seat = self._seat[agent]
        g = self.game
        # Rewards are zero until the last step, so PettingZoo's clear/accumulate passes are only
        # needed there (they loop over every seat at every step otherwise).
        self._cumulative_rewards[agent] = 0.0
        self._steps += 1
        phase = g.phase
        if type(action) is int or isinstance(action, np.integer):
            # A code (a Python or NumPy integer): the engine checks it against the seat's legal set.
            try:
                g.step(int(action))
            except IllegalAction:  # nothing was played: the checks below say why, in this env's words
                pass
            else:
                self._errors[agent] = ""
                self._retries = 0
                self._after_step(agent, phase)
                return
        try:
            code, speech = self._decode(seat, action)
            self._errors[agent] = ""
            self._retries = 0
        except _PlayedAsSuccess as exc:
            self._invalid[agent] += 1
            self._errors[agent] = str(exc)
            self._retries = 0
            code, speech = self.codec.SUCCESS, None
        except (ParseError, IllegalAction) as exc:
            self._invalid[agent] += 1
            self._retries += 1
            if self._retries <= self.config.max_retries:
                # Same seat again, told what was wrong; the game does not move.
                self._errors[agent] = str(exc)
                self._update_infos((agent,))
                self._check_truncation()
                return
            code, speech = self._fallback(seat), None
            self._fallbacks[agent] += 1
            self._errors[agent] = ""
            self._retries = 0
        g.step(code, speech)
        self._after_step(agent, phase)

    def _after_step(self, agent: str, phase: str) -> None:
        """Rewards, the next seat and the infos after ``agent`` moved the game on from ``phase``."""
        g = self.game
        if g.phase == "end":
            for a in self.agents:
                good = g.roles[self._seat[a]] in GOOD_ROLES
                self.rewards[a] = 1.0 if (g.winner == "good") == good else -1.0
                self.terminations[a] = True
            self._update_infos()
            self._accumulate_rewards()
            self._deads_step_first()
            return
        actor = g.actor
        self.agent_selection = nxt = self.possible_agents[actor]
        if self.variant == "discrete":
            # The same dicts as ``_update_infos((agent, nxt))`` builds, written out for the two seats.
            new_phase, seat_info, infos = g.phase, self._seat_info, self.infos
            role, side = seat_info[agent]
            infos[agent] = {
                "phase": new_phase,
                "acting": agent == nxt,
                "role": role,
                "side": side,
                "invalid_actions": self._invalid[agent],
                "fallback_actions": self._fallbacks[agent],
                "error": self._errors[agent],
            }
            if nxt != agent:
                role, side = seat_info[nxt]
                infos[nxt] = {
                    "phase": new_phase,
                    "acting": True,
                    "role": role,
                    "side": side,
                    "invalid_actions": self._invalid[nxt],
                    "fallback_actions": self._fallbacks[nxt],
                    "error": self._errors[nxt],
                }
        else:
            self._update_infos((agent, nxt))
        if g.phase != phase:
            # Every other seat was idle before this step and still is: its info differs from the one
            # it has only in the phase (a fresh dict all the same).
            infos, text = self.infos, self.variant == "text"
            for a in self.agents:
                if a != agent and a != nxt:
                    info = infos[a].copy()
                    info["phase"] = g.phase
                    if text:
                        info["allowed_actions"] = []
                        info["legal_actions"] = []
                    infos[a] = info
        if self.max_cycles is not None:
            self._check_truncation()
            if self.truncations[agent]:
                self._deads_step_first()

    def _check_truncation(self) -> None:
        if self.max_cycles is not None and self._steps >= self.max_cycles and not self.game.done:
            for a in self.agents:
                self.truncations[a] = True

    def _update_infos(self, agents: tuple[str, ...] | None = None) -> None:
        """Rebuild the infos of ``agents`` (default: every seat). Within a phase only the seat that
        acted and the next actor can change; the other seats keep their dict, which is still exact."""
        g = self.game
        phase, actor, done, text = g.phase, g.actor, g.phase == "end", self.variant == "text"
        roles, is_evil, seat_of = g.roles, g.is_evil, self._seat
        invalid, fallbacks, errors, infos = self._invalid, self._fallbacks, self._errors, self.infos
        for a in self.agents if agents is None else agents:
            seat = seat_of[a]
            acting = actor == seat
            info = {
                "phase": phase,
                "acting": acting,
                "role": roles[seat],
                "side": "evil" if is_evil[seat] else "good",
                "invalid_actions": invalid[a],
                "fallback_actions": fallbacks[a],
                "error": errors[a],
            }
            if text:
                info["allowed_actions"] = allowed_action_texts(g, seat) if acting else []
                # Deprecated until 0.2: the reply forms, templates included ("SAY: <free text>").
                info["legal_actions"] = legal_action_texts(g, seat) if acting else []
            if done:
                info.update(winner=g.winner, end_reason=g.end_reason, roles=list(roles))
            infos[a] = info

    # -- rendering --------------------------------------------------------------------------
    def render(self) -> str | None:
        if self.render_mode is None:
            gymnasium.logger.warn(
                "render() called without a render_mode; pass render_mode='ansi' or 'human'."
            )
            return None
        g = self.game
        if g is None:
            text = "(no game yet: call reset())"
        else:
            if self.render_view in self._seat:  # exactly what that seat observes as text
                text = seat_text(g, self._seat[self.render_view], self.variant, max_chars=self.max_text_chars)
            else:
                lines = list(g.public_lines)
                if self.render_view == "omniscient":
                    lines.insert(0, "Roles: " + ", ".join(f"P{s} {r}" for s, r in enumerate(g.roles)))
                text = "\n".join(lines)
        if self.render_mode == "human":
            print(text)
            return None
        return text

    def close(self) -> None:
        pass


class _BoundsCheck(wrappers.AssertOutOfBoundsWrapper):
    """PettingZoo's bounds check that reads the raw env's state directly.

    Same assertion as :class:`pettingzoo.utils.wrappers.AssertOutOfBoundsWrapper` (an action outside
    the action space, other than ``None`` for a finished seat, fails it), without forwarding each
    attribute through ``__getattr__``.
    """

    def __init__(self, env: raw_env):
        super().__init__(env)
        self._raw = env
        self._space = space = env.action_space(env.possible_agents[0])  # one space object for every seat
        self._n = int(space.n)

    def step(self, action: Any) -> None:
        raw = self._raw
        if type(action) is int or isinstance(action, np.integer):  # what Discrete(n).contains decides
            assert 0 <= action < self._n, "action is not in action space"
        else:
            agent = raw.agent_selection
            assert (
                action is None and (raw.terminations[agent] or raw.truncations[agent])
            ) or self._space.contains(action), "action is not in action space"
        raw.step(action)


def _state_attribute(name: str) -> property:
    """A read of the raw env's ``name``, refused before ``reset()`` as PettingZoo's order check does."""

    def read(self: _OrderEnforcing) -> Any:
        if not self._has_reset:
            raise AttributeError(f"{name} cannot be accessed before reset")
        return getattr(self._raw, name)

    return property(read, doc=f"The raw env's ``{name}`` (only after ``reset()``).")


class _OrderEnforcing(wrappers.OrderEnforcingWrapper):
    """PettingZoo's order enforcement with the per-step state read from the raw env directly.

    Same checks and errors as :class:`pettingzoo.utils.wrappers.OrderEnforcingWrapper` (no step,
    observe, render or ``agent_iter`` before ``reset()``; ``agents``, ``agent_selection``,
    ``rewards``, ``terminations``, ``truncations``, ``infos`` unreadable before it), but the attributes
    an ``agent_iter`` loop reads at every step, ``last()`` and ``step()`` go straight to the raw env
    instead of through one ``__getattr__`` per wrapper layer: in a loop over ``agent_iter`` with a
    random legal action that forwarding cost more than the game itself. The wrappers between this
    one and the raw env change neither observations nor state.
    """

    agents = _state_attribute("agents")
    agent_selection = _state_attribute("agent_selection")
    rewards = _state_attribute("rewards")
    terminations = _state_attribute("terminations")
    truncations = _state_attribute("truncations")
    infos = _state_attribute("infos")

    def __init__(self, env: AECEnv, raw: raw_env):
        super().__init__(env)
        self._raw = raw

    @property
    def num_agents(self) -> int:
        if not self._has_reset:
            raise AttributeError("num_agents cannot be accessed before reset")
        return len(self._raw.agents)

    @property
    def _cumulative_rewards(self) -> dict[str, float]:
        return self._raw._cumulative_rewards

    def agent_iter(self, max_iter: int = 2**63) -> _AgentIterable:
        if not self._has_reset:
            EnvLogger.error_agent_iter_before_reset()
        return _AgentIterable(self, max_iter)

    def last(self, observe: bool = True) -> tuple[Any, float, bool, bool, dict[str, Any]]:
        agent = self.agent_selection  # AttributeError before reset, as PettingZoo's wrapper gives
        raw = self._raw
        return (
            raw.observe(agent) if observe else None,
            raw._cumulative_rewards[agent],
            raw.terminations[agent],
            raw.truncations[agent],
            raw.infos[agent],
        )

    def step(self, action: Any) -> None:
        if not self._has_reset:
            EnvLogger.error_step_before_reset()
        elif not self._raw.agents:
            self._has_updated = True
            EnvLogger.warn_step_after_terminated_truncated()
        else:
            self._has_updated = True
            self.env.step(action)


class _AgentIterator(AECOrderEnforcingIterator):
    """PettingZoo's order-enforcing ``agent_iter`` iterator (same stop rule, same check that every
    iteration steps), reading the raw env's agents directly."""

    def __next__(self) -> str:
        env = self.env
        raw = env._raw
        if not raw.agents or self.iters_til_term <= 0:
            raise StopIteration
        self.iters_til_term -= 1
        assert env._has_updated, "need to call step() or reset() in a loop over `agent_iter`"
        env._has_updated = False
        return raw.agent_selection


class _AgentIterable(AECOrderEnforcingIterable):
    def __iter__(self) -> _AgentIterator:
        return _AgentIterator(self.env, self.max_iter)


def env(**kwargs: Any) -> AECEnv:
    """``raw_env`` with PettingZoo's standard wrappers (bounds check for the discrete variant,
    order enforcement). Illegal actions are retried and then replaced by a seeded fallback.

    The wrappers are subclasses of PettingZoo's ``AssertOutOfBoundsWrapper`` and
    ``OrderEnforcingWrapper`` with the same checks, reading the per-step state from the raw env
    directly rather than through their attribute forwarding.

    Example:
        >>> import numpy as np
        >>> e = env(num_players=5, discussion_rounds=0)
        >>> e.reset(seed=0)
        >>> for agent in e.agent_iter():
        ...     obs, reward, terminated, truncated, info = e.last()
        ...     mask = obs["action_mask"]
        ...     e.step(None if terminated or truncated else int(np.flatnonzero(mask)[0]))
        >>> sorted(info)[:3], info["winner"] in ("good", "evil")
        (['acting', 'end_reason', 'error'], True)
    """
    raw = raw_env(**kwargs)
    e: AECEnv = raw
    if raw.variant == "discrete":
        e = _BoundsCheck(e)
    return _OrderEnforcing(e, raw)


def turn_based_parallel_env(**kwargs: Any):
    """Turn-based parallel view: every live seat submits an action, only the acting seat's is used.
    Seats that are not acting have an all-zero mask (sample() then gives NOOP, code 0)."""
    return turn_based_aec_to_parallel(raw_env(**kwargs))
