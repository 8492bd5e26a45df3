"""Tool-call action mode and hindsight tasks."""

from __future__ import annotations

import json

from evolver_gym.appworld.env import AppWorldEnv
from evolver_gym.core.trajectory import Step, Trajectory


def test_tool_mode_round_trip():
    env = AppWorldEnv(action_mode="tool")
    task = next(t for t in env.tasks("train") if t.metadata["template"] == "create_alarm")
    env.reset(options={"task": task})
    assert any(s["function"]["name"] == "phone__create_alarm" for s in env.tool_schemas())
    obs, *_, info = env.step("not json")
    assert not info["action_valid"] and "not JSON" in info["error"]
    obs, *_ = env.step(json.dumps({"name": "music__show_playlists", "arguments": {}}))
    assert obs.startswith("Response status code is 401:")
    pw = {
        a["account_name"]: a["password"]
        for a in json.loads(env.step('{"name": "supervisor__show_account_passwords", "arguments": {}}')[0])
    }
    phone = task.goal["supervisor"]["phone_number"]
    tok = json.loads(
        env.step(
            json.dumps(
                {
                    "function": {
                        "name": "phone__login",
                        "arguments": json.dumps({"username": phone, "password": pw["phone"]}),
                    }
                }
            )
        )[0]
    )["access_token"]
    p = task.goal["params"]
    alarm_test = next(t for t in task.goal["tests"] if t["kind"] == "added")["where"]
    env.step(
        json.dumps(
            {
                "name": "phone__create_alarm",
                "arguments": {
                    "access_token": tok,
                    "time": p["time"],
                    "label": alarm_test["label"],
                    "repeat_days": alarm_test["repeat_days"].split(","),
                },
            }
        )
    )
    obs, reward, term, trunc, info = env.step('{"name": "supervisor__complete_task", "arguments": {}}')
    assert term and info["success"] and reward == 1.0
    env.close()


def test_hindsight_task_is_checkable():
    env = AppWorldEnv()
    task = next(t for t in env.tasks("train") if t.metadata["template"] == "split_bill")
    traj = Trajectory(task=task, steps=[Step("", a) for a in env.oracle(task)])
    hind = env.hindsight_task(traj)
    assert hind is not None and hind.origin == "synthetic" and hind.parent_id == task.task_id
    assert "payment request" in hind.instruction
    obs, info = env.reset(options={"task": hind})
    for a in hind.reference:
        *_, info = env.step(a)
    assert info["success"]
    env.reset(options={"task": hind})
    *_, info = env.step("apis.supervisor.complete_task()")
    assert not info["success"]
    assert env.hindsight_task(Trajectory(task=task, steps=[Step("", "x = 1")])) is None
    env.close()
