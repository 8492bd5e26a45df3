"""Single-app scenario templates (phone, music, notes, todo), each making 3 related tasks.

Every template computes the expected answer or changes straight from the database and writes a
reference solution against ``apis`` (after :data:`~evolver_gym.appworld.tasks.PREAMBLE`).
"""

from __future__ import annotations

import datetime as dt
import random
import string

from .tasks import NOW_CODE, Draft, TaskSpec, login, retry, scenario
from .world import GENRES, RELATIONSHIPS

__all__: list[str] = []

_DAY_NAMES = {
    "mon": "Monday",
    "tue": "Tuesday",
    "wed": "Wednesday",
    "thu": "Thursday",
    "fri": "Friday",
    "sat": "Saturday",
    "sun": "Sunday",
}


@scenario("contact_relationship_count", ("phone",), 1)
def contact_relationship_count(d: Draft, rnd: random.Random) -> TaskSpec:
    rel = rnd.choice(RELATIONSHIPS)
    n = len(d.contacts(rel))
    if n < 6:
        retry("too few contacts for paging to matter")
    code = (
        login("phone") + f"people = all_pages(apis.phone.show_contacts, access_token=phone_token, "
        f"relationship={rel!r})\napis.supervisor.complete_task(answer=len(people))\n"
    )
    return TaskSpec(
        f"How many of my phone contacts are tagged as {rel}?",
        code,
        [],
        answer=n,
        perturbations={"missed_page": ""},
        params={"relationship": rel},
    )


@scenario("playlist_minutes", ("music",), 1)
def playlist_minutes(d: Draft, rnd: random.Random) -> TaskSpec:
    lists = d.q("music", "SELECT * FROM playlists WHERE owner_id = 1 ORDER BY id")
    titles = [p["title"] for p in lists]
    pl = rnd.choice([p for p in lists if titles.count(p["title"]) == 1])
    secs = d.q(
        "music",
        "SELECT SUM(s.duration) AS t FROM playlist_songs ps JOIN songs s ON s.id = ps.song_id "
        "WHERE ps.playlist_id = ?",
        (pl["id"],),
    )[0]["t"]
    code = (
        login("music") + "lists = all_pages(apis.music.show_playlists, access_token=music_token)\n"
        f"pl = [p for p in lists if p['title'] == {pl['title']!r}][0]\n"
        "songs = apis.music.show_playlist(playlist_id=pl['playlist_id'], access_token=music_token)['songs']\n"
        "apis.supervisor.complete_task(answer=sum(s['duration'] for s in songs) // 60)\n"
    )
    return TaskSpec(
        f'How long is my music playlist "{pl["title"]}" in whole minutes (rounded down)?',
        code,
        [],
        answer=secs // 60,
        params={"playlist_id": pl["id"]},
    )


@scenario("note_code_lookup", ("notes",), 1)
def note_code_lookup(d: Draft, rnd: random.Random) -> TaskSpec:
    thing = rnd.choice(("storage unit", "bike lock", "garage door", "locker", "office safe", "gate"))
    code_value = "".join(rnd.choice(string.digits) for _ in range(rnd.randint(4, 6)))
    title = f"{thing.title()} info"
    d.insert(
        "notes",
        "notes",
        owner_id=1,
        title=title,
        content=f"Location: block {rnd.randint(1, 9)}\nCode: {code_value}\nRenewal: yearly",
        tags="personal",
        pinned=0,
        created_at=d.ts(dt.timedelta(days=-40)),
        updated_at=d.ts(dt.timedelta(days=-40)),
    )
    code = (
        login("notes")
        + f"hits = all_pages(apis.notes.search_notes, access_token=notes_token, query={title!r})\n"
        f"note = apis.notes.show_note(note_id=[h for h in hits if h['title'] == {title!r}][0]['note_id'], "
        "access_token=notes_token)\n"
        "line = [x for x in note['content'].splitlines() if x.startswith('Code:')][0]\n"
        "apis.supervisor.complete_task(answer=line.split(':', 1)[1].strip())\n"
    )
    return TaskSpec(
        f'What is the code written in my note titled "{title}"?',
        code,
        [],
        answer=code_value,
        params={"title": title},
    )


