"""The ``music`` app: songs, albums, artists, your library, liked songs, playlists and play history."""

from __future__ import annotations

from typing import Any

from ..apis import ApiError, AppContext, Param, api, paging

__all__: list[str] = []

_SID = Param("song_id", "integer", "ID of the song.", required=True, nullable=False)
_PID = Param("playlist_id", "integer", "ID of the playlist.", required=True, nullable=False)
_SONG = {
    "song_id": "integer",
    "title": "string",
    "album_id": "integer",
    "artist": "dict",
    "genre": "string",
    "duration": "integer (seconds)",
    "release_date": "string",
    "play_count": "integer",
}


def _songs(ctx: AppContext, ids: list[int]) -> list[dict[str, Any]]:
    if not ids:
        return []
    marks = ",".join("?" * len(ids))
    rows = ctx.q(
        "music",
        f"SELECT s.*, a.name AS artist_name FROM songs s JOIN artists a ON a.id = s.artist_id "
        f"WHERE s.id IN ({marks})",
        ids,
    )
    by_id = {r["id"]: r for r in rows}
    return [
        {
            "song_id": r["id"],
            "title": r["title"],
            "album_id": r["album_id"],
            "artist": {"artist_id": r["artist_id"], "name": r["artist_name"]},
            "genre": r["genre"],
            "duration": r["duration"],
            "release_date": r["release_date"],
            "play_count": r["play_count"],
        }
        for r in (by_id[i] for i in ids if i in by_id)
    ]


def _song_exists(ctx: AppContext, song_id: int) -> None:
    ctx.one("music", "SELECT id FROM songs WHERE id = ?", (song_id,), "song")


def _playlist(ctx: AppContext, uid: int, pid: int, write: bool = False) -> dict[str, Any]:
    row = ctx.one("music", "SELECT * FROM playlists WHERE id = ?", (pid,), "playlist")
    if row["owner_id"] != uid and (write or not row["is_public"]):
        raise ApiError(401 if not write else 403, "You do not have access to this playlist.")
    return row


@api("music", "show_song", "GET", "/songs/{song_id}", "Show one song.", _SID, returns=_SONG)
def show_song(ctx: AppContext, uid: int, song_id: int) -> dict[str, Any]:
    _song_exists(ctx, song_id)
    return _songs(ctx, [song_id])[0]


@api(
    "music",
    "search_songs",
    "GET",
    "/songs",
    "Search songs by title, artist name or genre.",
    Param("query", "string", "Text in the title."),
    Param("artist_name", "string", "Exact artist name."),
    Param("genre", "string", "Genre."),
    paged=True,
    returns=[_SONG],
)
def search_songs(
    ctx: AppContext,
    uid: int,
    query: str | None,
    artist_name: str | None,
    genre: str | None,
    page_index: int,
    page_limit: int,
) -> list[dict[str, Any]]:
    sql, args = "SELECT s.id FROM songs s JOIN artists a ON a.id = s.artist_id WHERE 1", []
    for cond, val in (
        ("s.title LIKE ?", f"%{query}%" if query else None),
        ("a.name = ?", artist_name),
        ("s.genre = ?", genre),
    ):
        if val is not None:
            sql += f" AND {cond}"
            args.append(val)
    ids = [r["id"] for r in ctx.q("music", sql + " ORDER BY s.id" + paging(page_index, page_limit), args)]
    return _songs(ctx, ids)


@api(
    "music",
    "show_album",
    "GET",
    "/albums/{album_id}",
    "Show an album with its song IDs in track order.",
    Param("album_id", "integer", "ID of the album.", required=True, nullable=False),
    returns={
        "album_id": "integer",
        "title": "string",
        "artist": "dict",
        "genre": "string",
        "release_date": "string",
        "song_ids": "list[integer]",
    },
)
def show_album(ctx: AppContext, uid: int, album_id: int) -> dict[str, Any]:
    r = ctx.one(
        "music",
        "SELECT al.*, a.name AS artist_name FROM albums al JOIN artists a ON a.id = al.artist_id "
        "WHERE al.id = ?",
        (album_id,),
        "album",
    )
    songs = ctx.q("music", "SELECT id FROM songs WHERE album_id = ? ORDER BY track_number", (album_id,))
    return {
        "album_id": r["id"],
        "title": r["title"],
        "artist": {"artist_id": r["artist_id"], "name": r["artist_name"]},
        "genre": r["genre"],
        "release_date": r["release_date"],
        "song_ids": [s["id"] for s in songs],
    }


