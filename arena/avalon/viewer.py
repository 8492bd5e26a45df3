"""A local web viewer for Avalon games: replays a finished game or follows a live one.

* ``ViewerServer`` - a stdlib HTTP server on loopback: ``GET /`` (the page), ``GET /api/game``
  (the public record: config, events, result, roles once the game is over).
* ``serve_record`` / ``serve_live`` - start a viewer for a saved record, or for a game being played
  by given players in a background thread.

The viewer only ever shows the public record (``AvalonGame.record()``): speech, proposals, votes,
quest results; roles appear when the game is over.
"""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from importlib import resources
from typing import Any

from .bots import Player
from .play import play_game
from .rules import AvalonConfig

__all__ = ["ViewerServer", "serve_record", "serve_live"]


def _page() -> str:
    return resources.files("arena.avalon").joinpath("static/viewer.html").read_text(encoding="utf-8")


class ViewerServer:
    """Serves one game's public record; ``update`` replaces it (live games call it per event).

    Args:
        host: Interface to bind (loopback by default; the viewer has no authentication).
        port: TCP port; 0 picks a free one (read ``url`` after ``start``).
    """

    def __init__(self, host: str = "127.0.0.1", port: int = 0):
        self._lock = threading.Lock()
        self._game: dict[str, Any] = {
            "config": AvalonConfig().to_dict(),
            "events": [],
            "done": False,
            "winner": None,
            "end_reason": None,
            "roles": None,
            "live": True,
        }
        self._httpd = ThreadingHTTPServer((host, port), self._handler())
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        host, port = self._httpd.server_address[:2]
        return f"http://{host}:{port}/"

    def update(self, record: dict[str, Any], *, live: bool) -> None:
        with self._lock:
            self._game = {**record, "events": list(record["events"]), "live": live}

    def snapshot(self) -> dict[str, Any]:
        with self._lock:
            return dict(self._game)

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:  # quiet
                pass

            def _send(self, status: int, body: bytes, ctype: str) -> None:
                self.send_response(status)
                self.send_header("Content-Type", ctype)
                self.send_header("Content-Length", str(len(body)))
                self.send_header("Cache-Control", "no-store")
                self.end_headers()
                self.wfile.write(body)

            def do_GET(self) -> None:
                path = self.path.split("?", 1)[0]
                if path == "/api/game":
                    self._send(200, json.dumps(server.snapshot()).encode(), "application/json")
                elif path in ("/", "/index.html"):
                    # The current record is inlined so the page renders without a second request.
                    initial = json.dumps(server.snapshot()).replace("</", "<\\/")
                    html = _page().replace("<script>", f"<script>window.AVALON_INITIAL = {initial};\n", 1)
                    self._send(200, html.encode(), "text/html; charset=utf-8")
                else:
                    self._send(404, b'{"error": "not found"}', "application/json")

        return Handler

    def start(self) -> ViewerServer:
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()
        if self._thread:
            self._thread.join(timeout=5)

    def __enter__(self) -> ViewerServer:
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()


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
    server.update(
        {
            "config": config.to_dict(),
            "events": [],
            "done": False,
            "winner": None,
            "end_reason": None,
            "roles": None,
        },
        live=True,
    )
    events: list[dict[str, Any]] = []

    def on_event(event: dict[str, Any]) -> None:
        events.append(event)
        public = {
            "config": config.to_dict(),
            "events": events,
            "done": False,
            "winner": None,
            "end_reason": None,
            "roles": None,
        }
        server.update(public, live=True)
        if delay:
            time.sleep(delay)

    def run() -> None:
        result = play_game(players, config=config, seed=seed, on_event=on_event)
        server.update(result["record"], live=True)

    thread = threading.Thread(target=run, daemon=True)
    server.start()
    thread.start()
    return server, thread
