"""A local web viewer for Avalon games: replays a finished game or follows a live one.

* ``ViewerServer`` - a stdlib HTTP server on loopback: ``GET /`` (the page), ``GET /api/game``
  (the public record: config, events, result, roles once the game is over).
* ``serve_record`` / ``serve_live`` - start a viewer for a saved record, or for a game being played
  by given players in a background thread.

The viewer only ever shows the public record (``AvalonGame.record()``): speech, proposals, votes,
quest results; roles appear when the game is over.
"""

from __future__ import annotations

import threading
from importlib import resources
from typing import Any

from ..record_viewer import RecordViewer
from .bots import Player
from .play import play_game
from .rules import AvalonConfig

__all__ = ["ViewerServer", "serve_record", "serve_live"]


def _page() -> str:
    return resources.files("arena.avalon").joinpath("static/viewer.html").read_text(encoding="utf-8")


class ViewerServer(RecordViewer):
    """Serves one game's public record; ``update`` replaces it (live games call it per event).

    Args:
        host: Interface to bind (loopback by default; the viewer has no authentication).
        port: TCP port; 0 picks a free one (read ``url`` after ``start``).
    """

    page_global = "AVALON_INITIAL"
    sequence_key = "events"

    def initial(self) -> dict[str, Any]:
        return {"config": AvalonConfig().to_dict(), "events": [], "done": False, "winner": None, "end_reason": None,
                "roles": None}

    def page(self) -> str:
        return _page()


def serve_record(record: dict[str, Any], host: str = "127.0.0.1", port: int = 0) -> ViewerServer:
    """A started viewer replaying ``record`` (``AvalonGame.record()`` or a saved game file)."""
    server = ViewerServer(host, port)
    server.update(record, live=False)
    return server.start()


def serve_live(
    players: list[Player],
    config: AvalonConfig,
    seed: int,
    *,
    delay: float = 0.3,
    host: str = "127.0.0.1",
    port: int = 0,
) -> tuple[ViewerServer, threading.Thread]:
    """A started viewer following a game that ``players`` play in a background thread, one public
    event every ``delay`` seconds."""
    server = ViewerServer(host, port)

    def so_far(events: list[dict[str, Any]]) -> dict[str, Any]:
        return {**server.initial(), "config": config.to_dict(), "events": events}

    thread = server.follow(lambda on_event: play_game(players, config=config, seed=seed, on_event=on_event), so_far,
                           delay=delay)
    return server, thread
