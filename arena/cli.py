"""``evolver arena``: play Avalon games, run tournaments, watch games in the browser.

Commands::

    evolver arena play --seats rule,rule,random,rule,rule --seed 3 [--save game.json] [--reveal]
    evolver arena tournament --entrants rule,random --games 100 --out results.jsonl
    evolver arena matchup --good rule --evil random --games 200
    evolver arena view --game game.json | --results results.jsonl --index 3 | --live [--seats ...]
    evolver arena tournament --diplomacy --entrants rule,random --games 14 --max-year 1905 --out dip/
    evolver arena view --diplomacy --results dip/results.jsonl --index 0 | --live [--seats rule,random,...]

Training seats is ``evolver train --config avalon`` (``evolver/AvalonSeats-v0``); ``evolver arena train``
only names it.

Rule options shared by all commands: ``--players``, ``--roles merlin,assassin,percival,...``,
``--hammer evil_wins|auto_approve``, ``--avalonbench`` (AvalonBench/AgentEvolver rules),
``--discussion-rounds``, ``--lady`` (Lady of the Lake, 7+ players). Entrant specs: ``random``, ``rule``,
``rule_votes``, ``llm:<model>@<base_url>``, ``checkpoint:<path>`` (``arena.avalon.opponents``): a model folder
played as its policy played in training, legal replies only, sampled with the game's seed (``--greedy``:
the most probable).

``--diplomacy`` switches ``tournament`` and ``view`` to Diplomacy (``arena.diplomacy_v0``; needs the
optional engine, ``pip install 'evolver-gym[diplomacy]'``) with ``--max-year`` and ``--press-rounds``;
its entrants are ``rule``, ``random`` and ``llm:<model>@<base_url>``, and ``--seats`` lists one bot per
power (or one for all).
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import time
from pathlib import Path

from evolver_gym.cli_args import check_port

from .avalon.bots import PLAYER_KINDS
from .avalon.rules import AvalonConfig

__all__ = ["main", "build_parser"]


def _add_rules(p: argparse.ArgumentParser) -> None:
    p.add_argument("--players", type=int, default=5, help="number of players, 5-10")
    p.add_argument("--roles", default="merlin,assassin", help="special roles, comma-separated ('' for none)")
    p.add_argument("--hammer", default="evil_wins", choices=["evil_wins", "auto_approve"])
    p.add_argument("--avalonbench", action="store_true", help="AvalonBench/AgentEvolver rule variant")
    p.add_argument("--discussion-rounds", type=int, default=1)
    p.add_argument("--lady", action="store_true", help="play with the Lady of the Lake (7+ players)")
    p.add_argument("--seed", type=int, default=0)


def _config(args: argparse.Namespace) -> AvalonConfig:
    roles = tuple(r for r in args.roles.split(",") if r)
    if args.avalonbench:
        return AvalonConfig.avalonbench(
            args.players, special_roles=roles, discussion_rounds=args.discussion_rounds, lady_of_the_lake=args.lady
        )
    return AvalonConfig(
        args.players,
        special_roles=roles,
        hammer=args.hammer,
        discussion_rounds=args.discussion_rounds,
        lady_of_the_lake=args.lady,
    )


def _seats(spec: str, n: int) -> list:
    from .avalon.tournament import make_entrant

    kinds = [s for s in spec.split(",") if s]
    if len(kinds) == 1:
        kinds = kinds * n
    if len(kinds) != n:
        raise ValueError(f"--seats lists {len(kinds)} players; {n} needed (or one for all)")
    return [make_entrant(k)() for k in kinds]


def _add_diplomacy(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("Diplomacy (with --diplomacy)")
    g.add_argument("--diplomacy", action="store_true", help="play Diplomacy instead of Avalon")
    g.add_argument("--max-year", type=int, default=1910, help="last year played (Diplomacy)")
    g.add_argument("--press-rounds", type=int, default=0, help="press stages before each movement phase's orders")


def _diplomacy_config(args: argparse.Namespace):
    from .diplomacy.game import DiplomacyConfig, require_engine

    try:
        require_engine()
    except ImportError as exc:  # a one-line error (exit 2), not a traceback
        raise ValueError(str(exc)) from None
    return DiplomacyConfig(max_year=args.max_year, press_rounds=args.press_rounds)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="evolver arena", description="Avalon and Diplomacy games, tournaments and viewer."
    )
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("play", help="play one game and print its transcript")
    _add_rules(p)
    p.add_argument("--seats", default="rule", help="player per seat, comma-separated (one name: all seats)")
    p.add_argument("--save", help="write the game record (JSON) here, for 'view --game'")
    p.add_argument("--reveal", action="store_true", help="print the roles first (spectator with full view)")

    t = sub.add_parser("tournament", help="many games with fair seating; win rates, intervals, Elo")
    _add_rules(t)
    t.add_argument("--entrants", default=None,
                   help=f"entrants, comma-separated: {', '.join(PLAYER_KINDS)} (rule bots), llm:<model>@<base_url> "
                        f"(an OpenAI-compatible server) or checkpoint:<path> (a model folder: an evolver train run or "
                        f"checkpoint, its start policy, any chat model; played as in training, one chat per game, "
                        f"replies sampled among the legal ones only); name=spec renames one (default: "
                        f"{','.join(PLAYER_KINDS)}; Diplomacy: rule,random)")
    t.add_argument("--games", type=int, default=100, help="games to play (default: %(default)s)")
    t.add_argument("--out", help="results JSONL (resumable), or a folder for results.jsonl (created if missing); "
                   "the summary goes next to it")
    t.add_argument("--save-records", action="store_true", help="keep each game's record for the viewer")
    t.add_argument("--greedy", action="store_true",
                   help="checkpoint:<path> entrants play their most probable legal reply instead of sampling one")
    _add_diplomacy(t)

    m = sub.add_parser("matchup", help="good win rate of one player kind (good seats) against another (evil)")
    _add_rules(m)
    m.add_argument("--good", required=True, help=f"player of the good seats: {', '.join(PLAYER_KINDS)}, "
                   f"llm:<model>@<base_url> or checkpoint:<path>")
    m.add_argument("--evil", required=True, help="player of the evil seats (the same choices)")
    m.add_argument("--games", type=int, default=200)

    v = sub.add_parser("view", help="serve the web viewer")
    _add_rules(v)
    src = v.add_mutually_exclusive_group(required=True)
    src.add_argument("--game", help="a game record saved by 'play --save'")
    src.add_argument("--results", help="a tournament results JSONL saved with --save-records")
    src.add_argument("--live", action="store_true", help="play a new game and follow it live")
    v.add_argument("--index", type=int, default=0, help="game index in --results")
    v.add_argument("--seats", default="rule", help="players of the live game")
    v.add_argument("--delay", type=float, default=0.5, help="seconds between live events")
    v.add_argument("--host", default="127.0.0.1")
    v.add_argument("--port", type=int, default=8765, help="TCP port, 0-65535; 0: any free one (default: %(default)s)")
    v.add_argument("--serve-seconds", type=float, default=0, help="stop after this long (0: until Ctrl-C)")
    _add_diplomacy(v)

    sub.add_parser("train", help="retired: use `evolver train --config avalon`")
    return parser


TRAIN_MOVED = ("`evolver arena train` is retired: Avalon seats train with `evolver train --config avalon` "
               "(evolver/AvalonSeats-v0, configs/avalon.yaml)")


def _play(args: argparse.Namespace) -> int:
    from .avalon.play import play_game

    config = _config(args)
    result = play_game(_seats(args.seats, config.num_players), config=config, seed=args.seed)
    record = result["record"]
    if args.reveal:
        print("Roles: " + ", ".join(f"P{s} {r}" for s, r in enumerate(result["roles"])))
    for event in record["events"]:
        print(event["text"])
    print(
        f"\nwinner: {result['winner']} ({result['end_reason']}), {result['steps']} steps, "
        f"invalid actions per seat: {result['invalid_actions']}"
    )
    if args.save:
        Path(args.save).write_text(json.dumps(record, indent=1))
        print(f"saved {args.save}")
    return 0


def _results_path(out: str) -> Path:
    """``--out``: a results file, or a folder (existing, ending in '/', or without a suffix) that gets
    ``results.jsonl``."""
    path = Path(out)
    if path.is_dir() or out.endswith(("/", "\\")) or not path.suffix:
        return path / "results.jsonl"
    return path


def _tournament(args: argparse.Namespace) -> int:
    from tqdm import tqdm

    if args.diplomacy:
        from .diplomacy.tournament import make_entrant, run_tournament
    else:
        from .avalon.tournament import make_entrant, run_tournament

    if args.games < 1:
        raise ValueError(f"--games must be positive, got {args.games}")
    if args.greedy and args.diplomacy:
        raise ValueError("--greedy is for Avalon's checkpoint:<path> entrants; Diplomacy has none")
    entrants = {}
    for item in (args.entrants or ("rule,random" if args.diplomacy else ",".join(PLAYER_KINDS))).split(","):
        name, _, spec = item.partition("=")
        entrants[name] = spec or name
        make_entrant(entrants[name])  # an unknown spec fails here, before anything is written
    config = _diplomacy_config(args) if args.diplomacy else _config(args)
    out, created = None, []
    if args.out:
        out = _results_path(args.out)
        missing = [p for p in (out.parent, *out.parent.parents) if not p.exists()]
        out.parent.mkdir(parents=True, exist_ok=True)
        created = missing[-1:]  # the outermost folder this command made
    bar = tqdm(total=args.games, desc="tournament", unit="game", file=sys.stderr)

    def progress(done: int, total: int) -> None:
        bar.total = total
        bar.update(done - bar.n)

    try:
        summary = run_tournament(
            entrants,
            num_games=args.games,
            config=config,
            seed=args.seed,
            out=out,
            save_records=args.save_records,
            progress=progress,
            **({"greedy": True} if args.greedy else {}),
        )
    except Exception:
        for folder in created:  # a failed first run leaves no folder behind
            shutil.rmtree(folder, ignore_errors=True)
        raise
    finally:
        bar.close()
    if args.diplomacy:
        _print_diplomacy_summary(summary)
        if out is not None:
            print(f"results: {out}  summary: {out}.summary.json")
        return 0
    g = summary["good_win"]
    print(
        f"games: {summary['games']}   good win rate: {g['win_rate']:.3f} "
        f"[{g['ci95'][0]:.3f}, {g['ci95'][1]:.3f}]   end reasons: {summary['end_reasons']}"
    )
    print(f"{'entrant':<14}{'games':>6}{'win':>8}{'95% CI':>18}{'good':>8}{'evil':>8}{'Elo':>8}")
    for name, e in summary["entrants"].items():
        o, teams = e["overall"], e["teams"]
        ci = f"[{o['ci95'][0]:.3f}, {o['ci95'][1]:.3f}]"
        good = teams.get("good", {}).get("win_rate")
        evil = teams.get("evil", {}).get("win_rate")
        print(
            f"{name:<14}{o['games']:>6}{o['win_rate']:>8.3f}{ci:>18}"
            f"{'-' if good is None else f'{good:.3f}':>8}{'-' if evil is None else f'{evil:.3f}':>8}"
            f"{summary['elo'][name]:>8.1f}"
        )
        print(
            "    roles: "
            + ", ".join(f"{r} {v['win_rate']:.2f} (n={v['games']})" for r, v in e["roles"].items())
        )
    if out is not None:
        print(f"results: {out}  summary: {out}.summary.json")
    return 0


def _print_diplomacy_summary(summary: dict) -> None:
    print(f"games: {summary['games']}   end reasons: {summary['end_reasons']}")
    print(f"{'entrant':<14}{'powers':>7}{'score':>8}{'95% CI':>18}{'solos':>7}{'centres':>9}{'Elo':>8}")
    for name, e in summary["entrants"].items():
        sc = e["score"]
        ci = f"[{sc['ci95'][0]:.3f}, {sc['ci95'][1]:.3f}]" if sc["ci95"] else "-"
        print(
            f"{name:<14}{e['power_games']:>7}{sc['mean']:>8.3f}{ci:>18}{e['solo_wins']['wins']:>7}"
            f"{e['mean_centers']:>9.2f}{summary['elo'][name]:>8.1f}"
        )
        print("    by power: " + ", ".join(f"{p} {v:.3f}" for p, v in e["powers"].items()))


def _matchup(args: argparse.Namespace) -> int:
    from .avalon.tournament import side_matchup

    res = side_matchup(args.good, args.evil, num_games=args.games, config=_config(args), seed=args.seed)
    g = res["good_win"]
    print(
        f"{args.good} (good) vs {args.evil} (evil), {res['num_players']} players, {g['games']} games: "
        f"good wins {g['win_rate']:.3f} [{g['ci95'][0]:.3f}, {g['ci95'][1]:.3f}]; {res['end_reasons']}"
    )
    return 0


def _view(args: argparse.Namespace) -> int:
    check_port(args.port)
    for flag, value in (("--delay", args.delay), ("--serve-seconds", args.serve_seconds)):
        if not value >= 0:
            raise ValueError(f"{flag} must be >= 0, got {value}")
    if args.diplomacy:
        from .diplomacy.bots import make_bot
        from .diplomacy.game import POWERS
        from .diplomacy.viewer import serve_live, serve_record

        config = _diplomacy_config(args)
        kinds = [k for k in args.seats.split(",") if k] or ["rule"]
        if len(kinds) == 1:
            kinds = kinds * len(POWERS)
        if len(kinds) != len(POWERS):
            raise ValueError(f"--seats lists {len(kinds)} players; 7 needed (one per power) or one for all")
        players = [make_bot(k) for k in kinds] if args.live else []
    else:
        from .avalon.viewer import serve_live, serve_record

    if args.diplomacy and args.live:
        server, _ = serve_live(players, config, args.seed, delay=args.delay, host=args.host, port=args.port)
    elif args.live:
        config = _config(args)
        server, _ = serve_live(
            _seats(args.seats, config.num_players),
            config,
            args.seed,
            delay=args.delay,
            host=args.host,
            port=args.port,
        )
    else:
        if args.game:
            record = json.loads(Path(args.game).read_text())
        else:
            rows = [json.loads(line) for line in Path(args.results).read_text().splitlines() if line.strip()]
            match = [r for r in rows if r.get("index") == args.index]
            if not match or "record" not in match[0]:
                print(
                    f"no saved record for game {args.index} in {args.results} (run with --save-records)",
                    file=sys.stderr,
                )
                return 2
            record = match[0]["record"]
        server = serve_record(record, host=args.host, port=args.port)
    print(f"{'Diplomacy' if args.diplomacy else 'Avalon'} viewer at {server.url}  (Ctrl-C to stop)", flush=True)
    try:
        if args.serve_seconds:
            time.sleep(args.serve_seconds)
        else:
            while True:
                time.sleep(3600)
    except KeyboardInterrupt:
        pass
    finally:
        server.stop()
    return 0


def main(argv: list[str] | None = None) -> int:
    """Entry point of ``evolver arena``; returns the exit code."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["train"]:  # whatever its old flags: one line naming the replacement
        print(f"evolver arena train: {TRAIN_MOVED}", file=sys.stderr)
        return 2
    args = build_parser().parse_args(argv)
    try:
        commands = {"play": _play, "tournament": _tournament, "matchup": _matchup, "view": _view}
        return commands[args.command](args)
    except (ValueError, OSError) as exc:
        print(f"evolver arena {args.command}: {exc}", file=sys.stderr)
        return 2
    except ModuleNotFoundError as exc:  # an optional package: one line naming its extra
        from .extras import EXTRA_OF, missing_extra

        if (exc.name or "").split(".")[0] not in EXTRA_OF:
            raise
        message = str(exc) if "extra" in str(exc) else str(missing_extra(exc, f"evolver arena {args.command}"))
        print(f"evolver arena {args.command}: {message}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    raise SystemExit(main())
