"""Scenario templates that need the held-out ``mail`` app: the ``test_challenge`` split only."""

from __future__ import annotations

import datetime as dt
import random

from .tasks import Draft, TaskSpec, login, retry, scenario
from .world import RELATIONSHIPS

__all__: list[str] = []


def _name(c: dict) -> str:
    return f"{c['first_name']} {c['last_name']}"


def _lookup(name: str) -> str:
    return (
        f"person = [c for c in all_pages(apis.phone.show_contacts, access_token=login('phone'), query={name!r}) "
        f"if c['first_name'] + ' ' + c['last_name'] == {name!r}][0]\n"
    )


def _mail(d: Draft, sender: str, subject: str, body: str, hours_ago: float, is_read: int = 0) -> int:
    return d.insert(
        "mail",
        "emails",
        owner_id=1,
        folder="inbox",
        sender=sender,
        recipient=d.world.supervisor["email"],
        subject=subject,
        body=body,
        is_read=is_read,
        sent_at=d.ts(dt.timedelta(hours=-hours_ago)),
    )


@scenario("unread_from_sender", ("phone", "mail"), 1)
def unread_from_sender(d: Draft, rnd: random.Random) -> TaskSpec:
    c, other = rnd.sample(d.contacts(), 2)
    for i in range(rnd.randint(1, 3)):
        _mail(
            d, c["email"], f"Quick question #{i + 1}", "Do you have a minute this week?", rnd.uniform(2, 200)
        )
    _mail(d, c["email"], "Old thread", "Never mind, sorted.", rnd.uniform(2, 200), is_read=1)

    def unread(email: str) -> int:
        return d.q(
            "mail",
            "SELECT COUNT(*) AS n FROM emails WHERE owner_id = 1 AND folder = 'inbox' AND sender = ? "
            "AND is_read = 0",
            (email,),
        )[0]["n"]

    n = unread(c["email"])
    if unread(other["email"]) == n:
        retry("the other person has as many unread emails")

    def ref(name: str) -> str:
        return (
            login("mail")
            + _lookup(name)
            + "unread = all_pages(apis.mail.show_emails, access_token=mail_token, "
            "sender=person['email'], is_read=False)\napis.supervisor.complete_task(answer=len(unread))\n"
        )

    return TaskSpec(
        f"How many unread emails from {_name(c)} are in my inbox?",
        ref(_name(c)),
        [],
        answer=n,
        perturbations={"wrong_person": ref(_name(other))},
        params={"contact_id": c["id"]},
    )


@scenario("pay_emailed_invoice", ("phone", "mail", "payments"), 3)
def pay_emailed_invoice(d: Draft, rnd: random.Random) -> TaskSpec:
    c, other = rnd.sample(d.contacts(), 2)
    amount = round(rnd.randint(1500, 20000) / 100, 2)
    what = rnd.choice(("the shared cabin", "the team jerseys", "the wedding gift", "last month's utilities"))
    eid = _mail(
        d,
        c["email"],
        f"Invoice for {what}",
        f"Hi! Your part for {what} comes to ${amount:.2f}. Please pay me on the payments app when you can.",
        rnd.uniform(1, 48),
    )
    uid = d.user_id("payments", c["email"])

    def ref(name: str) -> str:
        return (
            login("mail") + login("payments") + _lookup(name) + "import re\n"
            "mail = [m for m in all_pages(apis.mail.show_emails, access_token=mail_token, sender=person['email'])"
            " if m['subject'].startswith('Invoice')][0]\n"
            "amount = float(re.search(r'\\$([0-9]+\\.[0-9]{2})', mail['body']).group(1))\n"
            "apis.payments.send_money(receiver_email=person['email'], amount=amount, description=mail['subject'],"
            " access_token=payments_token)\n"
            "apis.mail.mark_email(email_id=mail['email_id'], is_read=True, access_token=mail_token)\n"
            "apis.supervisor.complete_task()\n"
        )

    tests = [
        {
            "kind": "added",
            "app": "payments",
            "table": "transactions",
            "count": 1,
            "where": {"sender_id": 1, "receiver_id": uid, "amount": amount},
            "requirement": f"{_name(c)} is paid {amount:.2f}",
        },
        {
            "kind": "added",
            "app": "payments",
            "table": "transactions",
            "where": {},
            "count": 1,
            "requirement": "exactly one payment was made",
        },
        {
            "kind": "updated",
            "app": "mail",
            "table": "emails",
            "id": eid,
            "fields": {"is_read": 1},
            "requirement": "the invoice email is marked read",
        },
    ]
    return TaskSpec(
        f"{_name(c)} emailed me an invoice. Pay it on the payments app, then mark that email as read.",
        ref(_name(c)),
        tests,
        allowed={
            "payments.transactions": {"added": True},
            "payments.users": {"updated": [1, uid], "fields": ["balance"]},
            "mail.emails": {"updated": [eid], "fields": ["is_read"]},
        },
        perturbations={"wrong_person": ref(_name(other))},
        params={"contact_id": c["id"]},
    )


