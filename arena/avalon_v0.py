"""# Avalon (The Resistance: Avalon)

| Import             | `from arena import avalon_v0`                                   |
|--------------------|-----------------------------------------------------------------|
| Actions            | Discrete (flat code) or Text (`variant="text"`)                 |
| Parallel API       | Yes (native: votes and quest cards are simultaneous)            |
| Manual Control     | No                                                              |
| Agents             | `agents = ['player_0', ..., 'player_{n-1}']`                    |
| Agents count       | 5 to 10                                                         |
| Action shape       | `Discrete(2**n + 4n + 7)` (59 for 5 players, 1071 for 10), or text |
| Observation        | `Dict(observation=Box, action_mask=Box, text=UnicodeText)`      |

A hidden-role social-deduction game. Good (loyal servants of Arthur) tries to succeed three of five
quests; evil (minions of Mordred) tries to fail three, to stall five proposals in a row, or, once
good has three successes, to have the Assassin name Merlin.

### Rules (official; variants below)

| Players | Good | Evil | Team sizes Q1..Q5 | Fails needed on Q4 |
|---|---|---|---|---|
| 5 | 3 | 2 | 2 3 2 3 3 | 1 |
| 6 | 4 | 2 | 2 3 4 3 4 | 1 |
| 7 | 4 | 3 | 2 3 3 4 4 | 2 |
| 8 | 5 | 3 | 3 4 4 5 5 | 2 |
| 9 | 6 | 3 | 3 4 4 5 5 | 2 |
| 10 | 6 | 4 | 3 4 4 5 5 | 2 |

Phases: **night** (at reset: each seat gets its night knowledge), then per proposal **discussion**
(`discussion_rounds` times every player speaks once, leader first, clockwise), **proposal** (the leader
names exactly the quest's team size), **vote** (everyone, leader first; votes are hidden until all are
in, then revealed together; a strict majority approves, a tie rejects), **quest** (each team member
secretly plays Success or Fail; good must play Success; only the number of Fail cards is revealed; one
Fail fails a quest, two on quest 4 with 7+ players), and after three successes the **assassination**.
The leader passes clockwise after every proposal. Five rejected teams in one round: evil wins.

Night knowledge: Loyal Servant nothing; Merlin every evil player except Mordred (Oberon too unless
`merlin_sees_oberon=False`); Percival the seats of Merlin and Morgana, not which is which (Morgana is
only mentioned when she plays); Assassin, Morgana, Mordred and Minions each other, not Oberon; Oberon
nobody, and nobody sees him. Percival and Morgana need Merlin in play.

**Lady of the Lake** (`lady_of_the_lake=True`, 7+ players, official): the player to the right of the
first leader holds the Lady; after quests 2, 3 and 4 (unless the game is decided) the holder names a
player who has not held her (`LADY: j`), learns that player's side in secret, and hands her over.

### Arguments

```python
avalon_v0.env(num_players=5, variant="discrete", special_roles=("merlin", "assassin"),
              hammer="evil_wins", merlin_sees_oberon=True, full_knowledge=False,
              good_must_succeed=True, discussion_rounds=1, max_message_chars=400, max_retries=2,
              lady_of_the_lake=False, render_mode=None, render_view="public", max_text_chars=32768,
              max_cycles=None)
```

`max_cycles` caps environment steps (all seats are truncated there); it is not a per-seat cycle
count, so PettingZoo's `max_cycles_test` does not apply to this turn-based game.

`special_roles`: any of merlin, percival, assassin, morgana, mordred, oberon (Assassin iff Merlin);
other seats are Loyal Servants and Minions. Variant flags for published simplifications:
`hammer="auto_approve"` (the fifth team of a round passes without a vote), `full_knowledge=True`
(Merlin and all evil see every side; Percival sees nothing), `good_must_succeed=False`.
`AvalonConfig.avalonbench()` sets all three, as AvalonBench and AgentEvolver play.
`reset(seed, options)` accepts `options={"roles": [...one per seat...], "leader": seat}` to fix a deal.

### Observation Space

A `Dict` built only from what the observing seat may know:

* `"observation"`: `Box(0, 1, (D,), float32)` features: own seat (n), own role (8, order
  merlin, percival, servant, assassin, morgana, mordred, oberon, minion), own side (1), seats known
  as evil (n), known as good (n, `full_knowledge` or the Lady's answers), Merlin candidates (n, Percival), phase
  (7: discussion, proposal, vote, quest, assassination, end, lady), acting (1), quest (5), rejections in this
  round (5), leader (n), current team (n), quest status (5x pending/success/fail), Fail share per
  quest (5), quest teams (5n), own quest cards (5x success/fail), up to 25 proposals x (leader n,
  team n, public votes n, present, approved), roles revealed at the end (8n), winner (2),
  Lady of the Lake holder (n) and past holders (n).
* `"action_mask"` (both variants): `Box(0, 1, (N,), int8)` over the flat code; all zeros for seats
  that are not acting. It depends only on the seat's own information (the Assassin's mask includes
  Oberon, whom the Assassin cannot see). The text variant also has it under `"legal_mask"`, the same
  array, its old name (deprecated, removed in 0.2).
* `"text"`: the seat's transcript (rules summary, night knowledge, public events, its own hidden
  votes and cards, and when acting the instruction and reply format).

### Action Space

Discrete flat code (`arena.avalon.ActionCodec`): `0` NOOP; `1 + bitmask` a team; then APPROVE,
REJECT, SUCCESS, FAIL; ASSASSINATE(j) for each seat; then speech acts PASS, CLAIM_GOOD, ACCUSE(j),
VOUCH(j), rendered as sentences in everyone's transcript; then LADY(j).

Text variant: `TEAM: 0, 2, 3`, `VOTE: approve|reject`, `QUEST: success|fail`, `ASSASSINATE: 2`,
`LADY: 4`;
in discussion any text is speech (`SAY: ...` or plain text, `PASS` to stay silent). `<think>...</think>`
is dropped before parsing; speech is clipped and stripped of moderator/seat tags. Integer codes are
accepted by the text variant too.

Invalid actions never end or decide the game: the same seat is asked again with the reason in its
`text` and `info["error"]`, up to `max_retries` times, then a seeded fallback is played (PASS, a random
legal team, reject, success, a random legal target) and counted in `info["fallback_actions"]`.
One exception keeps the turn order free of hidden information: a Fail card from a seat that must
play Success is played as Success at once (counted in that seat's `invalid_actions`, explained in its
own `error`), as asking again would show everyone that the seat is good.

### Parallel API

`parallel_env(...)` takes the same arguments. In one parallel step every seat whose choice is due
acts: all players vote together, all quest members play their cards together; discussion, the
proposal and the assassination take one step each. Seats with nothing to do get a NOOP-only mask
(code 0) and their actions are ignored. An invalid action is replaced at once by the seeded
fallback and counted. In the text variant every seat whose vote or card is due is addressed in its
text and `allowed_actions`; the others read "Waiting for the votes." (or "...quest cards.") and
have an empty `allowed_actions`.
`turn_based_parallel_env(...)` is PettingZoo's turn-based view of `raw_env` (one seat acts per step).

### Rewards

At the end every good seat gets +1 and every evil seat -1 if good wins, and the reverse if evil wins.
`info` at the end carries `winner`, `end_reason` (three_fails, five_rejections,
three_successes_no_assassin, assassination_hit, assassination_miss) and every seat's role.

### Info

Every step: `phase`, `acting`, own `role` and `side`, `invalid_actions`, `fallback_actions`, `error`;
text variant also `allowed_actions`: every reply the seat may give now as the complete text the
protocol parses (each legal team spelt out, `TEAM: 0, 2`; 252 teams at most, with 10 players), exactly
the `action_mask`'s codes in words; `None` in discussion, where any text is speech; `[]` for a seat
with nothing to do. `legal_actions` (the reply forms, templates such as `SAY: <free text>` included) is
its deprecated predecessor, removed in 0.2.

### Version History

* v0: Initial release.
"""

from __future__ import annotations

from arena.avalon.env import env, raw_env, turn_based_parallel_env
from arena.avalon.parallel import parallel_env

__all__ = ["env", "raw_env", "parallel_env", "turn_based_parallel_env"]
