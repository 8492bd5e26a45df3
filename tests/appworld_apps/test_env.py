"""``evolver/AppWorldApps-v0`` end to end: the real apps (own virtualenv), the sandbox, the state tests.

Skipped, with the reason, where the apps are not installed (``bash scripts/setup.sh appworld-apps``).
The first run builds the world of seed 0 into the cache (about a minute of CPU).
"""

import json
from pathlib import Path

import gymnasium as gym
import pytest

import evolver_gym  # noqa: F401  (registers the ids)
from evolver_gym.appworld_apps.backend import unavailable_reason
from evolver_gym.appworld_apps.tasks import SPLITS, TEMPLATES
from evolver_gym.core.trajectory import Step, Trajectory

REASON = unavailable_reason()
pytestmark = pytest.mark.skipif(REASON is not None, reason=f"AppWorld's apps are not installed: {REASON}")
USER_APPS = {"amazon", "file_system", "gmail", "phone", "simple_note", "splitwise", "spotify", "todoist", "venmo"}


@pytest.fixture(scope="module")
def env():
    e = gym.make("evolver/AppWorldApps-v0", split="train", timeout_s=5.0).unwrapped
    yield e
    e.close()


def _run(env, task, cells):
    env.reset(options={"task": task.to_dict()})
    info = {}
    for cell in cells:
        _, _, term, trunc, info = env.step(cell)
        if term or trunc:
            break
    return info


def test_same_seed_same_world(env):
    fixture = json.loads((Path(__file__).parent / "world_seed0.json").read_text())
    assert env.world == fixture


def test_real_api_docs_list_all_457_apis(env):
    env.reset(options={"index": 0})
    obs, *_ = env.step("print([a['name'] for a in apis.api_docs.show_app_descriptions()])")
    assert USER_APPS <= set(eval(obs)), obs
    cat = env.api_catalog()
    assert sum(len(v) for v in cat.values()) == 457
    obs, *_ = env.step(
        "total = 0\n"
        "for app in apis.api_docs.show_app_descriptions():\n"
        "    total += len(apis.api_docs.show_api_descriptions(app_name=app['name']))\n"
        "print(total)"
    )
    assert obs.strip() == "457"
    obs, *_ = env.step("print(apis.api_docs.show_api_doc(app_name='spotify', api_name='login')['path'])")
    assert obs.strip() == "/spotify/auth/token"


def test_one_reference_per_template_passes_and_doing_nothing_fails(env):
    seen = {}
    for split in SPLITS:
        for t in env.tasks(split):
            seen.setdefault(t.goal["scenario"], t)
    assert set(seen) == set(TEMPLATES)
    for name, task in seen.items():
        info = _run(env, task, ["apis.supervisor.complete_task()"])
        assert info["success"] is False, name
        info = _run(env, task, task.reference)
        assert info["success"] is True, (name, info["evaluation"]["failures"])
        assert info["evaluation"]["pass_share"] == 1.0


@pytest.mark.slow
def test_another_world_seed_passes_too():
    e = gym.make("evolver/AppWorldApps-v0", seed=1, timeout_s=5.0).unwrapped
    try:
        tasks = [t for s in SPLITS for t in e.tasks(s)]
        assert len(tasks) >= 750
        for task in tasks:
            e.reset(options={"task": task.to_dict()})
            assert e.evaluate()["success"] is False, task.task_id
            assert _run(e, task, task.reference)["success"] is True, task.task_id
    finally:
        e.close()


@pytest.mark.slow
def test_every_reference_passes_and_doing_nothing_fails(env):
    for split in SPLITS:
        for task in env.tasks(split):
            env.reset(options={"task": task.to_dict()})
            assert env.evaluate()["success"] is False, task.task_id
            assert _run(env, task, task.reference)["success"] is True, task.task_id


def test_errors_come_back_as_appworld_exceptions(env):
    env.reset(options={"index": 0})
    obs, _, _, _, info = env.step("apis.spotify.no_such_api()")
    assert "No API named 'no_such_api' found in the spotify app." in obs and info["action_valid"]
    obs, *_ = env.step("apis.spotify.show_playlist_library()")
    assert "Response status code is 401" in obs
    obs, *_ = env.step("apis.venmo.login(username='nobody@example.com', password='x')")
    assert "Invalid credentials" in obs


def test_agent_code_stays_in_the_sandbox(env):
    env.reset(options={"index": 0})
    obs, _, _, _, info = env.step("import os\nprint(os.listdir('/'))")
    assert "Execution failed" in obs and "bin" not in obs


def test_a_fault_rolls_back_the_step_and_keeps_earlier_changes(env):
    task = env.tasks("train")[0]
    env.reset(options={"task": task.to_dict()})
    sup = task.goal["supervisor"]
    login = (
        "pw = {a['account_name']: a['password'] for a in apis.supervisor.show_account_passwords()}\n"
        f"tok = apis.simple_note.login(username={sup['email']!r}, password=pw['simple_note'])['access_token']\n"
    )
    env.step(login + "apis.simple_note.create_note(title='kept', content='x', access_token=tok)")
    _, _, _, _, info = env.step(
        "apis.simple_note.create_note(title='rolled back', content='y', access_token=tok)\nwhile True:\n    pass"
    )
    assert info["fault"] == "timeout"
    notes = next(d for d in env.diffs() if d.name == "simple_note.notes")
    assert [r["title"] for r in notes.end_rows.values()] == ["kept"]


