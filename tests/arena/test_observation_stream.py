"""Recorded games: every observation, mask, text, info and reward stays exactly what it was.

Seeded games are played through the turn-based env (discrete and text variants, 5 to 10 players,
with and without discussion, Lady of the Lake, the AvalonBench rules, a small text budget that drops
old lines) and through the parallel env. At every step the acting seat and a seeded random subset
of the other seats are observed (so the incremental caches see irregular reading patterns), and
sometimes an illegal or unparsable action is sent (error texts, retries, fallbacks). Each step's
observations are hashed; the digests are compared with ``data/observation_stream.json``, recorded
from the code before the observation builders were made incremental.

A deliberate change to what seats observe must re-record the file (and say so in its commit):

    python -m tests.arena.test_observation_stream --record
"""

from __future__ import annotations

import hashlib
import json
import random
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from arena.avalon import AvalonConfig
from arena.avalon.env import raw_env
from arena.avalon.observation import legal_action_texts
from arena.avalon.parallel import parallel_env

DATA = Path(__file__).parent / "data" / "observation_stream.json"
SEEDS = (0, 1)

CASES: dict[str, dict[str, Any]] = {
    "aec-discrete-5p-talk": dict(env="aec", variant="discrete", config=dict(num_players=5)),
    "aec-discrete-5p": dict(env="aec", variant="discrete", config=dict(num_players=5, discussion_rounds=0)),
    "aec-text-5p-talk": dict(env="aec", variant="text", config=dict(num_players=5)),
    "aec-discrete-10p-talk-2048": dict(
        env="aec", variant="discrete", config=dict(num_players=10), max_text_chars=2048
    ),
    "aec-discrete-8p-lady": dict(
        env="aec",
        variant="discrete",
        config=dict(
            num_players=8,
            special_roles=("merlin", "percival", "assassin", "morgana"),
            lady_of_the_lake=True,
            discussion_rounds=0,
        ),
    ),
    "aec-text-7p-lady-mordred-oberon": dict(
        env="aec",
        variant="text",
        config=dict(
            num_players=7,
            special_roles=("merlin", "assassin", "mordred", "oberon"),
            lady_of_the_lake=True,
            hammer="auto_approve",
        ),
    ),
    "aec-discrete-5p-avalonbench": dict(env="aec", variant="discrete", config="avalonbench"),
    "parallel-discrete-5p-talk": dict(env="parallel", variant="discrete", config=dict(num_players=5)),
    "parallel-text-7p": dict(env="parallel", variant="text", config=dict(num_players=7, discussion_rounds=0)),
}


def _config(spec: dict[str, Any]) -> AvalonConfig:
    if spec["config"] == "avalonbench":
        return AvalonConfig.avalonbench(5)
    return AvalonConfig(**spec["config"])


def _obs_digest(h: Any, obs: dict[str, Any]) -> None:
    for key in sorted(obs):
        value = obs[key]
        h.update(key.encode())
        if isinstance(value, np.ndarray):
            h.update(f"{value.dtype}{value.shape}".encode())
            h.update(value.tobytes())
        else:
            h.update(repr(type(value)).encode())
            h.update(str(value).encode())


def _json(h: Any, value: Any) -> None:
    h.update(json.dumps(value, sort_keys=True, default=repr).encode())


def _text_action(rng: random.Random, env: Any, seat: int) -> str:
    legal = legal_action_texts(env.game, seat)
    roll = rng.random()
    if roll < 0.06:
        return "I have no idea."
    if roll < 0.1:
        return "QUEST: fail" if env.game.phase == "quest" else "TEAM: 0, 0"
    if env.game.phase == "discussion" and roll < 0.4:
        return f"SAY: Player {rng.randrange(env.game.n)} looked at me, <think>secret</think> I trust them."
    choices = [t for t in legal if "<" not in t]
    if not choices:  # a summarised team list
        return "TEAM: " + ", ".join(str(i) for i in rng.sample(range(env.game.n), env.game.team_size))
    return rng.choice(choices)


def _discrete_action(rng: random.Random, mask: np.ndarray, size: int) -> int:
    roll = rng.random()
    if roll < 0.04:
        return int(rng.randrange(size))  # usually illegal: the seat is asked again
    legal = np.flatnonzero(mask)
    return int(legal[rng.randrange(len(legal))])