@api(
    "music",
    "search_albums",
    "GET",
    "/albums",
    "Search albums by title or artist name.",
    Param("query", "string", "Text in the title."),
    Param("artist_name", "string", "Exact artist name."),
    paged=True,
    returns=[{"album_id": "integer", "title": "string", "artist": "dict", "release_date": "string"}],
)
def search_albums(
    ctx: AppContext, uid: int, query: str | None, artist_name: str | None, page_index: int, page_limit: int
) -> list[dict[str, Any]]:
    sql, args = (
        "SELECT al.*, a.name AS artist_name FROM albums al JOIN artists a ON a.id = al.artist_id WHERE 1",
        [],
    )
    if query:
        sql += " AND al.title LIKE ?"
        args.append(f"%{query}%")
    if artist_name:
        sql += " AND a.name = ?"
        args.append(artist_name)
    return [
        {
            "album_id": r["id"],
            "title": r["title"],
            "artist": {"artist_id": r["artist_id"], "name": r["artist_name"]},
            "release_date": r["release_date"],
        }
        for r in ctx.q("music", sql + " ORDER BY al.id" + paging(page_index, page_limit), args)
    ]


@api(
    "music",
    "show_artist",
    "GET",
    "/artists/{artist_id}",
    "Show an artist.",
    Param("artist_id", "integer", "ID of the artist.", required=True, nullable=False),
    returns={"artist_id": "integer", "name": "string", "genre": "string", "follower_count": "integer"},
)
def show_artist(ctx: AppContext, uid: int, artist_id: int) -> dict[str, Any]:
    r = ctx.one("music", "SELECT * FROM artists WHERE id = ?", (artist_id,), "artist")
    return {
        "artist_id": r["id"],
        "name": r["name"],
        "genre": r["genre"],
        "follower_count": r["follower_count"],
    }


@api(
    "music",
    "search_artists",
    "GET",
    "/artists",
    "Search artists by name or genre.",
    Param("query", "string", "Text in the name."),
    Param("genre", "string", "Genre."),
    paged=True,
    returns=[{"artist_id": "integer", "name": "string", "genre": "string"}],
)
def search_artists(
    ctx: AppContext, uid: int, query: str | None, genre: str | None, page_index: int, page_limit: int
) -> list[dict[str, Any]]:
    sql, args = "SELECT * FROM artists WHERE 1", []
    if query:
        sql += " AND name LIKE ?"
        args.append(f"%{query}%")
    if genre:
        sql += " AND genre = ?"
        args.append(genre)
    return [
        {"artist_id": r["id"], "name": r["name"], "genre": r["genre"]}
        for r in ctx.q("music", sql + " ORDER BY id" + paging(page_index, page_limit), args)
    ]


def _collection(table: str, stamp: str, noun: str) -> None:
    @api(
        "music",
        f"show_{noun}",
        "GET",
        f"/{noun}",
        f"List the songs in your {noun.replace('_', ' ')}, oldest first.",
        paged=True,
        returns=[{**_SONG, stamp: "string"}],
    )
    def show(ctx: AppContext, uid: int, page_index: int, page_limit: int) -> list[dict[str, Any]]:
        rows = ctx.q(
            "music",
            f"SELECT song_id, {stamp} FROM {table} WHERE user_id = ? ORDER BY id"
            + paging(page_index, page_limit),
            (uid,),
        )
        return [{**s, stamp: r[stamp]} for s, r in zip(_songs(ctx, [r["song_id"] for r in rows]), rows)]


_collection("library_songs", "added_at", "song_library")
_collection("liked_songs", "liked_at", "liked_songs")


@api("music", "add_song_to_library", "POST", "/song_library", "Add a song to your library.", _SID)
def add_song_to_library(ctx: AppContext, uid: int, song_id: int) -> dict[str, str]:
    _song_exists(ctx, song_id)
    if ctx.q("music", "SELECT id FROM library_songs WHERE user_id = ? AND song_id = ?", (uid, song_id)):
        raise ApiError(409, "The song is already in your library.")
    ctx.dbs.insert("music", "library_songs", {"user_id": uid, "song_id": song_id, "added_at": ctx.now_str})
    return {"message": "Song added to library."}


