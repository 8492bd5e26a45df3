"""Cross-app scenario templates over the seen apps (phone, music, payments, notes, todo).

People are named as the supervisor knows them (phone contacts); other apps key them by email.
Date arithmetic is relative to the frozen now, which solutions read from the phone app.
"""

from __future__ import annotations

import calendar
import datetime as dt
import random
from collections import Counter

from .tasks import NOW_CODE, Draft, TaskSpec, login, retry, scenario
from .world import RELATIONSHIPS

__all__: list[str] = []


def _name(c: dict) -> str:
    return f"{c['first_name']} {c['last_name']}"


def _contact_lookup(var: str, name: str) -> str:
    return (
        f"{var} = [c for c in all_pages(apis.phone.show_contacts, access_token=phone_token, query={name!r}) "
        f"if c['first_name'] + ' ' + c['last_name'] == {name!r}][0]\n"
    )


def _pay_contacts(d: Draft) -> list[dict]:
    friends = {r["friend_id"] for r in d.q("payments", "SELECT friend_id FROM friendships WHERE user_id = 1")}
    return [c for c in d.contacts() if d.user_id("payments", c["email"]) in friends]


@scenario("sent_to_person", ("phone", "payments"), 2)
def sent_to_person(d: Draft, rnd: random.Random) -> TaskSpec:
    days = rnd.choice((30, 45, 60, 90))
    contacts = _pay_contacts(d)
    c, other = rnd.sample(contacts, 2)
    uid = d.user_id("payments", c["email"])
    start = d.ts(dt.timedelta(days=-days))
    rows = d.q(
        "payments",
        "SELECT amount, created_at FROM transactions WHERE sender_id = 1 AND receiver_id = ? "
        "ORDER BY created_at",
        (uid,),
    )
    total = round(sum(r["amount"] for r in rows if r["created_at"] >= start), 2)
    # a payment just outside the window makes an off-by-one-day window give a different total
    d.insert(
        "payments",
        "transactions",
        sender_id=1,
        receiver_id=uid,
        amount=round(rnd.uniform(5, 40), 2),
        description="Snacks",
        created_at=d.ts(dt.timedelta(days=-days, hours=-10)),
    )
    if total == 0:
        d.insert(
            "payments",
            "transactions",
            sender_id=1,
            receiver_id=uid,
            amount=round(rnd.uniform(5, 40), 2),
            description="Lunch",
            created_at=d.ts(dt.timedelta(days=-1)),
        )
        total = round(
            total + d.q("payments", "SELECT amount FROM transactions ORDER BY id DESC LIMIT 1")[0]["amount"],
            2,
        )

    def ref(name: str, window: int) -> str:
        return (
            NOW_CODE
            + login("phone")
            + login("payments")
            + _contact_lookup("person", name)
            + f"since = (now - datetime.timedelta(days={window})).isoformat()\n"
            "txs = all_pages(apis.payments.show_transactions, access_token=payments_token, direction='sent', "
            "user_email=person['email'], min_created_at=since)\n"
            "apis.supervisor.complete_task(answer=round(sum(t['amount'] for t in txs), 2))\n"
        )

    return TaskSpec(
        f"How much money in total have I sent to {_name(c)} on the payments app in the last {days} days?",
        ref(_name(c), days),
        [],
        answer=total,
        perturbations={"wrong_person": ref(_name(other), days), "off_by_one": ref(_name(c), days + 1)},
        params={"contact_id": c["id"], "days": days},
    )


