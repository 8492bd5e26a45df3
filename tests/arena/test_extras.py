"""Without the optional packages: the arena names the extra to install, and rule-bot tournaments need no torch.

Each case runs in a fresh interpreter where the package cannot be imported (a finder on ``sys.meta_path``
answers ``ModuleNotFoundError`` for it, as an environment without it would).
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

_PRELUDE = """
import importlib.abc, sys
class _Absent(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):
        if name.split(".")[0] in {absent!r}:
            raise ModuleNotFoundError(f"No module named {{name!r}}", name=name)
        return None
sys.meta_path.insert(0, _Absent())
"""


def _run(absent: set[str], code: str) -> subprocess.CompletedProcess:
    script = _PRELUDE.format(absent=sorted(absent)) + textwrap.dedent(code)
    return subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, timeout=300)


def test_without_pettingzoo_the_avalon_envs_name_the_arena_extra():
    done = _run({"pettingzoo"}, """
        import gymnasium as gym
        import evolver_gym
        from arena.avalon import AvalonConfig, AvalonGame, RuleBot   # the engine and the bots need no extra
        game = AvalonGame(AvalonConfig(5), ("merlin", "servant", "servant", "assassin", "minion"))
        for attempt in ("from arena import avalon_v0; avalon_v0.env()", "gym.make('evolver/AvalonSeat-v0')",
                        "from arena.avalon import parallel_env"):
            try:
                exec(attempt)
            except ModuleNotFoundError as exc:
                print(exc.name, "|", exc)
            else:
                print("no error")
    """)
    assert done.returncode == 0, done.stderr[-2000:]
    lines = done.stdout.strip().splitlines()
    assert len(lines) == 3
    for line in lines:
        assert line.startswith("pettingzoo | ") and "'arena' extra is not installed" in line
        assert line.endswith("pip install 'evolver-gym[arena]'")


def test_rule_bot_tournament_runs_without_torch(tmp_path):
    out = tmp_path / "t.jsonl"
    done = _run({"torch"}, f"""
        from arena.cli import main
        code = main(["tournament", "--entrants", "rule,random", "--games", "5", "--out", {str(out)!r}])
        import sys
        print("exit", code, "torch imported:", "torch" in sys.modules)
        print("help", main(["train", "--steps", "1", "--output-dir", {str(tmp_path / "arena")!r}]))
    """)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "exit 0 torch imported: False" in done.stdout
    summary = json.loads(Path(f"{out}.summary.json").read_text())
    assert summary["games"] == 5 and set(summary["entrants"]) == {"rule", "random"}
    # the retired evolver arena train names its replacement in one line, exit 2
    assert done.stdout.strip().splitlines()[-1] == "help 2"
    err = [line for line in done.stderr.strip().splitlines() if line.startswith("evolver arena train")]
    assert len(err) == 1 and done.stderr.strip().splitlines()[-1] == err[0]  # one line, the last
    assert "`evolver train --config avalon`" in err[0]
    assert not (tmp_path / "arena").exists()


def test_a_tournament_without_pettingzoo_is_one_line_naming_the_extra(tmp_path):
    done = _run({"pettingzoo"}, f"""
        import sys
        from arena.cli import main
        out = {str(tmp_path / "t.jsonl")!r}
        sys.exit(main(["tournament", "--entrants", "rule,random", "--games", "5", "--out", out]))
    """)
    assert done.returncode == 2
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith("evolver arena tournament: ") and "Traceback" not in done.stderr
    assert last.endswith("the `pettingzoo` package of the 'arena' extra is not installed: "
                         "pip install 'evolver-gym[arena]'")