@scenario("create_alarm", ("phone",), 1)
def create_alarm(d: Draft, rnd: random.Random) -> TaskSpec:
    time = f"{rnd.randint(5, 21):02d}:{rnd.choice((5, 10, 20, 25, 35, 40, 50)):02d}"
    label = rnd.choice(("Yoga", "Call grandma", "Take out bins", "Piano practice", "Feed the cat"))
    days = sorted(rnd.sample(list(_DAY_NAMES), rnd.randint(1, 3)), key=list(_DAY_NAMES).index)
    said = ", ".join(_DAY_NAMES[x] for x in days)
    code = (
        login("phone") + f"apis.phone.create_alarm(access_token=phone_token, time={time!r}, label={label!r}, "
        f"repeat_days={days!r}, enabled=True)\napis.supervisor.complete_task()\n"
    )
    tests = [
        {
            "kind": "added",
            "app": "phone",
            "table": "alarms",
            "count": 1,
            "where": {
                "user_id": 1,
                "time": time,
                "label": label,
                "repeat_days": ",".join(days),
                "enabled": 1,
            },
            "requirement": f"one enabled alarm at {time} labelled {label!r} repeating on {said}",
        }
    ]
    return TaskSpec(
        f'Set an alarm for {time} called "{label}" that repeats every {said}.',
        code,
        tests,
        allowed={"phone.alarms": {"added": True}},
        params={"time": time},
    )


@scenario("disable_early_alarms", ("phone",), 2)
def disable_early_alarms(d: Draft, rnd: random.Random) -> TaskSpec:
    cutoff = f"{rnd.randint(7, 12):02d}:00"
    alarms = d.q("phone", "SELECT * FROM alarms WHERE user_id = 1 ORDER BY id")
    hits = [a["id"] for a in alarms if a["enabled"] and a["time"] < cutoff]
    if not hits or len(hits) == sum(a["enabled"] for a in alarms):
        retry("need some, but not all, enabled alarms before the cut-off")
    code = (
        login("phone") + "alarms = all_pages(apis.phone.show_alarms, access_token=phone_token)\n"
        f"for a in alarms:\n    if a['enabled'] and a['time'] < {cutoff!r}:\n"
        "        apis.phone.update_alarm(alarm_id=a['alarm_id'], enabled=False, access_token=phone_token)\n"
        "apis.supervisor.complete_task()\n"
    )
    tests = [
        {
            "kind": "updated",
            "app": "phone",
            "table": "alarms",
            "id": i,
            "fields": {"enabled": 0},
            "requirement": f"alarm {i} is turned off",
        }
        for i in hits
    ]
    return TaskSpec(
        f"Turn off every alarm of mine that is on and rings before {cutoff}.",
        code,
        tests,
        allowed={"phone.alarms": {"updated": hits, "fields": ["enabled"]}},
        params={"cutoff": cutoff},
        perturbations={"missed_page": ""}
        if any([a["id"] for a in alarms].index(i) >= 5 for i in hits)
        else {},
    )


@scenario("like_album_songs", ("music",), 2)
def like_album_songs(d: Draft, rnd: random.Random) -> TaskSpec:
    album = rnd.choice(
        d.q("music", "SELECT al.*, a.name AS artist FROM albums al JOIN artists a ON a.id = al.artist_id")
    )
    songs = [s["id"] for s in d.q("music", "SELECT id FROM songs WHERE album_id = ?", (album["id"],))]
    liked = {r["song_id"] for r in d.q("music", "SELECT song_id FROM liked_songs WHERE user_id = 1")}
    todo = [s for s in songs if s not in liked]
    if not todo or len(todo) == len(songs):
        liked_one = rnd.choice(songs)
        if liked_one not in liked:
            d.insert(
                "music", "liked_songs", user_id=1, song_id=liked_one, liked_at=d.ts(dt.timedelta(days=-3))
            )
        todo = [s for s in songs if s != liked_one and s not in liked]
    code = (
        login("music") + f"albums = all_pages(apis.music.search_albums, access_token=music_token, "
        f"query={album['title']!r}, artist_name={album['artist']!r})\n"
        "album = apis.music.show_album(album_id=albums[0]['album_id'], access_token=music_token)\n"
        "liked = {s['song_id'] for s in all_pages(apis.music.show_liked_songs, access_token=music_token)}\n"
        "for sid in album['song_ids']:\n    if sid not in liked:\n"
        "        apis.music.like_song(song_id=sid, access_token=music_token)\n"
        "apis.supervisor.complete_task()\n"
    )
    tests = [
        {
            "kind": "added",
            "app": "music",
            "table": "liked_songs",
            "where": {"user_id": 1, "song_id": s},
            "requirement": f"song {s} is liked",
        }
        for s in todo
    ]
    tests.append(
        {
            "kind": "added",
            "app": "music",
            "table": "liked_songs",
            "where": {},
            "count": len(todo),
            "requirement": f"exactly {len(todo)} songs were newly liked",
        }
    )
    return TaskSpec(
        f'Like every song on the album "{album["title"]}" by {album["artist"]} that I have not liked yet.',
        code,
        tests,
        allowed={"music.liked_songs": {"added": True}},
        params={"album_id": album["id"]},
    )


