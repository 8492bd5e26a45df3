"""# Diplomacy

| Import             | `from arena import diplomacy_v0`                                          |
|--------------------|---------------------------------------------------------------------------|
| Actions            | Text (orders one per line; press `TO FRANCE: ...`), or Discrete per unit (`variant="discrete"`) |
| Parallel API       | Yes (native: the powers order together)                                   |
| Manual Control     | No                                                                        |
| Agents             | `agents = ['austria', 'england', 'france', 'germany', 'italy', 'russia', 'turkey']` |
| Agents count       | 7                                                                         |
| Action shape       | `UnicodeText(8192)`, or `Discrete(256)` with an `action_mask`             |
| Observation        | `Dict(observation=Box(0, 1, (3050,)), [action_mask=Box(256),] text=UnicodeText)` |
| Engine             | [`diplomacy`](https://pypi.org/project/diplomacy/) 1.1.2 (DATC-compliant), AGPL-3.0, optional |

The classic seven-power game on the standard map. The board, the legal orders, the adjudication and
the map drawing are the `diplomacy` engine's; it is an optional dependency under the AGPL-3.0
(`pip install 'evolver-gym[diplomacy]'`), never bundled with this Apache-2.0 package. Importing this
module works without it; creating an environment then raises `ImportError` with the install command.

### Rules

Each year has a Spring and a Fall **movement** phase (every unit holds, moves, supports or convoys;
all powers' orders are revealed and adjudicated together), **retreat** phases for dislodged units
(retreat or disband), and **Winter adjustments** (build in vacant home supply centres up to the
power's centre count, or disband down to it). A unit standing in a supply centre after Fall takes
it. A power holding 18 of the 34 supply centres wins alone; otherwise the game ends after the
Winter of `max_year` (default 1910).

**Press** (`press_rounds > 0`): before the orders of every movement phase, `press_rounds` press
stages in which every surviving power may send messages to one power (`TO ENGLAND: ...`) or to all
(`TO ALL: ...`). A power sees the messages it sent or received and the global ones; nothing binds.

### Turn order (AEC)

One stage at a time: the powers due (every surviving power in a press stage; in an orders stage the
powers with something to order: units in movement, dislodged units in retreats, builds or
disbands in Winter) reply one after the other in alphabetical order; nobody sees another's orders
before the adjudication. Phases in which nobody has anything to order are adjudicated at once.

### Arguments

```python
diplomacy_v0.env(max_year=1910, press_rounds=0, variant="text", max_message_chars=400, max_retries=1,
                 render_mode=None, max_text_chars=32768, max_cycles=None)
```

`reset(seed, options)` accepts `options={"start": {"phase": "F1901M", "units": {"FRANCE": ["A PAR"]},
"centers": {...}}}` to start from a set position (powers upper case; see `DiplomacyGame`). The game
has no chance, so the seed only seeds `np_random` and the action space's samples.

### Observation Space

* `"observation"`: `Box(0, 1, (3050,), float32)`: per location (the map's 82 with coasts, sorted)
  a unit of each power and type (14), a dislodged unit of each power and type (14), the centre's owner
  (7) or none (1); then the observing power (7), season (3), phase type (3), year progress (1),
  acting now (1), press stage (1), and the location whose order the discrete view asks for (82).
* `"action_mask"` (discrete variant only): `Box(0, 1, (256,), int8)` over the per-step choices.
* `"text"`: the rules, the board (centres and units of every power, dislodged units and their
  retreats), the last phase's orders and results, the press the power may read, and when it is due
  its legal orders by unit (or the press format) and the reply format.

The board is public; a power's observation never holds another power's private press.

### Action Space

Orders stage: one order per line, as the legal orders are listed (`A PAR - BUR`, `F BRE S A PAR -
PIC`, `A PAR H`, `F NTH C A LON - BEL`, `A LON - BEL VIA`, retreats `A MUN R BOH` / `A MUN D`,
builds `A PAR B` / `WAIVE`, disbands `F KIE D`); case and spacing do not matter, bullets and a
leading `ORDERS:` are ignored, `;` also separates orders. Units without an order hold (in retreats:
disband). `PASS` or an empty reply orders nothing. Press stage: `TO <POWER>: text` or `TO ALL:
text` lines, or `PASS`. `<think>...</think>` is dropped before reading.

The legal orders are listed in the text and in `info["legal_orders"]` (unit location -> its legal
order lines this phase; an action is a set of these lines, at most one per unit). Such a set is not
one of a list of replies, so `info["allowed_actions"]` is `None` for a power with several units to
order (and in press, which is free text); a power ordering one unit gets that unit's orders and
`PASS` there, each a complete reply.

**Discrete view** (`variant="discrete"`, turn-based only, no press): a power orders its units one
per step, in sorted location order (`info["ordering"]` names the location, and the features mark
it). The action is a fixed per-step enumeration, `Discrete(256)`: 0 = no order (the unit holds; in
retreats it disbands; in Winter nothing is built or disbanded there), `i` = the unit's `i`-th legal
order in sorted order (`WAIVE` is 0); `"action_mask"` marks the allowed ones (in Winter at most
the power's build or disband count). The text lists the numbered choices. A masked-out or
malformed action counts as invalid and gives the unit no order. The largest number of legal orders
of one unit seen in 40 random games was 93; a unit with more than 255 keeps its first 255.

Invalid lines never crash or decide the game: a reply with any unreadable or illegal order line is
refused whole and the power asked again with the reasons in its text and `info["error"]`, up to
`max_retries` times; then its valid lines are played and the rest dropped. Bad press lines are
dropped with the reason. Every refused line counts in `info["invalid_actions"]`.

### Parallel API

`parallel_env(...)` takes the same arguments (text variant); one step is one stage, with every due power acting
at once (the others' actions are ignored). A parallel step cannot ask again: bad lines are dropped
at once and reported.

### Rewards

At the end: a solo winner gets 1 and every other power 0; otherwise (the year limit) every power
gets its **sum-of-squares** score, its centres squared over the sum of all powers' centres squared
(the scores sum to 1). An eliminated power is terminated at once with 0.

### Info

Every step: `phase` (engine name, `S1901M`), `phase_type` (movement, retreats, adjustments, end),
`stage` (press, orders, end), `acting`, `ordering` (the discrete view's unit location, else None),
own `power`, `centers`, `units`, `invalid_actions`, `error`; in the text variant `legal_orders`
(`{location: [order, ...]}` while the power is due to order, else `{}`), `allowed_actions` (the
complete replies when they are few: the orders of a power's only unit and `PASS`; `None` for a set of
orders or press; `[]` when the power is not due) and `legal_actions` (deprecated, removed in 0.2: every
order line of `legal_orders` in one list); at the end also `winner`, `end_reason` (solo, year_limit),
`scores`, `supply_centers`. The discrete variant's choices are its `action_mask`.

### Rendering

`render_mode="svg"` returns the engine's SVG map of the position (with the orders submitted in
the current phase); `"ansi"` the board as text. `evolver arena view --diplomacy` serves a page with
the map of every phase.

### Version History

* v0: Initial release.
"""

from __future__ import annotations

# The engine is imported when an environment is created, not here.
from arena.diplomacy.env import env, raw_env
from arena.diplomacy.parallel import parallel_env

__all__ = ["env", "raw_env", "parallel_env"]
