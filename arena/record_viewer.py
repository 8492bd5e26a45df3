"""A loopback web server that shows one game's record, for every arena game's viewer.

``RecordViewer`` serves ``GET /`` (the game's page, with the current record inlined so it renders
without a second request), ``GET /api/game`` (the record as JSON, which a live page polls) and any
route a game adds (``route``); ``update`` replaces the record (a live game calls it as it goes).
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

__all__ = ["RecordViewer"]


class RecordViewer:
    """Serves one game's record on ``host:port`` (loopback by default: the viewer has no authentication).

    Subclasses set ``page_global`` (the page's variable for the inlined record), ``sequence_key`` (the
    record's growing list, copied on update) and ``initial`` (the record before a game starts), and
    implement ``page()``; ``route(path)`` may answer more paths with ``(status, body, content type)``.

    Args:
        host: Interface to bind.
        port: TCP port; 0 picks a free one (read ``url`` after ``start``).
    """

    page_global = "GAME_INITIAL"
    sequence_key = "events"

    def __init__(self, host: str = "127.0.0.1", port: int = 0):
        self._lock = threading.Lock()
        self._game: dict[str, Any] = {**self.initial(), "live": True}
        self._httpd = ThreadingHTTPServer((host, port), self._handler())
        self._thread: threading.Thread | None = None

    def initial(self) -> dict[str, Any]:
        return {self.sequence_key: []}

    def page(self) -> str:
        raise NotImplementedError

    def route(self, path: str) -> tuple[int, bytes, str] | None:
        """Another path's ``(status, body, content type)``, or ``None`` for 404."""
        return None

    @property
    def url(self) -> str:
        host, port = self._httpd.server_address[:2]
        return f"http://{host}:{port}/"

    def update(self, record: dict[str, Any], *, live: bool) -> None:
        with self._lock:
            self._game = {**record, self.sequence_key: list(record[self.sequence_key]), "live": live}

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
                    initial = json.dumps(server.snapshot()).replace("</", "<\\/")
                    page = server.page().replace("<script>", f"<script>window.{server.page_global} = {initial};\n", 1)
                    self._send(200, page.encode(), "text/html; charset=utf-8")
                else:
                    answer = server.route(path)
                    if answer is None:
                        self._send(404, b'{"error": "not found"}', "application/json")
                    else:
                        self._send(*answer)

        return Handler

    def follow(self, play: Callable[[Callable[[dict[str, Any]], None]], dict[str, Any]],
               so_far: Callable[[list[dict[str, Any]]], dict[str, Any]], *, delay: float = 0.0,
               item: Callable[[dict[str, Any]], dict[str, Any]] = lambda event: event) -> threading.Thread:
        """Start serving a game that ``play(on_event)`` plays in a background thread.

        Each event's ``item`` joins the items so far, ``so_far(items)`` becomes the shown record, and the
        game pauses ``delay`` seconds; the finished game's ``record`` replaces it. Returns the thread.
        """
        items: list[dict[str, Any]] = []
        self.update(so_far(items), live=True)

        def on_event(event: dict[str, Any]) -> None:
            items.append(item(event))
            self.update(so_far(items), live=True)
            if delay:
                time.sleep(delay)

        def run() -> None:
            self.update(play(on_event)["record"], live=True)

        thread = threading.Thread(target=run, daemon=True)
        self.start()
        thread.start()
        return thread

    def start(self) -> RecordViewer:
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()
        if self._thread:
            self._thread.join(timeout=5)

    def __enter__(self) -> RecordViewer:
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()
