"""No-leak property tests: what a seat is shown never depends on what it may not know.

Twin games: a recorded game is replayed with one hidden fact changed (two same-side seats swap
roles, two evil quest members swap their cards, one not-yet-revealed vote flips). Every seat that
cannot tell the twins apart must get identical observations (features, mask, text) and infos.
"""

from __future__ import annotations

import numpy as np
import pytest

from arena.avalon import AvalonConfig, AvalonGame
from arena.avalon.env import raw_env
from arena.avalon.rules import EVIL_ROLES, GOOD_ROLES, ROLE_TITLES, ROLES, SETUP

OPTIONAL = ("percival", "morgana", "mordred", "oberon")
WATCHED_ROLES: set[str] = set()  # roles of the seats whose views were compared


def _config(rng: np.random.Generator) -> AvalonConfig:
    n = int(rng.integers(5, 11))
    good, evil = SETUP[n][:2]
    specials = ["merlin", "assassin"]
    for r in OPTIONAL:
        trial = specials + [r]
        if (
            rng.random() < 0.6
            and sum(x in GOOD_ROLES for x in trial) <= good
            and sum(x in EVIL_ROLES for x in trial) <= evil
        ):
            specials = trial
    return AvalonConfig(
        n,
        special_roles=tuple(specials),
        hammer=str(rng.choice(["evil_wins", "auto_approve"])),
        discussion_rounds=int(rng.integers(0, 2)),
        merlin_sees_oberon=bool(rng.random() < 0.5),
    )


def _record(cfg: AvalonConfig, seed: int):
    """Roles, first leader and the (seat, code) list of a random-legal game."""
    rng = np.random.default_rng(seed)
    g = AvalonGame.deal(cfg, rng)
    roles, leader, actions = g.roles, g.leader, []
    while not g.done:
        legal = g.legal_codes(g.actor)
        code = int(legal[rng.integers(len(legal))])
        actions.append((g.actor, code, g.phase))
        g.step(code)
    return roles, leader, actions


def _twin_compare(cfg, roles_a, roles_b, leader, actions_a, actions_b, watchers, stop_at=None):
    """Step both twins, comparing each watcher's observation and info after every step.

    Returns the number of comparisons made."""
    ea, eb = raw_env(config=cfg, variant="text"), raw_env(config=cfg, variant="text")
    ea.reset(seed=0, options={"roles": roles_a, "leader": leader})
    eb.reset(seed=0, options={"roles": roles_b, "leader": leader})
    compared = 0
    WATCHED_ROLES.update(roles_a[p] for p in watchers)
    for i in range(len(actions_a) + 1):
        if stop_at is not None and i >= stop_at:
            break
        if ea.game.done:  # roles are public at the end; the twins may differ from here on
            break
        for p in watchers:
            agent = ea.possible_agents[p]
            oa, ob = ea.observe(agent), eb.observe(agent)
            same = (
                oa["text"] == ob["text"]
                and np.array_equal(oa["observation"], ob["observation"])
                and np.array_equal(oa["action_mask"], ob["action_mask"])
            )
            assert same, (
                f"seat {p} ({roles_a[p]}) can tell the twins apart at step {i}:\n"
                f"{_diff(oa['text'], ob['text'])}"
            )
            assert ea.infos[agent] == eb.infos[agent], f"seat {p} info differs at step {i}"
            compared += 1
        if i == len(actions_a):
            break
        seat_a, code_a, _ = actions_a[i]
        seat_b, code_b, _ = actions_b[i]
        assert seat_a == seat_b == ea.game.actor == eb.game.actor
        if code_b not in eb.game.legal_codes(seat_b):
            break  # the changed fact changed the actor's options (e.g. the Assassin's own knowledge)
        ea.step(code_a)
        eb.step(code_b)
    return compared


def _diff(a: str, b: str) -> str:
    la, lb = a.splitlines(), b.splitlines()
    return "\n".join(f"- {x}\n+ {y}" for x, y in zip(la, lb, strict=False) if x != y)[:600]


def _role_swap_case(seed: int) -> int:
    rng = np.random.default_rng(seed)
    cfg = _config(rng)
    roles, leader, actions = _record(cfg, seed)
    n = cfg.num_players
    assassin = roles.index("assassin")
    same_side = [
        (a, b)
        for a in range(n)
        for b in range(a + 1, n)
        if a != assassin
        and b != assassin
        and roles[a] != roles[b]
        and (roles[a] in EVIL_ROLES) == (roles[b] in EVIL_ROLES)
    ]
    if not same_side:
        return 0
    a, b = same_side[int(rng.integers(len(same_side)))]
    twin = list(roles)
    twin[a], twin[b] = twin[b], twin[a]
    ga, gb = AvalonGame(cfg, roles, leader), AvalonGame(cfg, twin, leader)
    watchers = [p for p in range(n) if p not in (a, b) and ga.knowledge[p] == gb.knowledge[p]]
    return _twin_compare(cfg, list(roles), twin, leader, actions, actions, watchers)


def _card_swap_case(seed: int) -> int:
    rng = np.random.default_rng(seed)
    cfg = _config(rng)
    roles, leader, actions = _record(cfg, seed)
    # Find a quest where one evil member failed and another evil member succeeded.
    by_quest: dict[int, list[int]] = {}
    for i, (_, _, phase) in enumerate(actions):
        if phase == "quest":
            by_quest.setdefault(sum(1 for _, _, ph in actions[:i] if ph == "proposal"), []).append(i)
    for idxs in by_quest.values():
        evil_idx = [i for i in idxs if roles[actions[i][0]] in EVIL_ROLES]
        fails = [i for i in evil_idx if actions[i][1] == AvalonGame(cfg, roles, leader).codec.FAIL]
        succ = [i for i in evil_idx if i not in fails]
        if fails and succ:
            i, j = fails[0], succ[0]
            twin = list(actions)
            twin[i] = (actions[i][0], actions[j][1], "quest")
            twin[j] = (actions[j][0], actions[i][1], "quest")
            watchers = [p for p in range(cfg.num_players) if p not in (actions[i][0], actions[j][0])]
            return _twin_compare(cfg, list(roles), list(roles), leader, actions, twin, watchers)
    return 0


