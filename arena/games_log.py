"""A tournament's games as a resumable JSON-lines log, for every arena game.

``play_logged`` plays the games a log does not hold yet, appends each finished game's record (one line,
flushed and synced, so a killed process loses at most the game it was playing), and writes the summary
next to the log atomically. Rerunning with the same log resumes; a log of another tournament (other
rules or seed) is refused.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

__all__ = ["play_logged", "read_games"]


def read_games(path: Path) -> dict[int, dict[str, Any]]:
    """The finished games of a log by index (a line cut short by a killed process is skipped)."""
    done: dict[int, dict[str, Any]] = {}
    if not path.exists():
        return done
    with path.open(encoding="utf-8") as f:
        for line in f:
            try:
                rec = json.loads(line)
                done[int(rec["index"])] = rec
            except (ValueError, KeyError, TypeError):
                continue  # that game is played again
    return done


def _drop_partial_line(path: Path) -> None:
    """Cut a last line left without its newline by a killed process, so appends start clean."""
    data = path.read_bytes()
    if data and not data.endswith(b"\n"):
        with path.open("r+b") as f:
            f.truncate(data.rfind(b"\n") + 1)


def play_logged(out: str | os.PathLike | None, num_games: int, *, identity: dict[str, Any],
                play: Callable[[int], tuple[dict[str, Any], list[Any]]],
                summarize: Callable[[list[dict[str, Any]]], dict[str, Any]], save_records: bool = False,
                progress: Callable[[int, int], None] | None = None) -> dict[str, Any]:
    """Play games ``0 .. num_games - 1`` not yet in the log ``out`` and return ``summarize`` of them all.

    Args:
        out: The JSON-lines log (``None``: keep nothing); the summary goes to ``<out>.summary.json``.
        num_games: Games in total.
        identity: What makes two logs the same tournament (``{"config": ..., "tournament_seed": ...}``);
            stored in every record and checked against the records already in the log.
        play: ``index -> (game result, players)``; a result's ``record`` is kept only with ``save_records``,
            and players with ``stats`` (language-model seats) add them as ``llm_stats``.
        progress: Called with ``(games_done, num_games)``.
    """
    path = Path(out) if out is not None else None
    results = read_games(path) if path else {}
    if any(any(r.get(k) != v for k, v in identity.items()) for r in results.values()):
        raise ValueError(f"{path} holds games of another tournament (config or seed differ); use a new file")
    if path and path.exists():
        _drop_partial_line(path)
    fh = path.open("a", encoding="utf-8") if path else None
    try:
        for index in range(num_games):
            if index in results:
                continue
            res, players = play(index)
            rec = {"index": index, **identity, **{k: v for k, v in res.items() if k != "record"}}
            llm_stats = [getattr(p, "stats", None) for p in players]
            if any(llm_stats):
                rec["llm_stats"] = llm_stats
            if save_records:
                rec["record"] = res["record"]
            results[index] = rec
            if fh:
                fh.write(json.dumps(rec) + "\n")
                fh.flush()
                os.fsync(fh.fileno())
            if progress:
                progress(len(results), num_games)
    finally:
        if fh:
            fh.close()
    summary = summarize([results[i] for i in sorted(results) if i < num_games])
    if path:
        tmp = path.with_name(path.name + ".summary.json.tmp")
        tmp.write_text(json.dumps(summary, indent=2))
        os.replace(tmp, path.with_name(path.name + ".summary.json"))
    return summary