@scenario("pay_texted_amount", ("phone", "payments"), 2)
def pay_texted_amount(d: Draft, rnd: random.Random) -> TaskSpec:
    c, other = rnd.sample(d.contacts(), 2)
    amount = round(rnd.randint(800, 9000) / 100, 2)
    thing = rnd.choice(
        ("the concert tickets", "the cab ride", "the groceries", "the birthday gift", "the parking")
    )
    sender = d.q("phone", "SELECT id FROM users WHERE phone_number = ?", (c["phone_number"],))[0]["id"]
    d.insert(
        "phone",
        "text_messages",
        sender_id=sender,
        receiver_id=1,
        message=f"Hey! Could you send me ${amount:.2f} for {thing}? Thanks!",
        sent_at=d.ts(dt.timedelta(minutes=-30)),
    )
    uid = d.user_id("payments", c["email"])

    def ref(name: str) -> str:
        return (
            login("phone")
            + login("payments")
            + _contact_lookup("person", name)
            + "msgs = apis.phone.show_text_messages(access_token=phone_token, phone_number=person['phone_number'])\n"
            "import re\n"
            "text = [m for m in msgs if m['sender']['phone_number'] == person['phone_number']][0]['message']\n"
            "amount = float(re.search(r'\\$([0-9]+\\.[0-9]{2})', text).group(1))\n"
            "apis.payments.send_money(receiver_email=person['email'], amount=amount, description='As asked',"
            " access_token=payments_token)\napis.supervisor.complete_task()\n"
        )

    tests = [
        {
            "kind": "added",
            "app": "payments",
            "table": "transactions",
            "count": 1,
            "where": {"sender_id": 1, "receiver_id": uid, "amount": amount},
            "requirement": f"one payment of {amount:.2f} to {_name(c)}",
        },
        {
            "kind": "added",
            "app": "payments",
            "table": "transactions",
            "where": {},
            "count": 1,
            "requirement": "exactly one payment was made",
        },
    ]
    return TaskSpec(
        f"{_name(c)} just texted me asking for money. Send them the amount they asked for on the "
        "payments app.",
        ref(_name(c)),
        tests,
        allowed={
            "payments.transactions": {"added": True},
            "payments.users": {"updated": [1, uid], "fields": ["balance"]},
        },
        perturbations={"wrong_person": ref(_name(other))},
        params={"contact_id": c["id"]},
    )


@scenario("approve_requests_by_relationship", ("phone", "payments"), 3)
def approve_requests_by_relationship(d: Draft, rnd: random.Random) -> TaskSpec:
    rel = rnd.choice(RELATIONSHIPS)
    ins = [c for c in d.contacts(rel)]
    outs = [c for c in d.contacts() if c not in ins]
    if len(ins) < 2:
        retry("too few contacts with the relationship")
    for c in rnd.sample(ins, 2) + rnd.sample(outs, 2):  # make sure both kinds of pending requests exist
        d.insert(
            "payments",
            "payment_requests",
            requester_id=d.user_id("payments", c["email"]),
            payer_id=1,
            amount=round(rnd.uniform(5, 60), 2),
            description="Shared costs",
            status="pending",
            created_at=d.ts(dt.timedelta(days=-rnd.randint(1, 9))),
            resolved_at=None,
        )
    emails = {c["email"] for c in ins}
    pending = d.q(
        "payments",
        "SELECT r.*, u.email FROM payment_requests r JOIN users u ON u.id = r.requester_id "
        "WHERE r.payer_id = 1 AND r.status = 'pending'",
    )
    pending.sort(key=lambda r: (r["created_at"], r["id"]), reverse=True)
    hits = [r for r in pending if r["email"] in emails]
    pages_matter = any(pending.index(r) >= 5 for r in hits) or any(
        c["email"] in {r["email"] for r in hits} for c in ins[5:]
    )
    code = (
        login("phone")
        + login("payments")
        + f"people = {{c['email'] for c in all_pages(apis.phone.show_contacts, access_token=phone_token, "
        f"relationship={rel!r})}}\n"
        "reqs = all_pages(apis.payments.show_payment_requests, access_token=payments_token, status='pending')\n"
        "for r in reqs:\n    if r['requester']['email'] in people:\n"
        "        apis.payments.approve_payment_request(payment_request_id=r['payment_request_id'], "
        "access_token=payments_token)\napis.supervisor.complete_task()\n"
    )
    tests = [
        {
            "kind": "updated",
            "app": "payments",
            "table": "payment_requests",
            "id": r["id"],
            "fields": {"status": "approved"},
            "requirement": f"request {r['id']} is approved",
        }
        for r in hits
    ]
    tests += [
        {
            "kind": "added",
            "app": "payments",
            "table": "transactions",
            "where": {},
            "count": len(hits),
            "requirement": f"exactly {len(hits)} payments were made",
        }
    ]
    payees = sorted({r["requester_id"] for r in hits})
    return TaskSpec(
        f"Approve every pending payment request I received from people tagged as {rel} in my phone "
        "contacts. Leave all other requests alone.",
        code,
        tests,
        allowed={
            "payments.payment_requests": {
                "updated": [r["id"] for r in hits],
                "fields": ["status", "resolved_at"],
            },
            "payments.transactions": {"added": True},
            "payments.users": {"updated": [1, *payees], "fields": ["balance"]},
        },
        perturbations={"missed_page": ""} if pages_matter else {},
        params={"relationship": rel},
    )