@scenario("genre_playlist", ("music",), 3)
def genre_playlist(d: Draft, rnd: random.Random) -> TaskSpec:
    genre = rnd.choice(GENRES)
    everything = d.q(
        "music",
        "SELECT s.id, s.genre FROM library_songs l JOIN songs s ON s.id = l.song_id "
        "WHERE l.user_id = 1 ORDER BY l.id",
    )
    lib = [r for r in everything if r["genre"] == genre]
    if len(lib) < 3:
        retry("too few songs of the genre")
    title = f"All my {genre}"
    code = (
        login("music") + "library = all_pages(apis.music.show_song_library, access_token=music_token)\n"
        f"pid = apis.music.create_playlist(title={title!r}, is_public=False, access_token=music_token)"
        "['playlist_id']\n"
        f"for s in library:\n    if s['genre'] == {genre!r}:\n"
        "        apis.music.add_song_to_playlist(playlist_id=pid, song_id=s['song_id'], access_token=music_token)\n"
        "apis.supervisor.complete_task()\n"
    )
    tests = [
        {
            "kind": "added",
            "app": "music",
            "table": "playlists",
            "count": 1,
            "where": {"owner_id": 1, "title": title, "is_public": 0},
            "requirement": f"one private playlist titled {title!r}",
        },
        {
            "kind": "added",
            "app": "music",
            "table": "playlist_songs",
            "where": {},
            "count": len(lib),
            "requirement": f"the playlist has exactly {len(lib)} songs",
        },
    ]
    tests += [
        {
            "kind": "added",
            "app": "music",
            "table": "playlist_songs",
            "where": {"song_id": r["id"]},
            "requirement": f"song {r['id']} is in the playlist",
        }
        for r in lib
    ]
    return TaskSpec(
        f'Make a private playlist called "{title}" with every {genre} song in my music library.',
        code,
        tests,
        allowed={"music.playlists": {"added": True}, "music.playlist_songs": {"added": True}},
        perturbations={"missed_page": ""} if everything.index(lib[-1]) >= 5 else {},
        params={"genre": genre},
    )


@scenario("overdue_tasks", ("todo", "phone"), 2)
def overdue_tasks(d: Draft, rnd: random.Random) -> TaskSpec:
    proj = rnd.choice(d.q("todo", "SELECT * FROM projects WHERE owner_id = 1"))
    # a task due exactly today makes "before today" and "up to today" give different answers
    d.insert(
        "todo",
        "tasks",
        project_id=proj["id"],
        owner_id=1,
        title=f"Renew {rnd.choice(('permit', 'pass', 'plan'))}",
        due_date=d.today.isoformat(),
        priority=2,
        labels="",
        completed=0,
        completed_at=None,
        created_at=d.ts(dt.timedelta(days=-5)),
    )
    n = d.q(
        "todo",
        "SELECT COUNT(*) AS n FROM tasks WHERE project_id = ? AND completed = 0 AND due_date < ?",
        (proj["id"], d.today.isoformat()),
    )[0]["n"]

    def ref(op: str) -> str:
        return (
            NOW_CODE
            + login("todo")
            + "projects = all_pages(apis.todo.show_projects, access_token=todo_token)\n"
            f"pid = [p for p in projects if p['name'] == {proj['name']!r}][0]['project_id']\n"
            "tasks = all_pages(apis.todo.show_tasks, project_id=pid, completed=False, access_token=todo_token)\n"
            f"late = [t for t in tasks if datetime.date.fromisoformat(t['due_date']) {op} today]\n"
            "apis.supervisor.complete_task(answer=len(late))\n"
        )

    return TaskSpec(
        f'How many unfinished tasks in my "{proj["name"]}" to-do project are overdue (due before today)?',
        ref("<"),
        [],
        answer=n,
        perturbations={"off_by_one": ref("<=")},
        params={"project_id": proj["id"]},
    )
