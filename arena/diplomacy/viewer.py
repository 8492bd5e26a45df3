"""A local web viewer for Diplomacy games: the engine's SVG map of every phase, with its orders.

* ``DiplomacyViewer`` - a stdlib HTTP server on loopback: ``GET /`` (the page), ``GET /api/game``
  (the record: phases with orders and results, press, result), ``GET /svg/<i>`` (phase ``i``'s
  position with its orders drawn by the engine; ``i`` = the number of phases gives the final
  position).
* ``serve_record`` / ``serve_live`` - a viewer for a saved record (``play_game(...)["record"]``), or
  for a game being played in a background thread.
* ``phase_svg`` - the SVG of one phase of a record, without a server.

The record holds every message, so a replay shows all press (a spectator's view after the game).

Example:
    >>> from arena.diplomacy.bots import make_bot
    >>> from arena.diplomacy.play import play_game
    >>> rec = play_game([make_bot("rule") for _ in range(7)], config=DiplomacyConfig(max_year=1901))["record"]
    >>> phase_svg(rec, 0)[:5], "<svg" in phase_svg(rec, len(rec["phases"]))
    ('<?xml', True)
"""

from __future__ import annotations

import html
import json
import threading
from typing import Any

from ..record_viewer import RecordViewer
from .bots import Bot
from .game import POWERS, DiplomacyConfig, require_engine
from .play import play_game

__all__ = ["DiplomacyViewer", "serve_record", "serve_live", "phase_svg"]


def phase_svg(record: dict[str, Any], index: int) -> str:
    """The engine's SVG of phase ``index`` of ``record`` with its orders, or of the final position
    when ``index == len(record["phases"])``."""
    phases = record["phases"]
    if not isinstance(index, int) or not 0 <= index <= len(phases):
        raise ValueError(f"phase index must be in 0..{len(phases)}, got {index!r}")
    game = require_engine()()
    if index < len(phases):
        entry = phases[index]
        game.set_state(dict(entry["state"], timestamp=0))
        for power, orders in entry["orders"].items():
            game.set_orders(power, orders)
        return game.render(incl_orders=True)
    if not phases:
        return game.render(incl_orders=False)
    last = phases[-1]
    if last["next_phase"] not in ("COMPLETED", "FORMING"):
        game.set_current_phase(last["next_phase"])
    game.clear_units()
    game.clear_centers()
    for power in POWERS:
        game.set_units(power, last["units"][power])
        game.set_centers(power, last["centers"][power])
    return game.render(incl_orders=False)


_PAGE = """<!doctype html>
<html><head><meta charset="utf-8"><title>Diplomacy viewer</title>
<style>
body{font-family:sans-serif;margin:0;display:flex;height:100vh}
#map{flex:3;overflow:auto;background:#eee} #map img{width:100%}
#side{flex:2;overflow:auto;padding:8px;font-size:13px}
h2{margin:4px 0} .o{margin:2px 0} .p{color:#555}
</style></head><body>
<div id="map"><img id="svg" alt="map"></div>
<div id="side">
<div><button id="prev">&larr;</button> <span id="label"></span> <button id="next">&rarr;</button>
<label><input type="checkbox" id="follow" checked> follow live</label></div>
<h2>Orders and results</h2><div id="orders"></div>
<h2>Press</h2><div id="press"></div>
<h2>Result</h2><div id="result"></div>
</div>
<script>
let game = window.DIPLOMACY_INITIAL, i = 0;
const esc = s => String(s).replace(/[&<>"]/g, c => ({"&":"&amp;","<":"&lt;",">":"&gt;","\\"":"&quot;"}[c]));
function show() {
  const n = game.phases.length;
  i = Math.max(0, Math.min(i, n));
  document.getElementById("svg").src = "/svg/" + i + "?n=" + n;
  const ph = game.phases[i];
  document.getElementById("label").textContent = ph ? ph.phase : "final position";
  let o = "";
  if (ph) for (const [p, orders] of Object.entries(ph.orders)) {
    o += "<div class=o><b>" + esc(p) + "</b>: " + orders.map(x => {
      const u = x.split(" ").slice(0, 2).join(" "), r = ph.results[u];
      return esc(x) + (r ? " <span class=p>(" + esc(r.join(", ")) + ")</span>" : "");
    }).join("; ") + "</div>";
  }
  document.getElementById("orders").innerHTML = o || "<i>none</i>";
  const msgs = game.messages.filter(m => ph ? m.phase === ph.phase : true);
  document.getElementById("press").innerHTML = msgs.map(m =>
    "<div class=o>" + esc(m.sender) + " &rarr; " + esc(m.recipient) + ": " + esc(m.text) + "</div>"
  ).join("") || "<i>none</i>";
  document.getElementById("result").textContent = game.end_reason ?
    (game.end_reason + "; winner: " + (game.winner || "none (draw)")) : "in progress";
}
document.getElementById("prev").onclick = () => { i--; show(); };
document.getElementById("next").onclick = () => { i++; show(); };
async function poll() {
  if (!game.live || game.end_reason) return;
  game = await (await fetch("/api/game")).json();
  if (document.getElementById("follow").checked) i = game.phases.length;
  show(); setTimeout(poll, 1000);
}
show(); poll();
</script></body></html>
"""


class DiplomacyViewer(RecordViewer):
    """Serves one game's record; ``update`` replaces it (a live game calls it after every phase).

    Args:
        host: Interface to bind (loopback by default; the viewer has no authentication).
        port: TCP port; 0 picks a free one (read ``url`` after ``start``).
    """

    page_global = "DIPLOMACY_INITIAL"
    sequence_key = "phases"

    def __init__(self, host: str = "127.0.0.1", port: int = 0):
        self._svg: dict[tuple[int, int], str] = {}
        super().__init__(host, port)

    def initial(self) -> dict[str, Any]:
        return {"phases": [], "messages": [], "winner": None, "end_reason": None}

    def page(self) -> str:
        return _PAGE

    def svg(self, index: int) -> str:
        game = self.snapshot()
        key = (index, len(game["phases"]))
        if key not in self._svg:
            self._svg[key] = phase_svg(game, index)
        return self._svg[key]

    def route(self, path: str) -> tuple[int, bytes, str] | None:
        if not path.startswith("/svg/"):
            return None
        try:
            return 200, self.svg(int(path[5:])).encode(), "image/svg+xml"
        except ValueError as exc:
            return 404, json.dumps({"error": html.escape(str(exc))}).encode(), "application/json"


def serve_record(record: dict[str, Any], host: str = "127.0.0.1", port: int = 0) -> DiplomacyViewer:
    """A started viewer replaying ``record``."""
    if record.get("game") != "diplomacy" or "phases" not in record:
        raise ValueError("not a Diplomacy game record (expected play_game(...)['record'] of arena.diplomacy)")
    server = DiplomacyViewer(host, port)
    server.update(record, live=False)
    return server.start()


def serve_live(
    players: list[Bot],
    config: DiplomacyConfig,
    seed: int,
    *,
    delay: float = 0.5,
    host: str = "127.0.0.1",
    port: int = 0,
) -> tuple[DiplomacyViewer, threading.Thread]:
    """A started viewer following a game that ``players`` play in a background thread, pausing
    ``delay`` seconds after each phase."""
    server = DiplomacyViewer(host, port)

    def so_far(phases: list[dict[str, Any]]) -> dict[str, Any]:
        return {**server.initial(), "game": "diplomacy", "phases": phases}

    thread = server.follow(lambda on_event: play_game(players, config=config, seed=seed, on_event=on_event), so_far,
                           delay=delay, item=lambda event: event["phase"])
    return server, thread
