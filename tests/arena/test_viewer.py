"""The web viewer: JSON endpoints, and the page rendered by headless Chromium (replay and live)."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import threading
import urllib.request
from pathlib import Path

import pytest

from arena.avalon import AvalonConfig
from arena.avalon.bots import make_player
from arena.avalon.play import play_game
from arena.avalon.viewer import serve_live, serve_record

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")
needs_chromium = pytest.mark.skipif(
    CHROMIUM is None, reason="chromium is not installed (apt-get install -y chromium)"
)


def _chromium(url: str, tmp_path: Path, *, screenshot: Path | None = None, budget_ms: int = 4000) -> str:
    args = [
        CHROMIUM,
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--no-first-run",
        "--disable-dev-shm-usage",
        f"--user-data-dir={tmp_path / 'profile'}",
        f"--virtual-time-budget={budget_ms}",
    ]
    if screenshot is not None:
        args += [f"--screenshot={screenshot}", "--window-size=1280,900"]
    else:
        args += ["--dump-dom"]
    out = subprocess.run(args + [url], capture_output=True, text=True, timeout=90)
    assert out.returncode == 0, out.stderr[-2000:]
    return out.stdout


def _status(dom: str) -> str:
    """Text of the rendered status line (the page's script also contains these words)."""
    return re.search(r'<div id="status">(.*?)</div>', dom, re.DOTALL).group(1)


def _finished_record(seed: int = 5) -> dict:
    cfg = AvalonConfig(5)
    return play_game([make_player("rule") for _ in range(5)], config=cfg, seed=seed)["record"]


def test_json_endpoint_serves_only_the_public_record():
    record = _finished_record()
    with serve_record(record) as server:
        game = json.loads(urllib.request.urlopen(server.url + "api/game", timeout=10).read())
        assert game["events"] == record["events"] and game["roles"] == record["roles"]
        with pytest.raises(urllib.error.HTTPError):
            urllib.request.urlopen(server.url + "secret", timeout=10)


def test_live_game_hides_roles_until_the_end():
    players = [make_player("rule") for _ in range(5)]
    server, thread = serve_live(players, AvalonConfig(5), seed=2, delay=0.01)
    try:
        seen_hidden = False
        while thread.is_alive():
            game = json.loads(urllib.request.urlopen(server.url + "api/game", timeout=10).read())
            if not game["done"]:
                assert game["roles"] is None
                seen_hidden = True
        thread.join()
        game = json.loads(urllib.request.urlopen(server.url + "api/game", timeout=10).read())
        assert seen_hidden and game["done"] and len(game["roles"]) == 5
    finally:
        server.stop()


@needs_chromium
def test_replay_renders_in_headless_chromium(tmp_path):
    record = _finished_record()
    with serve_record(record) as server:
        dom = _chromium(server.url, tmp_path)
        shot = tmp_path / "avalon_replay.png"
        _chromium(server.url, tmp_path, screenshot=shot)
    winner = record["winner"]
    assert _status(dom).startswith(f"Game over: {winner} wins")
    speech = next(e for e in record["events"] if e["type"] == "speech" and e["speech"])
    assert speech["speech"] in dom
    assert "Team APPROVED" in dom or "Team REJECTED" in dom
    assert dom.count('class="quest success"') == sum(
        e.get("succeeded", False) for e in record["events"] if e["type"] == "quest_result"
    )
    assert "Merlin" in dom and "Assassin" in dom  # roles revealed at the end
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and shot.stat().st_size > 5000
    keep = os.environ.get("ARENA_SCREENSHOT_DIR")
    if keep:
        Path(keep).mkdir(parents=True, exist_ok=True)
        shutil.copy(shot, Path(keep) / shot.name)


class _HeldRuleBot:
    """A rule bot that holds the game at its first vote until released (so a page loaded in between
    is certain to see the game in progress, however slow the machine)."""

    needs_text = False

    def __init__(self) -> None:
        self.inner = make_player("rule")
        self.name = "held-rule"
        self.holding = threading.Event()
        self.release = threading.Event()

    def reset(self, seat: int, seed: int) -> None:
        self.inner.reset(seat, seed)

    def act(self, view, text=None):
        if view.phase == "vote" and not self.release.is_set():
            self.holding.set()
            self.release.wait(timeout=GENEROUS_S)
        return self.inner.act(view, text)


GENEROUS_S = 120.0  # deadline for conditions a loaded machine may take long to reach


@needs_chromium
def test_live_page_follows_the_game(tmp_path):
    held = _HeldRuleBot()
    players = [held] + [make_player("rule") for _ in range(4)]
    server, thread = serve_live(players, AvalonConfig(5), seed=3, delay=0.0)
    try:
        assert held.holding.wait(timeout=GENEROUS_S), "the live game never reached its first vote"
        assert len(server.snapshot()["events"]) >= 3 and not server.snapshot()["done"]
        during = _chromium(server.url, tmp_path, budget_ms=200)
        held.release.set()
        thread.join(timeout=GENEROUS_S)
        assert not thread.is_alive(), "the live game did not finish"
        after = _chromium(server.url, tmp_path)
    finally:
        held.release.set()
        server.stop()
    assert _status(during).startswith("Live:") and "Hidden until the game ends." in during
    assert _status(after).startswith("Game over:") and "Hidden until the game ends." not in after