@scenario("split_bill", ("phone", "payments"), 3)
def split_bill(d: Draft, rnd: random.Random) -> TaskSpec:
    group = rnd.sample(d.contacts(), 3)
    spare = rnd.choice([c for c in d.contacts() if c not in group])
    total = round(rnd.randint(6000, 24000) / 100, 2)
    what = rnd.choice(("dinner", "the cabin", "concert tickets", "the boat trip"))
    share = round(total / 4, 2)

    def ref(names: list[str], parts: int) -> str:
        return (
            login("phone") + login("payments") + f"for name in {names!r}:\n"
            "    person = [c for c in all_pages(apis.phone.show_contacts, access_token=phone_token, query=name)"
            " if c['first_name'] + ' ' + c['last_name'] == name][0]\n"
            f"    apis.payments.create_payment_request(user_email=person['email'], amount=round({total} / {parts}, 2),"
            f" description={what!r}, access_token=payments_token)\napis.supervisor.complete_task()\n"
        )

    names = [_name(c) for c in group]
    tests = [
        {
            "kind": "added",
            "app": "payments",
            "table": "payment_requests",
            "count": 1,
            "where": {
                "requester_id": 1,
                "payer_id": d.user_id("payments", c["email"]),
                "amount": share,
                "description": what,
                "status": "pending",
            },
            "requirement": f"{_name(c)} is asked for {share:.2f}",
        }
        for c in group
    ]
    tests.append(
        {
            "kind": "added",
            "app": "payments",
            "table": "payment_requests",
            "where": {},
            "count": 3,
            "requirement": "exactly three requests were made",
        }
    )
    return TaskSpec(
        f"I paid ${total:.2f} for {what} shared equally by me, {names[0]}, {names[1]} and {names[2]}. "
        f'Request each of them to pay their share on the payments app, with the description "{what}".',
        ref(names, 4),
        tests,
        allowed={"payments.payment_requests": {"added": True}},
        perturbations={
            "wrong_person": ref([names[0], names[1], _name(spare)], 4),
            "off_by_one": ref(names, 3),
        },
        params={"contacts": [c["id"] for c in group]},
    )