@api(
    "music",
    "remove_song_from_library",
    "DELETE",
    "/song_library/{song_id}",
    "Remove a song from your library.",
    _SID,
)
def remove_song_from_library(ctx: AppContext, uid: int, song_id: int) -> dict[str, str]:
    ctx.one(
        "music",
        "SELECT id FROM library_songs WHERE user_id = ? AND song_id = ?",
        (uid, song_id),
        "library song",
    )
    ctx.dbs.execute("music", "DELETE FROM library_songs WHERE user_id = ? AND song_id = ?", (uid, song_id))
    return {"message": "Song removed from library."}


@api("music", "like_song", "POST", "/liked_songs", "Like a song.", _SID)
def like_song(ctx: AppContext, uid: int, song_id: int) -> dict[str, str]:
    _song_exists(ctx, song_id)
    if ctx.q("music", "SELECT id FROM liked_songs WHERE user_id = ? AND song_id = ?", (uid, song_id)):
        raise ApiError(409, "You already like this song.")
    ctx.dbs.insert("music", "liked_songs", {"user_id": uid, "song_id": song_id, "liked_at": ctx.now_str})
    return {"message": "Song liked."}


@api("music", "unlike_song", "DELETE", "/liked_songs/{song_id}", "Remove your like from a song.", _SID)
def unlike_song(ctx: AppContext, uid: int, song_id: int) -> dict[str, str]:
    ctx.one(
        "music", "SELECT id FROM liked_songs WHERE user_id = ? AND song_id = ?", (uid, song_id), "liked song"
    )
    ctx.dbs.execute("music", "DELETE FROM liked_songs WHERE user_id = ? AND song_id = ?", (uid, song_id))
    return {"message": "Song unliked."}


def _pl(ctx: AppContext, r: dict[str, Any]) -> dict[str, Any]:
    ids = [
        x["song_id"]
        for x in ctx.q(
            "music", "SELECT song_id FROM playlist_songs WHERE playlist_id = ? ORDER BY id", (r["id"],)
        )
    ]
    return {
        "playlist_id": r["id"],
        "title": r["title"],
        "is_public": bool(r["is_public"]),
        "created_at": r["created_at"],
        "song_ids": ids,
    }


@api(
    "music",
    "show_playlists",
    "GET",
    "/playlists",
    "List your playlists.",
    paged=True,
    returns=[
        {
            "playlist_id": "integer",
            "title": "string",
            "is_public": "boolean",
            "created_at": "string",
            "song_ids": "list[integer]",
        }
    ],
)
def show_playlists(ctx: AppContext, uid: int, page_index: int, page_limit: int) -> list[dict[str, Any]]:
    rows = ctx.q(
        "music",
        "SELECT * FROM playlists WHERE owner_id = ? ORDER BY id" + paging(page_index, page_limit),
        (uid,),
    )
    return [_pl(ctx, r) for r in rows]


@api(
    "music",
    "show_playlist",
    "GET",
    "/playlists/{playlist_id}",
    "Show a playlist with its songs.",
    _PID,
    returns={"playlist_id": "integer", "title": "string", "is_public": "boolean", "songs": [_SONG]},
)
def show_playlist(ctx: AppContext, uid: int, playlist_id: int) -> dict[str, Any]:
    out = _pl(ctx, _playlist(ctx, uid, playlist_id))
    out["songs"] = _songs(ctx, out.pop("song_ids"))
    return out


@api(
    "music",
    "create_playlist",
    "POST",
    "/playlists",
    "Create a playlist.",
    Param("title", "string", "Title.", required=True, nullable=False),
    Param("is_public", "boolean", "Whether others can see it.", default=False, nullable=False),
    returns={"playlist_id": "integer", "message": "string"},
)
def create_playlist(ctx: AppContext, uid: int, title: str, is_public: bool) -> dict[str, Any]:
    if not title.strip():
        raise ApiError(422, "The title may not be empty.")
    pid = ctx.dbs.insert(
        "music",
        "playlists",
        {"owner_id": uid, "title": title, "is_public": int(is_public), "created_at": ctx.now_str},
    )
    return {"playlist_id": pid, "message": "Playlist created."}


