"""Prompt texts and renderers for the self-questioning roles (explorer, proposer, judge, rephraser).

* ``render_profile`` - an environment ``profile()`` as readable text.
* ``render_steps`` - a trajectory as ``>>> STEP i <<<`` action/observation blocks, clipped.
* ``explorer_messages`` - the curiosity explorer's conversation (breadth first, then myopic depth).
* ``proposer_messages`` - trajectory to tasks, told which tasks exist already.
* ``judge_messages`` - the reference-based, banded judge of a synthetic task's episode.
* ``rephrase_messages`` - rewrite a templated instruction in natural words, keeping every detail.

The wording is this project's own; the structure follows AgentEvolver's self-questioning design.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from evolver_gym.core import Trajectory

__all__ = [
    "explorer_messages",
    "judge_messages",
    "proposer_messages",
    "render_profile",
    "render_steps",
    "rephrase_messages",
]

MASK = "[MASKED]"


def render_profile(profile: dict[str, Any]) -> str:
    """Entities, attributes and operations of an environment, one bullet each."""
    lines: list[str] = []
    for key in ("name", "description"):
        if profile.get(key):
            lines.append(str(profile[key]))
    for key in ("entities", "attributes", "operations"):
        value = profile.get(key)
        if not value:
            continue
        lines.append(f"{key.capitalize()}:")
        if isinstance(value, dict):
            lines += [f"- {k}: {json.dumps(v, ensure_ascii=False) if not isinstance(v, str) else v}"
                      for k, v in value.items()]
        else:
            lines += [f"- {v if isinstance(v, str) else json.dumps(v, ensure_ascii=False)}" for v in value]
    return "\n".join(lines) if lines else json.dumps(profile, ensure_ascii=False)[:4000]


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 15] + " ...[clipped]"


def render_steps(traj: Trajectory, *, obs_chars: int = 600, mask: Sequence[str] = ()) -> str:
    """The trajectory as numbered action/observation pairs; texts in ``mask`` become ``[MASKED]``."""
    blocks = []
    for i, step in enumerate(traj.steps):
        last = i + 1 >= len(traj.steps)
        obs_after = traj.metadata.get("final_observation", "") if last else traj.steps[i + 1].observation
        for m in mask:
            if m:
                obs_after = obs_after.replace(m, MASK)
        blocks.append(f">>> STEP {i} <<<\nACTION: {_clip(step.action, 300)}\n"
                      f"OBSERVATION: {_clip(obs_after, obs_chars)}")
    return "\n\n".join(blocks) if blocks else "(no steps)"


EXPLORER_SYSTEM = """You are a curious explorer of an interactive environment. Your goal is to learn \
what can be done in it, not to complete any task. Every action you take should teach you something new.

The environment:
{profile}

How to explore:
- Breadth first: in your first {breadth} actions, touch as many different kinds of things as you can.
- Then go deep: pick something promising and follow it through a chain of actions to a concrete result.
- Never repeat an action that already gave you its answer; let each result decide your next step.

Users of this environment ask things like: "{example}". Use it only as a hint of what matters here; \
do not try to answer it.

Reply with one short line of reasoning, then the action alone on the last line, starting with "Action:".
{action_hint}"""


def explorer_messages(profile: dict[str, Any], example: str, history: Sequence[tuple[str, str]], observation: str,
                      *, step: int, breadth: int, window: int, action_hint: str = "") -> list[dict[str, str]]:
    """Conversation for the next exploration action.

    During the first ``breadth`` steps the whole history is shown; afterwards only the last
    ``window`` observation/action pairs (the myopic depth phase).
    """
    system = EXPLORER_SYSTEM.format(profile=render_profile(profile), breadth=breadth, example=example or "-",
                                    action_hint=action_hint)
    shown = list(history) if step < breadth else list(history)[-window:] if window > 0 else []
    msgs = [{"role": "system", "content": system}]
    for obs, act in shown:
        msgs.append({"role": "user", "content": _clip(obs, 2000)})
        msgs.append({"role": "assistant", "content": f"Action: {act}"})
    phase = "breadth: try something of a new kind" if step < breadth else "depth: follow a thread to a result"
    msgs.append({"role": "user", "content": f"{_clip(observation, 4000)}\n\n(step {step}, {phase})"})
    return msgs


PROPOSER_SYSTEM = """You write realistic tasks that a user of an environment could ask an assistant to do. \
You are shown a record of someone exploring the environment. Turn what the record shows can be achieved \
into concrete user requests.

Rules:
- Each task must be solvable with actions like the ones in the record, and its result must be checkable.
- Use concrete details seen in the record (names, numbers, options), so the task has one clear outcome.
- Leave out exploration detours; the solution lists only the actions that achieve the task, in order.
- Do not repeat or rephrase a task listed under "Existing tasks".

Write each task as one block:
<task>{{"query": "<the user's request>", "confidence": <0.0-1.0, how sure you are it is solvable>, \
"action_sequence": ["<action 1>", "<action 2>", ...]}}</task>
Write at most {max_tasks} blocks and nothing else."""


def proposer_messages(profile: dict[str, Any], traj: Trajectory, existing: Sequence[str], *, max_tasks: int,
                      mask: Sequence[str] = ()) -> list[dict[str, str]]:
    """Trajectory (seed instruction masked) plus the tasks already known for it."""
    old = "\n".join(f"- {q}" for q in existing) if existing else "(none)"
    user = (f"Environment:\n{render_profile(profile)}\n\nExploration record:\n{render_steps(traj, mask=mask)}\n\n"
            f"Existing tasks (do not repeat):\n{old}\n\nWrite up to {max_tasks} new tasks.")
    return [{"role": "system", "content": PROPOSER_SYSTEM.format(max_tasks=max_tasks)},
            {"role": "user", "content": user}]


JUDGE_SYSTEM = """You grade whether an assistant achieved a user's task in an interactive environment.
You get the task, a reference solution (one correct way; other ways may be correct too) and the \
assistant's steps.

Grade in this order:
1. Relevance: if the steps have nothing to do with the task, the grade is 0.
2. Runaway repetition: if the same action is repeated three or more times without progress, the grade \
is at most 20.
3. Achievement: compare the outcome with what the reference achieves. Did the assistant reach the goal?
4. Deductions: take points off for errors and for needless steps compared with the reference.

Bands: a task that was achieved gets 60 to 100; a task that was not achieved gets 0 to 40. \
Never give 41 to 59.
End your answer with the grade as <reward>NN</reward>."""


def judge_messages(instruction: str, reference: Sequence[Any], traj: Trajectory) -> list[dict[str, str]]:
    ref = "\n".join(f"{i + 1}. {a}" for i, a in enumerate(reference)) or "(none)"
    user = (f"Task: {instruction}\n\nReference solution:\n{ref}\n\nAssistant's steps:\n"
            f"{render_steps(traj, obs_chars=400)}\n\nGrade the assistant.")
    return [{"role": "system", "content": JUDGE_SYSTEM}, {"role": "user", "content": user}]


REPHRASE_SYSTEM = """Rewrite a task instruction the way a real shopper or user would say it. Keep every \
concrete detail (names, numbers, options, limits) exactly; add nothing new. Reply with the rewritten \
instruction only, on one line."""


def rephrase_messages(instruction: str) -> list[dict[str, str]]:
    return [{"role": "system", "content": REPHRASE_SYSTEM}, {"role": "user", "content": instruction}]