def test_tool_mode_calls_the_real_apps():
    e = gym.make("evolver/AppWorldApps-v0", action_mode="tool").unwrapped
    try:
        e.reset(options={"index": 0})
        obs, _, _, _, info = e.step(json.dumps({"name": "spotify__show_genres", "arguments": {}}))
        assert info["action_valid"] and "pop" in obs
        assert len(e.tool_schemas()) == 457
        obs, _, term, _, info = e.step('{"name": "supervisor__complete_task", "arguments": {}}')
        assert term and info["success"] is False
    finally:
        e.close()


def test_appworld_style_solution_runs_unchanged(env):
    # the shape of AppWorld's own agent code: passwords from the supervisor, login, paginate, answer
    task = next(t for t in env.tasks("train") if t.goal["scenario"] == "phone_count_relationship")
    code = """
passwords = {p["account_name"]: p["password"] for p in apis.supervisor.show_account_passwords()}
profile = apis.supervisor.show_profile()
token = apis.phone.login(username=profile["phone_number"], password=passwords["phone"])["access_token"]
relationship = "{relationship}"
contacts = []
page_index = 0
while True:
    page = apis.phone.search_contacts(relationship=relationship, page_index=page_index, access_token=token)
    if not page:
        break
    contacts.extend(page)
    page_index += 1
apis.supervisor.complete_task(answer=len(contacts))
""".replace("{relationship}", task.instruction.split("marked as ")[1].rstrip("?"))
    info = _run(env, task, [code])
    assert info["success"] is True, info["evaluation"]


def test_hindsight_task_replays_to_success(env):
    task = next(t for t in env.tasks("train") if t.goal["scenario"] == "note_create")
    traj = Trajectory(task=task, steps=[Step("", cell, 0.0) for cell in task.reference])
    derived = env.hindsight_task(traj)
    assert derived is not None and derived.parent_id == task.task_id
    assert _run(env, derived, derived.reference)["success"] is True
    assert _run(env, derived, ["apis.supervisor.complete_task()"])["success"] is False


def test_passes_gymnasium_env_checker(env):
    from gymnasium.utils.env_checker import check_env

    check_env(env, skip_render_check=True)


@pytest.mark.parametrize("mode,n", [("tool", 300), ("code", 60)])
def test_hostile_actions_never_crash_the_env(mode, n):
    from evolver_gym.appworld.fuzz import fuzz_actions, fuzz_env

    e = gym.make("evolver/AppWorldApps-v0", action_mode=mode, timeout_s=1.0).unwrapped
    try:
        out = fuzz_env(e, fuzz_actions(n, mode, seed=3))
    finally:
        e.close()
    assert out["exceptions"] == 0 and out["outside_space"] == 0, out["examples"]
    assert out["steps"] == n


def test_leakage_interface(env):
    tasks = env.tasks("train")
    note = next(t for t in tasks if t.goal["scenario"] == "note_create")
    alarm = next(t for t in tasks if t.goal["scenario"] == "phone_create_alarm")
    assert env.target_key(note) == env.target_key(note.to_dict()) != env.target_key(alarm)
    assert env.split_unit(note) is None  # the goal scheme holds out no template whole
    assert env.target_buckets(note) == {"app:simple_note"}
    assert env.target_buckets(note, as_solver=True) & env.target_buckets(note)
    assert not env.target_buckets(alarm, as_solver=True) & env.target_buckets(note)
    assert env.solves(note, note) is True
    assert env.solves(alarm, note) is False


def test_app_split_units_and_profile(env):
    from wrappers.questioning.filters import LeakageGuard

    env.split_scheme = "app"  # the same world and server under the app scheme
    try:
        held = env.profile()["held_out_apps"]
        assert held == {"dev": ["venmo"], "test_normal": ["splitwise", "todoist"], "test_challenge": ["gmail"]}
        protected = env.tasks("dev") + env.tasks("test_normal") + env.tasks("test_challenge")
        assert {env.split_unit(t) for t in protected} == {"app:venmo", "app:splitwise", "app:todoist", "app:gmail"}
        train = env.tasks("train")
        assert {env.split_unit(t) for t in train} == {None}
        # a hindsight-style task grown from a train task, whose changes landed in venmo (a dev app)
        test = {"kind": "added", "app": "venmo", "table": "transactions", "where": {"amount": 1.5}, "count": 1}
        on_venmo = train[0].derive(instruction="Make these changes: 1 added in venmo transactions.",
                                   goal={**train[0].goal, "tests": [test]}, reference=[], proposer="hindsight")
        assert env.split_unit(on_venmo) == "app:venmo"
        verdicts = LeakageGuard(protected, env=env, solves=False).near([on_venmo, train[0]])
        assert verdicts == ["in a unit the split holds out", None]
    finally:
        env.split_scheme = "goal"