@api(
    "music",
    "update_playlist",
    "PATCH",
    "/playlists/{playlist_id}",
    "Rename a playlist or change its visibility.",
    _PID,
    Param("title", "string", "New title."),
    Param("is_public", "boolean", "New visibility."),
)
def update_playlist(ctx: AppContext, uid: int, playlist_id: int, title: str | None, is_public: bool | None):
    _playlist(ctx, uid, playlist_id, write=True)
    for col, val in (("title", title), ("is_public", None if is_public is None else int(is_public))):
        if val is not None:
            ctx.dbs.execute("music", f"UPDATE playlists SET {col} = ? WHERE id = ?", (val, playlist_id))
    return {"message": "Playlist updated."}


@api("music", "delete_playlist", "DELETE", "/playlists/{playlist_id}", "Delete a playlist.", _PID)
def delete_playlist(ctx: AppContext, uid: int, playlist_id: int) -> dict[str, str]:
    _playlist(ctx, uid, playlist_id, write=True)
    ctx.dbs.execute("music", "DELETE FROM playlist_songs WHERE playlist_id = ?", (playlist_id,))
    ctx.dbs.execute("music", "DELETE FROM playlists WHERE id = ?", (playlist_id,))
    return {"message": "Playlist deleted."}


@api(
    "music",
    "add_song_to_playlist",
    "POST",
    "/playlists/{playlist_id}/songs",
    "Add a song to a playlist.",
    _PID,
    _SID,
)
def add_song_to_playlist(ctx: AppContext, uid: int, playlist_id: int, song_id: int) -> dict[str, str]:
    _playlist(ctx, uid, playlist_id, write=True)
    _song_exists(ctx, song_id)
    if ctx.q(
        "music", "SELECT id FROM playlist_songs WHERE playlist_id = ? AND song_id = ?", (playlist_id, song_id)
    ):
        raise ApiError(409, "The song is already in the playlist.")
    ctx.dbs.insert(
        "music", "playlist_songs", {"playlist_id": playlist_id, "song_id": song_id, "added_at": ctx.now_str}
    )
    return {"message": "Song added to playlist."}


@api(
    "music",
    "remove_song_from_playlist",
    "DELETE",
    "/playlists/{playlist_id}/songs/{song_id}",
    "Remove a song from a playlist.",
    _PID,
    _SID,
)
def remove_song_from_playlist(ctx: AppContext, uid: int, playlist_id: int, song_id: int) -> dict[str, str]:
    _playlist(ctx, uid, playlist_id, write=True)
    ctx.one(
        "music",
        "SELECT id FROM playlist_songs WHERE playlist_id = ? AND song_id = ?",
        (playlist_id, song_id),
        "playlist song",
    )
    ctx.dbs.execute(
        "music", "DELETE FROM playlist_songs WHERE playlist_id = ? AND song_id = ?", (playlist_id, song_id)
    )
    return {"message": "Song removed from playlist."}


@api(
    "music",
    "show_play_history",
    "GET",
    "/play_history",
    "List the songs you played, newest first.",
    Param("min_played_at", "string", "Only plays at or after this ISO date-time."),
    Param("max_played_at", "string", "Only plays at or before this ISO date-time."),
    paged=True,
    returns=[{"song_id": "integer", "title": "string", "artist": "dict", "played_at": "string"}],
)
def show_play_history(
    ctx: AppContext,
    uid: int,
    min_played_at: str | None,
    max_played_at: str | None,
    page_index: int,
    page_limit: int,
) -> list[dict[str, Any]]:
    sql, args = "SELECT song_id, played_at FROM play_history WHERE user_id = ?", [uid]
    if min_played_at:
        sql += " AND played_at >= ?"
        args.append(min_played_at)
    if max_played_at:
        sql += " AND played_at <= ?"
        args.append(max_played_at)
    rows = ctx.q("music", sql + " ORDER BY played_at DESC, id DESC" + paging(page_index, page_limit), args)
    songs = {s["song_id"]: s for s in _songs(ctx, list({r["song_id"] for r in rows}))}
    return [
        {
            "song_id": r["song_id"],
            "title": songs[r["song_id"]]["title"],
            "artist": songs[r["song_id"]]["artist"],
            "played_at": r["played_at"],
        }
        for r in rows
    ]
