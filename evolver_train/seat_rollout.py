"""Rollouts of multi-seat environments: one token-exact episode per learning seat and game.

* ``is_multi_seat`` - whether an environment follows the multi-seat protocol below.
* ``play_seat_episodes`` - play games in lockstep; each turn, one generation call over every seat of
  every game that must act, then every game steps. ``play_episodes`` dispatches here.

The multi-seat protocol (``arena.avalon.seats.AvalonSeats``): a PettingZoo ``ParallelEnv`` with
``num_learning_seats`` (the learning seats of every game); ``reset(seed, options)`` and ``step(actions)``
as PettingZoo's parallel API, ``agents`` the seats the policy plays, ``infos[agent]["acting"]`` (it must
reply now; its observation is then what is new since its last turn) and ``infos[agent]["learning"]``
(its episode trains the policy; the other agents are the policy playing opponents, not learning).

Rows: a game is ``num_learning_seats`` consecutive rows with the same task and reset seed, row ``j`` of
the game the ``j``-th learning seat by seat number (the same role in every game of a deal), so a GRPO
group of ``G x num_learning_seats`` rows is G games of one deal. Each seat keeps its own chat context
(seats never read each other's observations). A game stops for all its seats when one of them reaches
``max_turns`` of its own turns or its token budget. The environment has no per-seat wrapper, so every
seat episode is finished by ``finish_episode`` (the mechanisms' end-of-episode writes: attribution's
labels), then ``step_rewards`` reads its final info.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from evolver_gym.core import Step, TokenRecord, Trajectory

from .generation import generate_turn
from .rollout import ChatCodec, Episode, GenerateFn, RowSpec, _anchor, close_episode, restriction_record

__all__ = ["is_multi_seat", "play_seat_episodes"]


def is_multi_seat(env: Any) -> bool:
    """Whether ``env`` follows the multi-seat protocol (module docstring)."""
    return isinstance(getattr(env, "num_learning_seats", None), int) and hasattr(env, "possible_agents")


@dataclass
class _Seat:
    """One seat the policy plays in one game."""

    episode: Episode
    row: int  # its row in the generate calls (the sampler keeps one KV cache per row)
    context: list[int]
    observation: str = ""
    info: dict[str, Any] | None = None
    started: bool = False


def play_seat_episodes(envs: Sequence[Any], rows: Sequence[RowSpec], generate: GenerateFn, codec: ChatCodec, *,
                       max_turns: int, max_episode_tokens: int, max_turn_tokens: int,
                       allowed_actions: Callable[[dict[str, Any]], Sequence[str] | None] | None = None,
                       step_rewards: Callable[[dict[str, Any]], list[float] | None] | None = None,
                       finish_episode: Callable[[Trajectory], dict[str, Any]] | None = None,
                       outcome_key: str = "score", invalid_action_penalty: float = 0.0,
                       mask_truncated: bool = False) -> list[Episode]:
    """One episode per row: ``envs[i]`` plays game ``i``, whose learning seats are rows
    ``i * S .. i * S + S - 1`` (``S = envs[0].num_learning_seats``). Arguments as
    :func:`evolver_train.rollout.play_episodes`; ``finish_episode`` is called for every seat episode."""
    per_game = envs[0].num_learning_seats
    if len(rows) % per_game:
        raise ValueError(f"{len(rows)} rows do not split into games of {per_game} learning seats")
    n_games = len(rows) // per_game
    if len(envs) < n_games:
        raise ValueError(f"{n_games} games need as many environments, got {len(envs)}")
    games: list[dict[str, _Seat]] = []
    live: list[int] = []
    extra_row = len(rows)
    for g in range(n_games):
        spec = rows[g * per_game]
        for r in rows[g * per_game:(g + 1) * per_game]:
            if r.seed != spec.seed or r.task != spec.task:
                raise ValueError(f"rows {g * per_game}..{(g + 1) * per_game - 1} are one game: they need the "
                                 f"same task and seed")
        obs, infos = envs[g].reset(seed=int(spec.seed), options=spec.reset_options())
        learning = sorted((a for a in envs[g].agents if infos[a]["learning"]), key=lambda a: infos[a]["seat"])
        if len(learning) != per_game:
            raise RuntimeError(f"game {g} has {len(learning)} learning seats, the env said {per_game}")
        seats: dict[str, _Seat] = {}
        for a in envs[g].agents:
            if a in learning:
                j = learning.index(a)
                row, seat_spec = g * per_game + j, rows[g * per_game + j]
            else:
                row, seat_spec, extra_row = extra_row, spec, extra_row + 1
            task = infos[a].get("task", seat_spec.task)
            ep = Episode(spec=RowSpec(task=task, seed=seat_spec.seed, group=seat_spec.group,
                                      experience=seat_spec.experience, options=dict(seat_spec.options)),
                         tokens=TokenRecord(prompt_ids=[]), train_prompt_ids=[], reset_info=infos[a],
                         final_info=infos[a])
            ep.seat_slot = learning.index(a) if a in learning else None
            seats[a] = _Seat(ep, row, [], str(obs[a]), infos[a])
        games.append(seats)
        live.append(g)

    def cut(g: int, reason: str) -> None:
        for s in games[g].values():
            s.episode.truncated, s.episode.ended_by = True, reason

    while live:
        pending: list[tuple[int, str]] = []
        for g in list(live):
            acting = [a for a, s in games[g].items() if s.info is not None and s.info.get("acting")]
            reason = None
            for a in acting:  # the observation joins the seat's context: the first as its prompt
                s = games[g][a]
                ep = s.episode
                if len(ep.steps) >= max_turns:
                    reason = "turn_cap"
                    break
                if not s.started:
                    ep.tokens.prompt_ids = ep.train_prompt_ids = codec.prompt_ids(s.observation)
                    s.context, s.started = list(ep.tokens.prompt_ids), True
                else:
                    delta = codec.observation_ids(s.observation)
                    if len(ep.tokens.completion_ids) + len(delta) + 2 > max_episode_tokens:
                        reason = "token_budget"  # no room for the observation and a reply
                        break
                    ep.tokens.extend(delta, model=False, step=-1)
                    s.context.extend(delta)
            if reason is not None:
                cut(g, reason)
                live.remove(g)
                continue
            pending += [(g, a) for a in acting]
        if not pending:
            break
        caps = [min(max_turn_tokens, max_episode_tokens - len(games[g][a].episode.tokens.completion_ids) - 1)
                for g, a in pending]
        allowed = None
        if allowed_actions is not None:
            allowed = []
            for g, a in pending:
                actions = allowed_actions(games[g][a].info)
                allowed.append(None if actions is None else [codec.action_ids(x) for x in actions])
        result = generate_turn(generate, [games[g][a].context for g, a in pending], caps,
                               [games[g][a].row for g, a in pending], allowed)
        if result is None:
            break
        replies: dict[int, dict[str, str]] = {g: {} for g in live}
        for j, ((g, a), ids, lps) in enumerate(zip(pending, *result)):
            s = games[g][a]
            ep, ids = s.episode, list(ids)
            if allowed is not None and allowed[j] is not None:
                ep.restricted.update(restriction_record(allowed[j], ids, len(ep.tokens.completion_ids)))
            ep.tokens.extend(ids, model=True, step=len(ep.steps), logprobs=list(lps))
            s.context.extend(ids)
            if not ids or ids[-1] not in codec.eos_token_ids:  # cut by the per-turn cap: close the turn
                ep.tokens.extend([codec.eos_token_id], model=False, step=-1)
                s.context.append(codec.eos_token_id)
            replies[g][a] = codec.decode_action([t for t in ids if t not in codec.eos_token_ids])
        for g in [g for g in live if replies[g]]:
            obs, rewards, terminations, truncations, infos = envs[g].step(replies[g])
            for a, s in games[g].items():
                ep, info = s.episode, infos[a]
                if a in replies[g]:
                    ep.steps.append(Step(observation=s.observation, action=replies[g][a],
                                         reward=float(rewards.get(a, 0.0)), info=info))
                    ep.anchors.append(_anchor(s.observation))
                    ep.invalid_actions += not info.get("action_valid", True)
                elif ep.steps and rewards.get(a):  # the game ended on other seats' moves
                    ep.steps[-1].reward += float(rewards[a])
                s.info, s.observation = info, str(obs.get(a, ""))
                ep.final_info, ep.final_observation = info, s.observation
                if terminations.get(a) or truncations.get(a):
                    ep.terminated, ep.truncated = bool(terminations.get(a)), bool(truncations.get(a))
            if not envs[g].agents:
                live.remove(g)
    for g in live:  # generation stopped early (no row left on any rank)
        cut(g, "turn_cap")

    episodes = []
    for seats in games:
        for s in seats.values():
            ep = s.episode
            if not s.started:  # never asked to act: an empty turn the loss never sees
                ep.tokens.prompt_ids = ep.train_prompt_ids = codec.prompt_ids(s.observation or
                                                                              str(ep.reset_info.get("instruction", "")))
                ep.tokens.extend([codec.eos_token_id], model=False, step=-1)
            close_episode(ep, [st.reward for st in ep.steps], finish=finish_episode, step_rewards=step_rewards,
                          outcome_key=outcome_key, invalid_action_penalty=invalid_action_penalty,
                          mask_truncated=mask_truncated)
        learning = sorted((s for s in seats.values() if s.episode.seat_slot is not None),
                          key=lambda s: s.episode.seat_slot)
        episodes += [s.episode for s in learning]
    return episodes
