"""Avalon engine speed against AvalonBench's engine, on the same random 5-player games, in one run.

The games are recorded first: random legal play in ``arena.avalon.AvalonGame`` under the AvalonBench
rules (``AvalonConfig.avalonbench()``: the fifth team passes without a vote, good may play Fail, no
discussion - AvalonBench's engine has none). Each record holds the deal, the first leader and every
decision (teams, the vote list of each proposal, the card list of each quest, the Assassin's target).
Both engines then replay every record, timed; the winners must agree game by game, which shows that
the two engines played the same games.

* ours: ``AvalonGame(config, roles, leader)`` and ``play_votes`` / ``play_cards`` (one call per vote
  round and per quest, as AvalonBench's ``gather_team_votes`` / ``gather_quest_votes``), ``step`` for
  teams and the assassination;
* AvalonBench: ``AvalonGameEnvironment`` from its repository snapshot (jonathanmli/Avalon-LLM,
  ``src/server/tasks/avalon/engine.py``), imported from ``--avalonbench`` (default
  ``/work/scratch/avalonbench``, outside this project), in two modes: ``calls`` sets each deal on one
  instance attribute by attribute (the engine calls alone: the cheapest AvalonBench can be), and
  ``presets`` starts each game with ``from_presets`` as AvalonBench's own task does.

Times are CPU seconds of this process (``time.process_time``), which a shared machine's other jobs
disturb far less than wall time; each pass replays every game on both sides back to back, and the
reported ratio is the median over the paired passes.

Usage: python benchmarks/arena_vs_avalonbench.py [--games 3000] [--repeats 9]
        [--avalonbench /work/scratch/avalonbench]
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import os
import platform
import sys
import time

import numpy as np

from arena.avalon import AvalonConfig, AvalonGame

AB_ROLE_NAMES = {"merlin": "Merlin", "servant": "Servant", "assassin": "Assassin", "minion": "Minion"}


def record_games(games: int, seed: int = 0) -> list[dict]:
    """Random legal 5-player games under the AvalonBench rules, as replayable decision lists."""
    cfg = AvalonConfig.avalonbench(5, discussion_rounds=0)
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(games):
        g = AvalonGame.deal(cfg, rng)
        rec: dict = {"roles": g.roles, "leader": g.leader, "script": []}
        c = g.codec
        while not g.done:
            legal = g.legal_codes(g.actor)
            if g.phase == "proposal":
                code = int(legal[rng.integers(len(legal))])
                rec["script"].append(("team", code, frozenset(c.decode(code)[1])))
                if g.rejections == 4:  # the fifth team passes unvoted; AvalonBench still takes a vote list
                    rec["script"].append(("vote", None, [1] * cfg.num_players))
                g.step(code)
            elif g.phase == "vote":
                picks = []
                for _ in range(cfg.num_players):
                    seat = g.actor
                    code = int(legal[rng.integers(len(legal))])
                    picks.append((seat, code))
                    g.step(code)
                    legal = g.legal_codes(g.actor)
                ab_votes = [0] * cfg.num_players
                for seat, code in picks:
                    ab_votes[seat] = int(code == c.APPROVE)
                rec["script"].append(("vote", [code for _, code in picks], ab_votes))
            elif g.phase == "quest":
                picks = []
                for _ in range(len(g.team)):
                    seat = g.actor
                    legal = g.legal_codes(seat)
                    code = int(legal[rng.integers(len(legal))])
                    picks.append((seat, code))
                    g.step(code)
                rec["script"].append(("quest", [code for _, code in picks], [int(x == c.SUCCESS) for _, x in picks]))
            else:  # assassination
                code = int(legal[rng.integers(len(legal))])
                rec["script"].append(("assassinate", g.actor, code - c.ASSASSINATE0, code))
                g.step(code)
        rec["winner"] = g.winner
        out.append(rec)
    return out


def replay_ours(records: list[dict]) -> list[str]:
    cfg = AvalonConfig.avalonbench(5, discussion_rounds=0)
    winners = []
    for rec in records:
        g = AvalonGame(cfg, rec["roles"], rec["leader"])
        for item in rec["script"]:
            kind = item[0]
            if kind == "team":
                g.step(item[1])
            elif kind == "vote":
                if item[1] is not None:
                    g.play_votes(item[1])
            elif kind == "quest":
                g.play_cards(item[1])
            else:
                g.step(item[3])
        winners.append(g.winner)
    return winners


def load_avalonbench(root: str):
    """AvalonBench's engine module from a snapshot folder, or ``None`` when it is not there."""
    path = os.path.join(root, "src", "server", "tasks", "avalon", "engine.py")
    if not os.path.exists(path):
        return None
    sys.path.insert(0, root)  # its engine imports strategist.Avalon.avalon_exception from the snapshot
    spec = importlib.util.spec_from_file_location("avalonbench_engine", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def replay_avalonbench(ab, records: list[dict], *, presets: bool = False) -> list[str]:
    """Replay in AvalonBench's engine. ``presets=False``: the deal is set on one instance attribute
    by attribute (only the engine calls are timed); ``presets=True``: every game starts with
    ``AvalonGameEnvironment.from_presets``, as AvalonBench's task does (its print goes to /dev/null)."""
    config = ab.AvalonBasicConfig.from_presets({"num_players": 5})
    env = ab.AvalonGameEnvironment(config)  # preset_flag=True: no reset, no printing
    role_ids = config.ROLES_REVERSE
    winners = []
    sink = open(os.devnull, "w")  # noqa: SIM115 - closed below
    for rec in records:
        names = [AB_ROLE_NAMES[r] for r in rec["roles"]]
        if presets:
            with contextlib.redirect_stdout(sink):
                env = ab.AvalonGameEnvironment.from_presets(
                    {"num_players": 5, "quest_leader": rec["leader"], "role_names": names}
                )
        else:  # what from_presets sets, per game
            env.roles = np.array([role_ids[x] for x in names])
            env.role_names = names
            env.is_good = np.array([x in ("Merlin", "Servant") for x in names])
            env.quest_leader = rec["leader"]
            env.round = env.quest = env.phase = env.turn = 0
            env.done = env.good_victory = False
            env.quest_team, env.team_votes, env.quest_votes, env.quest_results = [], [], [], []
        for item in rec["script"]:
            kind = item[0]
            if kind == "team":
                env.choose_quest_team(item[2], env.quest_leader)
            elif kind == "vote":
                env.gather_team_votes(item[2])
            elif kind == "quest":
                env.gather_quest_votes(item[2])
            else:
                env.choose_assassination_target(item[1], item[2])
        winners.append("good" if env.good_victory else "evil")
    sink.close()
    return winners


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--games", type=int, default=3000)
    parser.add_argument("--repeats", type=int, default=9, help="paired timed passes over the games")
    parser.add_argument("--avalonbench", default="/work/scratch/avalonbench", help="AvalonBench snapshot folder")
    args = parser.parse_args()
    print(f"python {platform.python_version()}, {platform.machine()}, single process")
    records = record_games(args.games)
    steps = sum(len(r["script"]) for r in records)
    print(f"{args.games} recorded 5-player games (AvalonBench rules), {steps / args.games:.1f} engine calls/game")
    ab = load_avalonbench(args.avalonbench)
    if ab is None:
        print(f"AvalonBench snapshot not found under {args.avalonbench}: measuring ours only")
    modes = {"calls": False, "presets": True}
    times: dict[str, list[float]] = {"ours": [], **{m: [] for m in modes}}
    for _ in range(args.repeats):  # interleaved passes: every side sees the same machine load
        t = time.process_time()
        ours = replay_ours(records)
        times["ours"].append(time.process_time() - t)
        if ab is not None:
            for mode, presets in modes.items():
                t = time.process_time()
                theirs = replay_avalonbench(ab, records, presets=presets)
                times[mode].append(time.process_time() - t)
    assert ours == [r["winner"] for r in records], "our replay diverged from the recording"
    print(f"ours                          {args.games / float(np.median(times['ours'])):>9.0f} games per CPU-second")
    if ab is not None:
        agree = sum(a == b for a, b in zip(ours, theirs, strict=True))
        print(f"(AvalonBench found the same winner in {agree}/{args.games} games)")
        labels = {"calls": "avalonbench, engine calls only", "presets": "avalonbench, from_presets/game"}
        for mode in modes:
            rate = args.games / float(np.median(times[mode]))
            ratios = sorted(b / a for a, b in zip(times["ours"], times[mode], strict=True))
            print(
                f"{labels[mode]:<30}{rate:>9.0f} games per CPU-second; ours/avalonbench: median "
                f"{float(np.median(ratios)):.2f}x over {len(ratios)} paired passes ({ratios[0]:.2f}-{ratios[-1]:.2f})"
            )


if __name__ == "__main__":
    main()
