"""A tiny shop environment that follows the project's single-agent env contract, for these tests.

Pages: ``search`` (search bar) -> ``results`` (product names) -> ``item`` (colour options, ``buy now``).
A task names a product and a colour; buying it succeeds. ``hindsight_task`` turns a trajectory that
bought something into the task "buy that product in that colour", which the env itself can check.
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym

from evolver_gym.core import Task, Trajectory, UnicodeText, make_rng

ADJ = ["red", "soft", "tiny", "metal", "wooden", "silk", "glass", "paper", "steel", "wool"]
NOUN = ["lamp", "chair", "mug", "scarf", "clock", "bowl", "shelf", "kite", "vase", "hat"]
COLORS = ["black", "white", "green"]
TEMPLATES = ["i want a {c} {p}", "please find me the {p} in {c}", "looking for a {p}, colour {c}",
             "get the {c} version of the {p}"]


class ToyShopEnv(gym.Env):
    metadata = {"render_modes": []}

    def __init__(self, num_products: int = 30, max_steps: int = 10, seed: int = 0):
        rng = make_rng(seed, "toyshop")
        names = [f"{a} {n}" for a in ADJ for n in NOUN]
        self.products = [names[int(i)] for i in rng.choice(len(names), size=num_products, replace=False)]
        self.max_steps = max_steps
        self.observation_space = UnicodeText(4096)
        self.action_space = UnicodeText(256, examples=("search[lamp]", "click[buy now]"))
        self._tasks: dict[str, list[Task]] = {}
        for split, n in (("train", 40), ("dev", 10), ("test", 10)):
            trng = make_rng(seed, "toyshop-tasks", split)
            self._tasks[split] = [
                Task(task_id=f"toy/{split}/{i}", env_id="toy/Shop-v0", split=split, seed=i,
                     instruction=TEMPLATES[int(trng.integers(len(TEMPLATES)))].format(c=c, p=p),
                     goal={"product": p, "option": c})
                for i in range(n)
                for p, c in [(self.products[int(trng.integers(num_products))], COLORS[int(trng.integers(3))])]
            ]
        for tasks in self._tasks.values():
            for t in tasks:
                t.reference = self.oracle(t)
        self.task: Task | None = None

    # -- contract methods ----------------------------------------------------------------
    def tasks(self, split: str) -> list[Task]:
        return list(self._tasks[split])

    def profile(self) -> dict[str, Any]:
        return {"name": "ToyShop", "entities": ["product"], "attributes": {"product": ["name", "colour"]},
                "operations": ["search[words]", "click[product]", "click[colour]", "click[buy now]"],
                "products": self.products, "action_syntax": "Actions: search[words] or click[label]."}

    def oracle(self, task: Task) -> list[str]:
        return [f"search[{task.goal['product']}]", f"click[{task.goal['product']}]",
                f"click[{task.goal['option']}]", "click[buy now]"]

    def hindsight_task(self, traj: Trajectory) -> Task | None:
        if not traj.steps or traj.steps[-1].action != "click[buy now]":
            return None
        ev = traj.steps[-1].info.get("evaluation", {})
        product, option = ev.get("bought"), ev.get("option")
        if not product or not option:
            return None
        goal = {"product": product, "option": option}
        parent = traj.task
        probe = Task("probe", parent.env_id, "", goal=goal)
        return parent.derive(instruction=f"Buy the {product} in {option}.", goal=goal,
                             reference=self.oracle(probe), proposer="hindsight")

    # -- gym API -------------------------------------------------------------------------
    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        super().reset(seed=seed)
        options = options or {}
        if "task" in options:
            self.task = Task.from_dict(options["task"])
        elif "task_id" in options:
            self.task = next(t for ts in self._tasks.values() for t in ts if t.task_id == options["task_id"])
        else:
            split = options.get("split", "train")
            idx = options.get("index", int(self.np_random.integers(len(self._tasks[split]))))
            self.task = self._tasks[split][idx]
        self.page, self.results, self.item, self.option, self.steps = "search", [], None, None, 0
        return self._obs(), self._info(valid=True)

    def _clickables(self) -> list[str]:
        if self.page == "results":
            return [*self.results, "back to search"]
        if self.page == "item":
            return [*COLORS, "buy now", "back to search"]
        return []

    def _obs(self) -> str:
        head = f"Instruction: {self.task.instruction}\n"
        if self.page == "search":
            return head + "[search bar]"
        if self.page == "results":
            return head + "Results: " + (", ".join(self.results) or "none") + " | [back to search]"
        return head + f"Item: {self.item}; selected: {self.option}; options: {', '.join(COLORS)} | [buy now]"

    def _info(self, valid: bool, error: str | None = None) -> dict[str, Any]:
        info = {"task": self.task.public(), "instruction": self.task.instruction, "step": self.steps,
                "action_valid": valid,
                "available_actions": {"has_search_bar": self.page == "search", "clickables": self._clickables()},
                "progress": 0.5 * (self.item == self.task.goal.get("product"))
                + 0.5 * (self.option == self.task.goal.get("option"))}
        if error:
            info["error"] = error
        return info

    def step(self, action: str):
        self.steps += 1
        a = action.strip() if isinstance(action, str) else ""
        valid, error, done, reward = True, None, False, 0.0
        if a.startswith("search[") and a.endswith("]") and self.page == "search":
            words = a[7:-1].lower().split()
            self.results = [p for p in self.products if any(w in p.split() for w in words)][:5]
            self.page = "results"
        elif a.startswith("click[") and a.endswith("]") and a[6:-1] in self._clickables():
            label = a[6:-1]
            if label == "back to search":
                self.page = "search"
            elif self.page == "results":
                self.page, self.item, self.option = "item", label, None
            elif label in COLORS:
                self.option = label
            elif label == "buy now":
                done = True
        else:
            valid, error = False, f"invalid action {action!r} on the {self.page} page"
        info = self._info(valid, error)
        truncated = not done and self.steps >= self.max_steps
        if done:
            ok_p = self.item == self.task.goal.get("product")
            ok_o = self.option == self.task.goal.get("option")
            reward = 0.5 * ok_p + 0.5 * (ok_p and ok_o)
            info.update(success=bool(ok_p and ok_o), score=reward,
                        evaluation={"bought": self.item, "option": self.option, "product_match": ok_p})
        elif truncated:
            info.update(success=False, score=0.0, evaluation={"bought": None})
        obs = self._obs() if valid else self._obs() + f"\nError: {error}"
        return obs, reward, done, truncated, info