@scenario("postpone_tasks", ("phone", "todo"), 2)
def postpone_tasks(d: Draft, rnd: random.Random) -> TaskSpec:
    proj = rnd.choice(d.q("todo", "SELECT * FROM projects WHERE owner_id = 1"))
    n = rnd.randint(3, 8)
    for offset in (n, n + 1):  # the boundary day is in, the day after is out
        d.insert(
            "todo",
            "tasks",
            project_id=proj["id"],
            owner_id=1,
            title=f"Check {rnd.choice(('filters', 'tyres', 'bills'))}",
            due_date=(d.today + dt.timedelta(days=offset)).isoformat(),
            priority=3,
            labels="",
            completed=0,
            completed_at=None,
            created_at=d.ts(dt.timedelta(days=-2)),
        )
    last = (d.today + dt.timedelta(days=n)).isoformat()
    hits = d.q(
        "todo",
        "SELECT * FROM tasks WHERE project_id = ? AND completed = 0 AND due_date >= ? AND due_date <= ?",
        (proj["id"], d.today.isoformat(), last),
    )

    def ref(window: int) -> str:
        return (
            NOW_CODE
            + login("todo")
            + "projects = all_pages(apis.todo.show_projects, access_token=todo_token)\n"
            f"pid = [p for p in projects if p['name'] == {proj['name']!r}][0]['project_id']\n"
            f"last = today + datetime.timedelta(days={window})\n"
            "tasks = all_pages(apis.todo.show_tasks, access_token=todo_token, project_id=pid, completed=False, "
            "min_due_date=today.isoformat(), max_due_date=last.isoformat())\n"
            "for t in tasks:\n    due = datetime.date.fromisoformat(t['due_date']) + datetime.timedelta(days=7)\n"
            "    apis.todo.update_task(task_id=t['task_id'], due_date=due.isoformat(), access_token=todo_token)\n"
            "apis.supervisor.complete_task()\n"
        )

    tests = [
        {
            "kind": "updated",
            "app": "todo",
            "table": "tasks",
            "id": t["id"],
            "fields": {"due_date": (dt.date.fromisoformat(t["due_date"]) + dt.timedelta(days=7)).isoformat()},
            "requirement": f"task {t['id']} is due one week later",
        }
        for t in hits
    ]
    return TaskSpec(
        f'Push back by one week every unfinished task in my "{proj["name"]}" to-do project that is due '
        f"between today and {n} days from today (both included).",
        ref(n),
        tests,
        allowed={"todo.tasks": {"updated": [t["id"] for t in hits], "fields": ["due_date"]}},
        perturbations={"off_by_one": ref(n + 1)},
        params={"project_id": proj["id"], "days": n},
    )


@scenario("checklist_to_tasks", ("phone", "notes", "todo"), 3)
def checklist_to_tasks(d: Draft, rnd: random.Random) -> TaskSpec:
    proj = rnd.choice(d.q("todo", "SELECT * FROM projects WHERE owner_id = 1"))
    items = rnd.sample(
        [
            "Buy stamps",
            "Email the landlord",
            "Book a dentist visit",
            "Renew the library card",
            "Fix the bike light",
            "Order printer ink",
            "Cancel the gym trial",
        ],
        rnd.randint(2, 4),
    )
    title = f"{rnd.choice(('Weekend', 'Monday', 'Before the trip', 'Spring'))} checklist"
    d.insert(
        "notes",
        "notes",
        owner_id=1,
        title=title,
        content="Things to do:\n" + "\n".join(f"- {x}" for x in items),
        tags="",
        pinned=0,
        created_at=d.ts(dt.timedelta(days=-1)),
        updated_at=d.ts(dt.timedelta(days=-1)),
    )
    days = rnd.randint(2, 10)
    due = (d.today + dt.timedelta(days=days)).isoformat()
    code = (
        NOW_CODE
        + login("notes")
        + login("todo")
        + f"hit = [n for n in all_pages(apis.notes.search_notes, access_token=notes_token, query={title!r}) "
        f"if n['title'] == {title!r}][0]\n"
        "note = apis.notes.show_note(note_id=hit['note_id'], access_token=notes_token)\n"
        "items = [x[2:].strip() for x in note['content'].splitlines() if x.startswith('- ')]\n"
        f"pid = [p for p in all_pages(apis.todo.show_projects, access_token=todo_token) if p['name'] == "
        f"{proj['name']!r}][0]['project_id']\n"
        f"due = (today + datetime.timedelta(days={days})).isoformat()\n"
        "for item in items:\n    apis.todo.create_task(project_id=pid, title=item, due_date=due, "
        "access_token=todo_token)\napis.supervisor.complete_task()\n"
    )
    tests = [
        {
            "kind": "added",
            "app": "todo",
            "table": "tasks",
            "count": 1,
            "where": {"project_id": proj["id"], "owner_id": 1, "title": x, "due_date": due, "completed": 0},
            "requirement": f"a task {x!r} due {due}",
        }
        for x in items
    ]
    tests.append(
        {
            "kind": "added",
            "app": "todo",
            "table": "tasks",
            "where": {},
            "count": len(items),
            "requirement": f"exactly {len(items)} tasks were added",
        }
    )
    return TaskSpec(
        f'For every item on the checklist in my note "{title}", add a task with that item as its title '
        f'to my "{proj["name"]}" to-do project, due {days} days from today.',
        code,
        tests,
        allowed={"todo.tasks": {"added": True}},
        params={"title": title},
    )