def test_self_questionings_code_explorer_reads_all_457_api_docs(env):
    # AppWorld's docs describe every parameter: an app's docs do not fit one observation, so they come in parts
    from wrappers.questioning.code_explorer import CodeExplorer, discover_api_docs

    docs = discover_api_docs(env)
    assert len(docs) == 457 == len({(d.app, d.name) for d in docs})
    explorer = CodeExplorer(docs)
    assert set(explorer.login_apps) == USER_APPS and explorer.login_user["phone"] == "phone_number"


def test_oracle_and_profile(env):
    task = env.tasks("dev")[0]
    env.reset(options={"task": task.to_dict()})
    assert env.oracle() == task.reference
    prof = env.profile()
    assert sum(len(v) for v in prof["operations"].values()) == 457
    assert len(prof["scenarios"]) == len(TEMPLATES)
    assert prof["splits"]["train"] > prof["splits"]["dev"] > 0


def test_a_dead_app_server_is_restarted_on_the_same_world():
    e = gym.make("evolver/AppWorldApps-v0", timeout_s=2.0).unwrapped
    try:
        e.reset(options={"index": 0})
        e.server._proc.kill()
        e.server._proc.wait()
        obs, _, _, _, info = e.step("print(apis.supervisor.show_profile()['email'])")
        assert obs.strip() == e.world["people"][0]["email"]
        e.reset(options={"index": 1})
        obs, *_ = e.step("print(apis.api_docs.show_api_doc(app_name='venmo', api_name='login')['method'])")
        assert obs.strip() == "POST"
    finally:
        e.close()


def test_more_appworld_style_code_runs_unchanged(env):
    # AppWorld idioms: read the docs first, profile and passwords from the supervisor, page until empty
    env.reset(options={"index": 0})
    w = env.world
    obs, _, _, _, info = env.step(
        """
doc = apis.api_docs.show_api_doc(app_name="spotify", api_name="show_song_library")
assert "page_index" in [p["name"] for p in doc["parameters"]]
profile = apis.supervisor.show_profile()
passwords = {p["account_name"]: p["password"] for p in apis.supervisor.show_account_passwords()}
spotify_token = apis.spotify.login(username=profile["email"], password=passwords["spotify"])["access_token"]
songs, page_index = [], 0
while True:
    page = apis.spotify.show_song_library(page_index=page_index, access_token=spotify_token)
    if not page:
        break
    songs.extend(page)
    page_index += 1
venmo_token = apis.venmo.login(username=profile["email"], password=passwords["venmo"])["access_token"]
friends, page_index = [], 0
while True:
    page = apis.venmo.search_friends(page_index=page_index, access_token=venmo_token)
    if not page:
        break
    friends.extend(page)
    page_index += 1
note_token = apis.simple_note.login(username=profile["email"], password=passwords["simple_note"])["access_token"]
notes = apis.simple_note.search_notes(page_limit=20, access_token=note_token)
print(len(songs), sorted(f["email"] for f in friends), sorted(n["title"] for n in notes))
"""
    )
    assert info["action_valid"], obs
    assert obs.strip() == (
        f"{len(w['library_song_ids'])} {sorted(w['venmo_friends'])} {sorted(n['title'] for n in w['notes'])}"
    )


def test_progress_is_the_share_of_do_nothing_failing_tests_passing(env):
    task = next(t for t in env.tasks("train") if t.goal["scenario"] == "spotify_like_library_by_genre")
    n = sum(t["label"] == "no_op_fail" for t in task.goal["tests"])
    _, info = env.reset(options={"task": task.to_dict()})
    assert info["progress"] == 0.0
    liked = next(t for t in task.goal["tests"] if t["kind"] == "added")["where"]["song_id"]
    sup = task.goal["supervisor"]
    _, _, _, _, info = env.step(
        "pw = {a['account_name']: a['password'] for a in apis.supervisor.show_account_passwords()}\n"
        f"tok = apis.spotify.login(username={sup['email']!r}, password=pw['spotify'])['access_token']\n"
        f"apis.spotify.like_song(song_id={liked}, access_token=tok)"
    )
    assert info["progress"] == pytest.approx(1 / n)


def test_runs_under_a_vector_env():
    import numpy as np

    envs = gym.vector.SyncVectorEnv([lambda: gym.make("evolver/AppWorldApps-v0", timeout_s=5.0) for _ in range(2)])
    try:
        obs, _ = envs.reset(seed=[1, 2])
        assert len(obs) == 2
        actions = np.array(
            ["print(apis.supervisor.show_profile()['email'])", "apis.supervisor.complete_task()"], dtype=object
        )
        obs, reward, term, _, _ = envs.step(actions)
        assert "@" in obs[0] and list(term) == [False, True] and list(reward) == [0.0, 0.0]
    finally:
        envs.close()