def play_aec(spec: dict[str, Any], seed: int) -> tuple[list[str], dict[str, str]]:
    env = raw_env(config=_config(spec), variant=spec["variant"], max_text_chars=spec.get("max_text_chars", 32768))
    env.reset(seed=seed)
    rng = random.Random(seed)
    parts = {k: hashlib.sha256() for k in ("observation", "mask", "text", "info")}
    steps: list[str] = []
    mask_key = "action_mask"
    while env.agents:
        agent = env.agent_selection
        seat = env.possible_agents.index(agent)
        h = hashlib.sha256()
        seen = [agent] + [a for a in env.possible_agents if a != agent and rng.random() < 0.3]
        obs = {}
        for a in seen:
            obs[a] = env.observe(a)
            _obs_digest(h, obs[a])
            parts["observation"].update(obs[a]["observation"].tobytes())
            parts["mask"].update(obs[a][mask_key].tobytes())
            parts["text"].update(obs[a]["text"].encode())
        last = env.last()
        record = [agent, last[1:], env.rewards, env._cumulative_rewards, env.terminations, env.truncations]
        _json(h, record)
        _json(h, env.infos)
        _json(parts["info"], env.infos)
        steps.append(h.hexdigest()[:10])
        if env.terminations[agent] or env.truncations[agent]:
            env.step(None)
            continue
        if spec["variant"] == "text":
            env.step(_text_action(rng, env, seat))
        else:
            env.step(_discrete_action(rng, obs[agent][mask_key], env.codec.size))
    env.render_mode = "ansi"
    for view in ("public", "omniscient"):
        env.render_view = view
        parts["text"].update(env.render().encode())
    return steps, {k: v.hexdigest()[:16] for k, v in parts.items()}


def play_parallel(spec: dict[str, Any], seed: int) -> tuple[list[str], dict[str, str]]:
    env = parallel_env(config=_config(spec), variant=spec["variant"])
    observations, infos = env.reset(seed=seed)
    rng = random.Random(seed)
    parts = {k: hashlib.sha256() for k in ("observation", "mask", "text", "info")}
    steps: list[str] = []
    mask_key = "action_mask"
    while True:
        h = hashlib.sha256()
        for a in sorted(observations):
            _obs_digest(h, observations[a])
            parts["observation"].update(observations[a]["observation"].tobytes())
            parts["mask"].update(observations[a][mask_key].tobytes())
            parts["text"].update(observations[a]["text"].encode())
        _json(h, infos)
        _json(parts["info"], infos)
        steps.append(h.hexdigest()[:10])
        if not env.agents:
            break
        actions = {}
        for a in env.agents:
            if spec["variant"] == "text":
                legal = infos[a].get("legal_actions") or ["PASS"]
                actions[a] = "VOTE: maybe" if rng.random() < 0.05 else rng.choice(legal)
            else:
                actions[a] = _discrete_action(rng, observations[a][mask_key], env.codec.size)
        observations, rewards, terms, truncs, infos = env.step(actions)
        h = hashlib.sha256()
        _json(h, [rewards, terms, truncs])
        steps.append(h.hexdigest()[:10])
    return steps, {k: v.hexdigest()[:16] for k, v in parts.items()}


def play(name: str, seed: int) -> tuple[list[str], dict[str, str]]:
    spec = CASES[name]
    return (play_aec if spec["env"] == "aec" else play_parallel)(spec, seed)


def record() -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name in CASES:
        for seed in SEEDS:
            steps, parts = play(name, seed)
            out[f"{name}/{seed}"] = {"parts": parts, "steps": " ".join(steps)}
    return out


@pytest.mark.parametrize("name", list(CASES))
def test_observation_stream_matches_the_recording(name):
    expected = json.loads(DATA.read_text())
    for seed in SEEDS:
        want = expected[f"{name}/{seed}"]
        steps, parts = play(name, seed)
        want_steps = want["steps"].split()
        first = next((i for i, (a, b) in enumerate(zip(steps, want_steps)) if a != b), None)
        differing = sorted(k for k in parts if parts[k] != want["parts"][k])
        assert first is None and len(steps) == len(want_steps) and not differing, (
            f"{name} seed {seed}: first differing step {first} (of {len(want_steps)} recorded, "
            f"{len(steps)} now); parts that differ over the game: {differing}"
        )


if __name__ == "__main__":
    if sys.argv[1:] != ["--record"]:
        sys.exit("usage: python -m tests.arena.test_observation_stream --record")
    DATA.parent.mkdir(exist_ok=True)
    DATA.write_text(json.dumps(record(), indent=1, sort_keys=True) + "\n")
    print(f"wrote {DATA}")