@scenario("birthday_note", ("phone", "notes"), 2)
def birthday_note(d: Draft, rnd: random.Random) -> TaskSpec:
    month_offset = rnd.choice((0, 1, 2))
    m = (d.today.month - 1 + month_offset) % 12 + 1
    month = calendar.month_name[m]
    born = [i for i, c in enumerate(d.contacts()) if int(c["birthday"][5:7]) == m]
    people = [_name(d.contacts()[i]) for i in born]
    if not people:
        retry("nobody has a birthday that month")
    title = f"Birthdays in {month}"
    when = {0: "this month", 1: "next month", 2: "the month after next"}[month_offset]
    code = (
        NOW_CODE + login("notes") + f"m = (today.month - 1 + {month_offset}) % 12 + 1\n"
        "names = [c['first_name'] + ' ' + c['last_name'] for c in all_pages(apis.phone.show_contacts, "
        "access_token=login('phone')) if int(c['birthday'][5:7]) == m]\n"
        f"apis.notes.create_note(title={title!r}, content='\\n'.join(names), access_token=notes_token)\n"
        "apis.supervisor.complete_task()\n"
    )
    tests = [
        {
            "kind": "added",
            "app": "notes",
            "table": "notes",
            "count": 1,
            "where": {"owner_id": 1, "title": title, "content": {"$lines": people}},
            "requirement": f"a note {title!r} listing exactly the {len(people)} contacts born in {month}",
        }
    ]
    return TaskSpec(
        f'Create a note titled "{title}" listing, one per line, the full names of my phone contacts '
        f"whose birthday is {when} ({month}).",
        code,
        tests,
        allowed={"notes.notes": {"added": True}},
        perturbations={"missed_page": ""} if born[-1] >= 5 else {},
        params={"month": m},
    )


@scenario("most_played_artist", ("phone", "music"), 2)
def most_played_artist(d: Draft, rnd: random.Random) -> TaskSpec:
    days = rnd.choice((10, 14, 21, 30, 45, 60))
    since = d.ts(dt.timedelta(days=-days))
    rows = d.q(
        "music",
        "SELECT a.name FROM play_history p JOIN songs s ON s.id = p.song_id JOIN artists a "
        "ON a.id = s.artist_id WHERE p.user_id = 1 AND p.played_at >= ? "
        "ORDER BY p.played_at DESC, p.id DESC",
        (since,),
    )
    counts = Counter(r["name"] for r in rows).most_common(2)
    first_page = Counter(r["name"] for r in rows[:5]).most_common(1)[0][0]
    if len(counts) < 2 or counts[0][1] == counts[1][1]:
        retry("no unique most-played artist")
    code = (
        NOW_CODE + login("music") + f"since = (now - datetime.timedelta(days={days})).isoformat()\n"
        "plays = all_pages(apis.music.show_play_history, access_token=music_token, min_played_at=since)\n"
        "import collections\n"
        "top = collections.Counter(p['artist']['name'] for p in plays).most_common(1)[0][0]\n"
        "apis.supervisor.complete_task(answer=top)\n"
    )
    return TaskSpec(
        f"Which artist have I played the most on the music app in the last {days} days?",
        code,
        [],
        answer=counts[0][0],
        perturbations={"missed_page": ""} if first_page != counts[0][0] else {},
        params={"days": days},
    )
