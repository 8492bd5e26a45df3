"""``evolver/WebShop-v0``: WebShop's shopping website as a Gymnasium text environment.

* ``WebShopEnv`` - search, results, item and sub-pages, Buy Now; WebShop's pages, actions and reward.

Many envs in one process share one catalog and search index (see ``world.get_world``).
"""

from __future__ import annotations

import json
import re
from typing import Any

import gymnasium as gym

from ..core import Task, Trajectory, UnicodeText, make_random
from .goals import SPLIT_SCHEMES, price_upper, split_unit
from .pages import (
    OBSERVATION_MODES,
    SUB_PAGES,
    PageState,
    click_actions,
    clickables,
    option_name_of_click,
    render,
)
from .policies import oracle_actions
from .recipes import experience_recipe, flawed_plan
from .shaping import observation_shaper
from .world import World, get_world

__all__ = ["WebShopEnv", "ENV_ID"]

ENV_ID = "evolver/WebShop-v0"
_ACTION = re.compile(r"\s*([^\[\]]+?)\s*\[(.*)\]\s*", re.S)
_GOAL_KEYS = ("asin", "query", "name", "product_category", "attributes", "price_upper", "goal_options")
_REFERENCE_LIMIT = 20_000  # above this many products, references are computed on demand by ``oracle``
_TASK_ID = re.compile(r"webshop/(?:(product|type|category)-)?(train|dev|test)/(\d+)")
_CLICK = re.compile(r"\s*click\s*\[(.*)\]\s*", re.S | re.I)
EXPLORE_SPLIT = "explore"  # start states with no goal (``exploration_tasks``)


def _task_id(scheme: str, split: str, index: int) -> str:
    # The old ids stay as they were; other schemes name theirs, so an id means one goal.
    return f"webshop/{split}/{index}" if scheme == "goal" else f"webshop/{scheme}-{split}/{index}"


def _clip(value: Any, n: int = 120) -> str:
    text = repr(value)
    return text if len(text) <= n else text[:n] + "...'"