@scenario("reply_latest_email", ("phone", "mail"), 2)
def reply_latest_email(d: Draft, rnd: random.Random) -> TaskSpec:
    c, other = rnd.sample(d.contacts(), 2)
    topic = rnd.choice(("Saturday", "the quarterly report", "the book club", "the school fair"))
    _mail(d, c["email"], f"About {topic}", "First draft of the plan attached.", rnd.uniform(30, 60))
    _mail(d, c["email"], f"Update on {topic}", "Can you confirm you are coming?", rnd.uniform(0.1, 0.9))
    body = rnd.choice(("Confirmed, see you then.", "Yes, count me in!", "I'll be there."))
    me = d.world.supervisor["email"]

    def ref(name: str) -> str:
        return (
            login("mail") + _lookup(name) + "latest = apis.mail.show_emails(access_token=mail_token, "
            "sender=person['email'], page_limit=1)[0]\n"
            f"apis.mail.reply_to_email(email_id=latest['email_id'], body={body!r}, access_token=mail_token)\n"
            "apis.supervisor.complete_task()\n"
        )

    tests = [
        {
            "kind": "added",
            "app": "mail",
            "table": "emails",
            "count": 1,
            "where": {
                "owner_id": 1,
                "folder": "sent",
                "sender": me,
                "recipient": c["email"],
                "subject": f"Re: Update on {topic}",
                "body": body,
            },
            "requirement": f"a reply to the latest email from {_name(c)} is sent",
        },
        {
            "kind": "added",
            "app": "mail",
            "table": "emails",
            "where": {"folder": "sent"},
            "count": 1,
            "requirement": "exactly one email was sent",
        },
    ]
    return TaskSpec(
        f'Reply "{body}" to the most recent email {_name(c)} sent me.',
        ref(_name(c)),
        tests,
        allowed={"mail.emails": {"added": True}},
        perturbations={"wrong_person": ref(_name(other))},
        params={"contact_id": c["id"]},
    )


@scenario("email_relationship_group", ("phone", "mail"), 2)
def email_relationship_group(d: Draft, rnd: random.Random) -> TaskSpec:
    rel = rnd.choice(RELATIONSHIPS)
    group = d.contacts(rel)
    if not 3 <= len(group) <= 12:
        retry("group size out of range")
    subject = rnd.choice(("Potluck on Sunday", "New phone number soon", "Photos are up", "Moving party"))
    body = f"Hi all, quick note about: {subject.lower()}. Details to follow."
    code = (
        login("phone")
        + login("mail")
        + f"people = all_pages(apis.phone.show_contacts, access_token=phone_token, "
        f"relationship={rel!r})\n"
        f"for p in people:\n    apis.mail.send_email(recipient=p['email'], subject={subject!r}, body={body!r}, "
        "access_token=mail_token)\napis.supervisor.complete_task()\n"
    )
    tests = [
        {
            "kind": "added",
            "app": "mail",
            "table": "emails",
            "count": 1,
            "where": {
                "owner_id": 1,
                "folder": "sent",
                "recipient": c["email"],
                "subject": subject,
                "body": body,
            },
            "requirement": f"{_name(c)} is emailed",
        }
        for c in group
    ]
    tests.append(
        {
            "kind": "added",
            "app": "mail",
            "table": "emails",
            "where": {"folder": "sent"},
            "count": len(group),
            "requirement": f"exactly {len(group)} emails were sent",
        }
    )
    if len(group) <= 5:
        retry("the group fits on one page; paging would not be exercised")
    return TaskSpec(
        f'Send an email with the subject "{subject}" and the body "{body}" to each of my phone '
        f"contacts tagged as {rel}, one email per person.",
        code,
        tests,
        allowed={"mail.emails": {"added": True}},
        perturbations={"missed_page": ""},
        params={"rel": rel},
    )