def _vote_flip_case(seed: int) -> int:
    rng = np.random.default_rng(seed)
    cfg = _config(rng)
    roles, leader, actions = _record(cfg, seed)
    n = cfg.num_players
    starts = [
        i for i in range(len(actions)) if actions[i][2] == "vote" and (i == 0 or actions[i - 1][2] != "vote")
    ]
    if not starts:
        return 0
    start = starts[int(rng.integers(len(starts)))]
    k = int(rng.integers(n - 1))  # any vote but the last of the round, which triggers the reveal
    i = start + k
    seat, code, _ = actions[i]
    codec = AvalonGame(cfg, roles, leader).codec
    twin = list(actions)
    twin[i] = (seat, codec.REJECT if code == codec.APPROVE else codec.APPROVE, "vote")
    watchers = [p for p in range(n) if p != seat]
    # Compare up to (not including) the state after the last vote of the round is in.
    return _twin_compare(cfg, list(roles), list(roles), leader, actions, twin, watchers, stop_at=start + n)


def _run(cases: int, offset: int = 0) -> None:
    totals = [0, 0, 0]
    for s in range(offset, offset + cases):
        totals[0] += _role_swap_case(s)
        totals[1] += _card_swap_case(s)
        totals[2] += _vote_flip_case(s)
    assert all(t > 0 for t in totals), f"some twin kinds were never exercised: {totals}"
    assert WATCHED_ROLES == set(ROLES), f"roles never watched: {set(ROLES) - WATCHED_ROLES}"


def test_no_leak_fast():
    _run(60)


@pytest.mark.slow
def test_no_leak_thousands():
    _run(2000, offset=10_000)


def test_twin_check_catches_a_leak(monkeypatch):
    """The twin check itself fails when a role does leak into the text (guards the guard)."""
    import arena.avalon.observation as obs

    original = obs.seat_text

    def leaky(game, seat, *a, **kw):
        return original(game, seat, *a, **kw) + "\n" + ",".join(game.roles)

    monkeypatch.setattr("arena.avalon.env.seat_text", leaky)
    with pytest.raises(AssertionError, match="can tell the twins apart"):
        for s in range(20):
            _role_swap_case(s)


def test_assassin_mask_includes_unseen_oberon():
    cfg = AvalonConfig(7, special_roles=("merlin", "assassin", "oberon"), discussion_rounds=0)
    roles = ["merlin", "servant", "servant", "servant", "assassin", "minion", "oberon"]
    g = AvalonGame(cfg, roles, leader=0)
    g.phase, g.actor = "assassination", 4
    targets = {g.codec.decode(c)[1] for c in g.legal_codes(4)}
    assert 6 in targets and 5 not in targets and 4 not in targets


def _hidden_roles_named(body: str, seat: int, roles) -> list[tuple[int, str]]:
    """Other seats whose role ``body`` states (as the end-of-game reveal or a moderator would)."""
    low = body.lower()
    named = []
    for other, role in enumerate(roles):
        if other == seat:
            continue
        for title in {role, ROLE_TITLES[role].lower()}:
            forms = (f"p{other} {title}", f"player {other}, {title}", f"player {other} is {title}",
                     f"player {other} is the {title}")  # fmt: skip
            if any(form in low for form in forms):
                named.append((other, role))
    return named


def _check_transcripts(view_seat_role: str, seeds: range) -> int:
    """Plays random games; asserts the seat's transcript never names a hidden role. Returns checks."""
    cfg = AvalonConfig(5)
    checks = 0
    for seed in seeds:
        e = raw_env(config=cfg, variant="text")
        e.reset(seed=seed)
        seat = e.game.roles.index(view_seat_role)
        rng = np.random.default_rng(seed)
        while not e.game.done:
            text = e.observe(e.possible_agents[seat])["text"]
            body = text.split("\n\n", 1)[1]  # skip the rules summary, which names the roles in play
            named = _hidden_roles_named(body, seat, e.game.roles)
            assert not named, f"seat {seat} ({view_seat_role}) reads hidden roles {named}"
            checks += 1
            legal = e.game.legal_codes(e.game.actor)
            e.step(int(legal[rng.integers(len(legal))]))
    return checks


@pytest.mark.parametrize("view_seat_role", ["servant", "merlin", "assassin"])
def test_transcript_never_shows_hidden_roles_before_the_end(view_seat_role):
    assert _check_transcripts(view_seat_role, range(30)) > 30


def test_transcript_check_catches_an_injected_role_line(monkeypatch):
    """Guards the guard: the end-of-game roles line injected into every transcript is caught."""
    import arena.avalon.observation as obs

    original = obs.seat_text

    def leaky(game, seat, *a, **kw):
        roles = ", ".join(f"P{s} {ROLE_TITLES[r]}" for s, r in enumerate(game.roles))
        return original(game, seat, *a, **kw) + f"\nRoles: {roles}."

    monkeypatch.setattr("arena.avalon.env.seat_text", leaky)
    with pytest.raises(AssertionError, match="reads hidden roles"):
        _check_transcripts("servant", range(1))