class WebShopEnv(gym.Env[str, str]):
    """WebShop (Yao et al., 2022) on an embedded, seeded catalog, or on the real data files.

    The agent sees a page of the shopping site and acts with ``search[<keywords>]`` (allowed on
    every page) or ``click[<clickable>]``; clicking ``buy now`` on an item page ends the episode
    with WebShop's reward. Any other string is an invalid action: nothing changes, the observation
    says why.

    Args:
        num_products: Products to generate (or, with ``data_dir``, to keep from the real file).
        seed: Catalog seed (products, prices, instructions).
        max_steps: Step cap; the episode is truncated after this many actions.
        observation_mode: ``text`` (WebShop's ``[SEP]`` format), ``text_rich``, ``url`` or ``html``.
        goals: ``human`` (human-style instructions) or ``synthetic`` (one goal per option combination).
        data_dir: Folder with WebShop's real ``items_shuffle*.json``, ``items_ins_v2*.json`` and
            ``items_human_ins.json``; ``None`` generates the catalog.
        split: Default split of ``reset()`` without a task (``train``, ``dev``, ``test``).
        split_scheme: How goals are cut into train / dev / test: ``goal`` (upstream's shuffle of
            goals; dev goals mostly share their product with train goals), ``product`` (whole
            products held out: no dev or test product is in any train goal), ``type`` (whole product
            types held out) or ``category`` (whole categories held out). Held-out units are drawn
            from ``seed``. Task ids of the new schemes name them (``webshop/product-dev/3``). See
            docs/splits.md.
        index_dir: Folder to keep the search index in between processes (optional).
        noun_tagger: ``auto``, ``lexicon``, ``spacy`` or ``fallback`` (nouns for ``r_type``).
        invalid_action_feedback: Append the reason to the observation after an invalid action
            (``False`` gives upstream's silent no-op).
        render_mode: ``None`` or ``"ansi"`` (``render()`` returns the current observation).
        sponsored_results: Sponsored products listed ahead of every search's matches (0 = none, as
            WebShop). They are drawn by the query from the products it does not match, so they never
            help: with 10 (a page), the first results page is all distractors and the agent must page
            on with ``click[next >]``. Longer, sparser episodes for credit-assignment studies; task
            references and the oracle page past them.

    ``info`` keys: ``task`` (public task dict), ``instruction``, ``step``, ``action_valid``,
    ``available_actions`` (``{"has_search_bar", "clickables"}``, upstream's form), ``allowed_actions``
    (the same as complete actions: ``click[<c>]`` strings on a page without a search bar, an empty list
    once the episode is over, ``None`` where the search bar takes any text), ``progress`` (privileged: the
    reward that buying the best thing in view would earn now), ``error`` after an invalid action;
    at the end ``success`` (reward == 1), ``score`` (the reward) and ``evaluation`` (the breakdown,
    with ``purchased``).

    ``env.unwrapped.catalog`` is the shared ``Catalog``; its ``vocabulary()`` lists every word the
    pages can show (split text with ``evolver_gym.webshop.tokenize`` for a word-level tokenizer).

    Vector envs: ``gym.vector.SyncVectorEnv`` works as is; ``AsyncVectorEnv`` needs
    ``shared_memory=False`` (text observations cannot live in shared numpy buffers).

    Example:
        >>> import gymnasium as gym, evolver_gym
        >>> env = gym.make("evolver/WebShop-v0", num_products=200)
        >>> obs, info = env.reset(seed=0, options={"split": "dev", "index": 0})
        >>> obs.startswith("WebShop [SEP] Instruction: [SEP] ")
        True
        >>> for action in env.unwrapped.oracle(info["task"]):
        ...     obs, reward, terminated, truncated, info = env.step(action)
        >>> reward, info["success"]
        (1.0, True)
    """

    metadata = {"render_modes": ["ansi"]}

    def __init__(
        self,
        num_products: int = 1000,
        seed: int = 0,
        max_steps: int = 15,
        observation_mode: str = "text",
        goals: str = "human",
        data_dir: str | None = None,
        split: str = "train",
        split_scheme: str = "goal",
        index_dir: str | None = None,
        noun_tagger: str = "auto",
        invalid_action_feedback: bool = True,
        render_mode: str | None = None,
        sponsored_results: int = 0,
    ):
        if not isinstance(num_products, int) or num_products < 1:
            raise ValueError(f"num_products must be a positive int, got {num_products!r}")
        if not isinstance(max_steps, int) or max_steps < 1:
            raise ValueError(f"max_steps must be a positive int, got {max_steps!r}")
        if observation_mode not in OBSERVATION_MODES:
            raise ValueError(f"observation_mode must be one of {OBSERVATION_MODES}, got {observation_mode!r}")
        if goals not in {"human", "synthetic"}:
            raise ValueError(f"goals must be 'human' or 'synthetic', got {goals!r}")
        if split not in {"train", "dev", "test"}:
            raise ValueError(f"split must be 'train', 'dev' or 'test', got {split!r}")
        if split_scheme not in SPLIT_SCHEMES:
            raise ValueError(f"split_scheme must be one of {SPLIT_SCHEMES}, got {split_scheme!r}")
        if render_mode not in (None, "ansi"):
            raise ValueError(f"render_mode must be None or 'ansi', got {render_mode!r}")
        if not isinstance(sponsored_results, int) or isinstance(sponsored_results, bool) or sponsored_results < 0:
            raise ValueError(f"sponsored_results must be an int >= 0, got {sponsored_results!r}")
        self._shop_kwargs = dict(num_products=num_products, seed=int(seed), goals=goals, data_dir=data_dir,
                                 index_dir=index_dir, noun_tagger=noun_tagger, sponsored_results=sponsored_results)
        self.world: World = get_world(
            num_products=num_products,
            seed=int(seed),
            goals=goals,
            data_dir=data_dir,
            index_dir=index_dir,
            noun_tagger=noun_tagger,
        )
        self.catalog = self.world.catalog
        self.sponsored_results = sponsored_results
        self.split_scheme = split_scheme
        self.splits = self.catalog.splits_for(split_scheme)
        self.catalog_seed, self.max_steps, self.observation_mode = int(seed), max_steps, observation_mode
        self.default_split, self.invalid_action_feedback, self.render_mode = (
            split,
            invalid_action_feedback,
            render_mode,
        )
        queries = sorted({p["query"] for p in self.catalog.products})[:16]
        examples = tuple(f"search[{q}]" for q in queries if "[" not in q and "]" not in q) or (
            "search[shoes]",
        )
        self.action_space = UnicodeText(max_length=4096, examples=examples)
        self.observation_space = UnicodeText(max_length=1_000_000)
        self._tasks: dict[str, list[Task | None]] = {s: [None] * len(g) for s, g in self.splits.items()}
        self._other_schemes: dict[str, WebShopEnv] = {}
        self._purchases: dict[tuple[str, ...], tuple[str, dict[str, str]] | None] = {}
        self._scratch: WebShopEnv | None = None
        self._task: Task | None = None
        self._state = PageState()
        self._steps = 0
        self._done = True
        self._obs = ""
        self._session = "fixed_0"
        self._progress_cache: dict[str, float] = {}

    # -- tasks ---------------------------------------------------------------------------------
    def _make_task(self, split: str, index: int) -> Task:
        task = self._tasks[split][index]
        if task is None:
            goal = self.splits[split][index]
            reference: list[str] = []
            if len(self.catalog) <= _REFERENCE_LIMIT or split != "train":
                try:
                    reference = oracle_actions(self.world, goal, goal["instruction_text"], self.sponsored_results)
                except LookupError:  # never seen on generated catalogs; real data may hold such goals
                    reference = []
            task = Task(
                task_id=_task_id(self.split_scheme, split, index),
                env_id=ENV_ID,
                instruction=goal["instruction_text"],
                split=split,
                seed=self.catalog_seed,
                origin="seed",
                goal=dict(goal),
                reference=reference,
                difficulty=len(goal["attributes"]) + len(goal["goal_options"]),
                metadata={
                    "goals": self.catalog.goal_kind,
                    "num_products": len(self.catalog),
                    "split_scheme": self.split_scheme,
                },
            )
            self._tasks[split][index] = task
        return task

    def tasks(self, split: str) -> list[Task]:
        """Every task of ``split`` (``train``, ``dev``, ``test``), in split order."""
        if split not in self._tasks:
            raise ValueError(f"unknown WebShop split {split!r}; expected one of {sorted(self._tasks)}")
        return [self._make_task(split, i) for i in range(len(self._tasks[split]))]

    def exploration_tasks(self, n: int) -> list[Task]:
        """``n`` start states without a goal: self-questioning from the environment alone.

        Each is the search page under an empty instruction. Buying ends the episode with reward 0,
        since there is nothing to score against, and ``info["evaluation"]["purchased"]`` records
        what was bought, for :meth:`hindsight_task`. Start ``i`` is the same on every call.

        Example:
            >>> env = WebShopEnv(num_products=50, goals="synthetic")
            >>> start = env.exploration_tasks(2)[1]
            >>> start.task_id, start.split, start.goal, start.instruction
            ('webshop/explore/1', 'explore', {}, '')
        """
        if not isinstance(n, int) or n < 1:
            raise ValueError(f"exploration_tasks needs n >= 1, got {n!r}")
        return [
            Task(task_id=f"webshop/{EXPLORE_SPLIT}/{i}", env_id=ENV_ID, instruction="", split=EXPLORE_SPLIT,
                 seed=self.catalog_seed, metadata={"exploration": True, "num_products": len(self.catalog)})
            for i in range(n)
        ]

    def _resolve(self, options: dict[str, Any]) -> Task:
        if options.get("task") is not None:
            task = Task.from_dict(
                options["task"] if isinstance(options["task"], Task) else dict(options["task"])
            )
            if not task.goal and task.split == EXPLORE_SPLIT:  # a goal-free start (exploration_tasks)
                return task
            missing = [k for k in _GOAL_KEYS if k not in task.goal]
            if missing:
                raise ValueError(f"WebShop task {task.task_id!r} goal lacks {missing}")
            if task.goal["asin"] not in self.catalog.by_asin:
                raise ValueError(
                    f"WebShop task {task.task_id!r} names asin {task.goal['asin']!r} not in the catalog"
                )
            return task
        if options.get("task_id") is not None:
            match = _TASK_ID.fullmatch(str(options["task_id"]))
            owner = self._scheme_env(match.group(1) or "goal") if match else self
            if not match or int(match.group(3)) >= len(owner._tasks[match.group(2)]):
                raise ValueError(f"unknown WebShop task_id {options['task_id']!r}")
            return owner._make_task(match.group(2), int(match.group(3)))
        split = options.get("split", self.default_split)
        if split not in self._tasks:
            raise ValueError(f"unknown WebShop split {split!r}; expected one of {sorted(self._tasks)}")
        n = len(self._tasks[split])
        if n == 0:
            raise ValueError(f"WebShop split {split!r} is empty for this catalog")
        index = options.get("index")
        if index is None:
            index = int(self.np_random.integers(n))
        if not isinstance(index, int) or not 0 <= index < n:
            raise ValueError(f"index must be an int in [0, {n}) for split {split!r}, got {index!r}")
        return self._make_task(split, index)

    def _scheme_env(self, scheme: str) -> WebShopEnv:
        """An env of the same world under another split scheme (to resolve its task ids)."""
        if scheme == self.split_scheme:
            return self
        if scheme not in self._other_schemes:
            self._other_schemes[scheme] = WebShopEnv(**self._shop_kwargs, split_scheme=scheme)
        return self._other_schemes[scheme]

    # -- gym API -------------------------------------------------------------------------------
    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[str, dict[str, Any]]:
        super().reset(seed=seed)
        self._task = self._resolve(dict(options or {}))
        self._state = PageState()
        self._steps = 0
        self._done = False
        self._progress_cache = {}
        self._session = self._task.task_id.replace("webshop/", "fixed_").replace("/", "_")
        self._obs = self._render()
        return self._obs, self._info(True)

    def step(self, action: str) -> tuple[str, float, bool, bool, dict[str, Any]]:
        if self._task is None:
            return (
                "Call reset() before step().",
                0.0,
                True,
                False,
                {"action_valid": False, "error": "the environment has not been reset", "step": 0},
            )
        if self._done:
            info = self._info(False, error="the episode has ended; call reset()")
            return self._obs, 0.0, True, False, info
        self._steps += 1
        error, reward, terminated = self._apply(action)
        truncated = not terminated and self._steps >= self.max_steps
        self._done = terminated or truncated
        self._obs = self._render()
        obs = self._obs
        if error is not None and self.invalid_action_feedback:
            sep = " [SEP] " if self.observation_mode == "text" else "\n\n"
            obs = f"{obs}{sep}Invalid action: {error}"
        info = self._info(error is None, error=error)
        if self._done:
            info.update(self._outcome(reward if terminated else None))
        return obs, float(reward), terminated, truncated, info

    def render(self) -> str | None:
        return self._obs if self.render_mode == "ansi" else None

    # -- dynamics ------------------------------------------------------------------------------
    def _apply(self, action: Any) -> tuple[str | None, float, bool]:
        """Apply one action; returns (error or None, reward, terminated). Never raises."""
        if not isinstance(action, str):
            return (
                f"an action is a string like search[...] or click[...], got {type(action).__name__}",
                0.0,
                False,
            )
        match = _ACTION.fullmatch(action)
        if match is None:
            return f"{_clip(action)} is not search[<keywords>] or click[<button>]", 0.0, False
        name, arg = match.group(1).lower(), match.group(2).strip().lower()
        state = self._state
        if name == "search":
            keywords = arg.split()
            if not keywords:
                return "search[...] needs keywords inside the brackets", 0.0, False
            results = self.world.search(" ".join(keywords), self.sponsored_results)
            self._state = PageState(page="results", keywords=keywords, results=results, visited=state.visited)
            return None, 0.0, False
        if name != "click":
            return f"unknown action {_clip(match.group(1))}; use search[...] or click[...]", 0.0, False
        available = clickables(state, self.catalog.by_asin)
        if arg == "search" or arg not in available:
            shown = ", ".join(c for c in available if c != "search") or "none: use search[<keywords>]"
            return f"{_clip(arg)} cannot be clicked on this page; clickables: {shown}", 0.0, False
        if arg == "back to search":
            self._state = PageState(page="search", visited=state.visited)
        elif arg == "next >":
            state.page_num += 1
        elif arg == "< prev":
            if state.page == "results":
                state.page_num -= 1
            elif state.page == "item":
                state.page, state.asin, state.options = "results", None, {}
            else:
                state.page, state.sub_page = "item", None
        elif arg == "buy now":
            if self._task.goal:
                reward, evaluation = self.world.reward(self._task.goal, state.asin, state.options)
            else:
                reward, evaluation = 0.0, {"reason": "an exploration start has no goal to score"}
            evaluation["purchased"] = {
                "asin": state.asin,
                "options": dict(state.options),
                "price": self.catalog.prices[state.asin],
            }
            self._evaluation = evaluation
            state.page, state.reward = "done", reward
            return None, reward, True
        elif state.page == "results":
            asin = self.world.asin_from_click(arg)
            state.page, state.asin, state.options = "item", asin, {}
            state.visited.add(asin)
        elif arg in SUB_PAGES:
            state.page, state.sub_page = "sub", arg
        else:  # an option value on the item page
            option_name = option_name_of_click(self.catalog.by_asin[state.asin]["options"], arg)
            if option_name is not None:
                state.options[option_name] = arg
        return None, 0.0, False

    def _render(self) -> str:
        return render(
            self._state, self._task.instruction, self.catalog.by_asin, self.observation_mode, self._session
        )

    @property
    def chosen_options(self) -> dict[str, str]:
        """The option values chosen so far on the open item page (option name -> value); empty elsewhere."""
        return dict(self._state.options) if self._state.page == "item" else {}

    def _progress(self) -> float:
        state, goal = self._state, self._task.goal
        if not goal:
            return 0.0
        if state.page == "done":
            return float(state.reward or 0.0)
        if state.page in {"item", "sub"}:
            return self.world.reward(goal, state.asin, state.options)[0]
        if state.page == "results":
            best = 0.0
            for asin in state.page_results():
                value = self._progress_cache.get(asin)
                if value is None:
                    value = self._progress_cache[asin] = self.world.reward(goal, asin, {})[0]
                best = max(best, value)
            return best
        return 0.0

    def _info(self, valid: bool, error: str | None = None) -> dict[str, Any]:
        done = self._state.page == "done"
        available = {
            "has_search_bar": self._state.page == "search",
            "clickables": [] if done else clickables(self._state, self.catalog.by_asin),
        }
        info = {
            "task": self._task.public(),
            "instruction": self._task.instruction,
            "step": self._steps,
            "action_valid": valid,
            "available_actions": available,
            "allowed_actions": click_actions(available),
            "progress": self._progress(),
        }
        if error is not None:
            info["error"] = error
        return info

    def _outcome(self, reward: float | None) -> dict[str, Any]:
        if reward is None:
            return {
                "success": False,
                "score": 0.0,
                "evaluation": {"purchased": None, "reason": "step limit reached"},
            }
        return {"success": reward == 1.0, "score": float(reward), "evaluation": dict(self._evaluation)}

    # -- methods for wrappers and trainers -----------------------------------------------------
    # What the environment offers a learner (trainer, warm start, offline summarizer); see recipes.py.
    observation_shaper = staticmethod(observation_shaper)
    flawed_plan = staticmethod(flawed_plan)
    experience_recipe = staticmethod(experience_recipe)

    def oracle(self, task: Task | dict[str, Any]) -> list[str]:
        """Actions that solve ``task`` from the search page (reward 1.0 for catalog goals)."""
        task = Task.from_dict(task if isinstance(task, Task) else dict(task))
        return oracle_actions(self.world, task.goal, task.instruction, self.sponsored_results)

    def profile(self) -> dict[str, Any]:
        """What a task proposer needs to know: entities, attributes, options and operations."""
        types: dict[str, dict[str, Any]] = {}
        attributes: dict[str, int] = {}
        options: dict[str, set[str]] = {}
        for p in self.catalog.products:
            entry = types.setdefault(
                p["query"],
                {
                    "query": p["query"],
                    "category": p["category"],
                    "product_category": p["product_category"],
                    "count": 0,
                },
            )
            entry["count"] += 1
            for a in p["Attributes"]:
                attributes[a] = attributes.get(a, 0) + 1
            for name, values in p["options"].items():
                options.setdefault(name, set()).update(values)
        return {
            "env_id": ENV_ID,
            "entities": {
                "categories": sorted({p["category"] for p in self.catalog.products}),
                "product_types": sorted(types.values(), key=lambda t: t["query"]),
                "num_products": len(self.catalog),
            },
            "attributes": sorted(attributes, key=lambda a: (-attributes[a], a)),
            "options": {k: sorted(v) for k, v in sorted(options.items())},
            "operations": {
                "search[<keywords>]": "search the catalog (any page); top 50 results, 10 per page",
                "click[<asin>]": "open a product from the results page",
                "click[next >] / click[< prev]": "page results; < prev also leaves item and sub-pages",
                "click[<option value>]": "choose an option value on the item page",
                "click[description|features|reviews]": "open an item sub-page",
                "click[back to search]": "return to the search page",
                "click[buy now]": "buy the open item with the chosen options; ends the episode",
            },
            "goal_fields": list(_GOAL_KEYS),
            "splits": {k: len(v) for k, v in self.splits.items()},
            "split_scheme": self.split_scheme,
        }

    def hindsight_task(self, trajectory: Trajectory, *, fill_open_choices: bool = False) -> Task | None:
        """A verifiable task whose goal is what ``trajectory`` bought (None if it bought nothing).

        A purchase that left some of its product's options unchosen gives a task that any value of them
        satisfies (``metadata["open_choices"]``), unlike a dataset goal, which pins every option. With
        ``fill_open_choices`` each open option gets a value drawn (seeded by the trajectory's task and
        purchase) from those the product offers, so the task pins every option like a dataset goal; the
        reference, the oracle's, then chooses them all (``metadata["filled_choices"]`` names them).
        """
        purchased = None
        for step in reversed(trajectory.steps):
            purchased = (step.info.get("evaluation") or {}).get("purchased")
            if purchased:
                break
        if not purchased or purchased.get("asin") not in self.catalog.by_asin:
            return None
        asin, chosen = purchased["asin"], dict(purchased.get("options") or {})
        product = self.catalog.by_asin[asin]
        rng = make_random(
            self.catalog_seed, "hindsight", trajectory.task.task_id, asin, sorted(chosen.items())
        )
        offered = product.get("options") or {}
        filled = sorted(n for n in offered if n not in chosen and offered[n]) if fill_open_choices else []
        if filled:
            fill_rng = make_random(self.catalog_seed, "hindsight-fill", trajectory.task.task_id, asin,
                                   sorted(chosen.items()))
            chosen.update({name: fill_rng.choice(offered[name]) for name in filled})
        pool = [a for a in product["Attributes"] if a != "DUMMY_ATTR"]
        attrs = rng.sample(pool, min(len(pool), rng.randint(1, 2))) if pool else []
        if not attrs:
            return None
        upper, price_text = price_upper(self.catalog.prices[asin], rng)
        thing = product["query"]
        text = f"i am looking for {' and '.join(attrs)} {thing}"
        if chosen:
            text += " with " + ", and ".join(f"{k}: {v}" for k, v in chosen.items())
        goal = {
            "asin": asin,
            "category": product["category"],
            "query": product["query"],
            "name": product["name"],
            "product_category": product["product_category"],
            "instruction_text": text + price_text,
            "attributes": attrs,
            "price_upper": upper,
            "goal_options": list(chosen.values()),
            "weight": 1,
        }
        reference = oracle_actions(self.world, goal, goal["instruction_text"], self.sponsored_results)
        parent = trajectory.task
        return parent.derive(
            instruction=goal["instruction_text"],
            goal=goal,
            reference=reference,
            proposer="hindsight",
            # options the product offers but the purchase left unchosen: any value then satisfies the task,
            # which the synthesis filter ``complete_targets`` refuses (dataset goals pin every option)
            metadata={"source": "hindsight", "purchased": purchased,
                      "open_choices": sorted(set(offered) - set(chosen)), "filled_choices": filled},
        )

    # -- the leakage interface (``wrappers.questioning.LeakageGuard``) -------------------------------
    def split_unit(self, task: Task | dict[str, Any]) -> str | None:
        """What this env's split scheme holds out whole, for ``task``: its product's ASIN (``product``),
        its product's category (``category``), or ``None`` (``goal``: only goals are held out)."""
        goal = Task.from_dict(task if isinstance(task, Task) else dict(task)).goal
        product = self.catalog.by_asin.get(goal.get("asin"))
        return None if product is None else split_unit(product, self.split_scheme)

    def target_key(self, task: Task | dict[str, Any]) -> str | None:
        """What ``task`` asks to buy: its product and option values, however the goal spells them
        (dataset goals hold options as a dict, hindsight goals as a list); ``None`` without a product.

        Attributes, price bound and wording are left out: buying that product with those options
        meets them (``solves`` checks the reward itself).
        """
        goal = Task.from_dict(task if isinstance(task, Task) else dict(task)).goal
        if not goal.get("asin"):
            return None
        options = goal.get("goal_options") or []
        values = options.values() if isinstance(options, dict) else options
        return json.dumps([goal["asin"], sorted(" ".join(str(v).lower().split()) for v in values)])

    def target_buckets(self, task: Task | dict[str, Any], as_solver: bool = False) -> set[str]:
        """Keys that ``solves(solver, task)`` needs ``target_buckets(solver, True)`` and
        ``target_buckets(task)`` to share (``"*"`` shares with any key).

        Buying earns 1.0 only with ``r_type == 1``, which needs a noun shared by the bought title and
        the goal's product name (or a goal name without nouns). So a task's keys are the nouns of its
        goal's product name (``"*"`` if it has none), and a solver's are the nouns of every product its
        reference clicks (the bought one is among them).
        """
        task = Task.from_dict(task if isinstance(task, Task) else dict(task))
        if not as_solver:
            nouns = set(self.world.tagger(task.goal["name"])) if task.goal.get("name") else set()
            return {f"noun:{n}" for n in nouns} if nouns else {"*"}
        keys: set[str] = set()
        for action in task.reference:
            match = _CLICK.fullmatch(str(action))
            asin = self.world.asin_from_click(match.group(1).strip().lower()) if match else None
            if asin is not None:
                keys.update(f"noun:{n}" for n in self.world.tagger(self.catalog.by_asin[asin]["name"]))
        return keys

    def purchase(self, actions: list[str]) -> tuple[str, dict[str, str]] | None:
        """``(asin, options)`` that ``actions`` buy when played from the search page, or None.

        Pages do not depend on the task, so neither does the purchase; results are cached.
        """
        key = tuple(str(a) for a in actions)
        if key not in self._purchases:
            if self._scratch is None:
                self._scratch = WebShopEnv(**self._shop_kwargs, max_steps=10_000)
            scratch, bought = self._scratch, None
            scratch.reset(options={"task": scratch._make_task(*self._any_split())})
            for action in key:  # the dynamics alone: no page rendering or progress signal needed
                if scratch._apply(action)[2]:
                    bought = scratch._evaluation["purchased"]
                    break
            self._purchases[key] = (bought["asin"], dict(bought["options"])) if bought else None
        return self._purchases[key]

    def _any_split(self) -> tuple[str, int]:
        split = next((s for s, goals in self._scratch.splits.items() if goals), None)
        if split is None:
            raise ValueError("this WebShop catalog has no goals to replay actions on")
        return split, 0

    def solves(self, solver: Task | dict[str, Any], task: Task | dict[str, Any]) -> bool:
        """Whether ``solver``'s reference, played in this shop, earns ``task`` a reward of 1.0."""
        solver = Task.from_dict(solver if isinstance(solver, Task) else dict(solver))
        goal = Task.from_dict(task if isinstance(task, Task) else dict(task)).goal
        if not solver.reference or any(k not in goal for k in _GOAL_KEYS):
            return False
        bought = self.purchase(list(solver.reference))
        if bought is None or bought[0] not in self.catalog.by_asin:
            return False
        return self.world.reward(goal, bought[0], bought[1])[0] == 1.0
