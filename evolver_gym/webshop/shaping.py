"""WebShop's observation shapers for small policies (optional; the environment itself is unchanged).

* ``DropRepeatedInstruction`` - removes the instruction header that WebShop repeats at the top of
  every page after the first observation.
* ``TopResults`` - shows only the first ``k`` products of a WebShop results page.
* ``NumberedResults`` - shows a results page's products by position (``1``, ``2``, ...) instead of by id,
  and accepts ``click[<position>]``.
* ``MarkChosenOptions`` - marks the option values already chosen on an item page (``walnut (chosen)``).
* ``SwappedWords`` - on request, exchanges the instruction's content words with other title words for an
  episode, everywhere the policy reads and writes (a memorised lookup earns nothing in such an episode).
* ``observation_shaper`` - the shaper a config names (``drop_repeated_instruction``, ``top_results=K``,
  ``numbered_results``, ``mark_chosen_options``, ``swap_words``);
  ``WebShopEnv.observation_shaper`` is this function, the environment's side of
  ``evolver_train.envs.shape_environment``.

A multi-turn rollout keeps the whole conversation in context, so the instruction the first
observation showed is still there when the policy reads page five; repeating it costs a small
policy about 30 tokens a turn (a sixth of an episode) without adding information.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import gymnasium as gym

from .pages import click_actions

__all__ = ["DropRepeatedInstruction", "TopResults", "NumberedResults", "MarkChosenOptions", "SwappedWords",
           "observation_shaper", "SHAPERS"]

_PRODUCT_ID = re.compile(r"^B0[A-Z0-9]{8}$", re.IGNORECASE)
_RESULTS_HEADER = re.compile(r"^Page \d+ \(Total results: \d+\)$")
_FEEDBACK = "Invalid action:"
_CLICK = re.compile(r"^\s*click\[\s*(.*?)\s*\]\s*$", re.IGNORECASE | re.DOTALL)


class DropRepeatedInstruction(gym.Wrapper, gym.utils.RecordConstructorArgs):
    """Cut ``"<label> [SEP] <instruction> [SEP] "`` from the start of every observation after reset.

    Only an exact match of ``info["instruction"]`` is removed; any other observation passes through
    untouched. The reset observation (which carries the instruction) is never changed.

    Args:
        env: A text environment whose step observations may start with the instruction.
        label: The header word before the instruction (WebShop: ``"Instruction:"``).
        separator: The separator around the instruction (WebShop: ``"[SEP]"``).

    Example:
        >>> import gymnasium as gym, evolver_gym
        >>> env = DropRepeatedInstruction(gym.make("evolver/WebShop-v0", num_products=200))
        >>> obs, info = env.reset(seed=0, options={"split": "dev", "index": 0})
        >>> obs, *_ = env.step("search[" + info["instruction"] + "]")
        >>> obs.startswith("Back to Search")
        True

    ``info`` keys written: none.
    """

    def __init__(self, env: gym.Env, label: str = "Instruction:", separator: str = "[SEP]"):
        if not isinstance(label, str) or not isinstance(separator, str) or not separator:
            raise ValueError(f"label and separator must be strings (separator non-empty), got {label!r}, {separator!r}")
        gym.utils.RecordConstructorArgs.__init__(self, label=label, separator=separator)
        gym.Wrapper.__init__(self, env)
        self.label, self.separator = label, separator

    def step(self, action: Any):
        obs, reward, terminated, truncated, info = self.env.step(action)
        instruction = info.get("instruction")
        if isinstance(obs, str) and isinstance(instruction, str) and instruction:
            head = f"{self.label} {self.separator} {instruction} {self.separator} "
            if obs.startswith(head):
                obs = obs[len(head):]
        return obs, reward, terminated, truncated, info


class TopResults(gym.Wrapper, gym.utils.RecordConstructorArgs):
    """Show only the first ``k`` products of a results page (``ID [SEP] title [SEP] price`` groups).

    The page is otherwise unchanged (the invalid-action feedback the environment appends is kept, its
    list of clickables cut to the products shown), and so is the environment: a product that is not
    shown can still be clicked. With BM25 over the instruction, the product a goal asks for is almost always among the
    first five results; the rest of the page is reading a small policy pays for on every turn.

    Args:
        env: A WebShop-like text environment.
        k: Products kept per results page (>= 1).
        separator: The page's field separator.

    Example:
        >>> import gymnasium as gym, evolver_gym
        >>> env = TopResults(gym.make("evolver/WebShop-v0", num_products=200), k=3)
        >>> obs, info = env.reset(seed=0, options={"split": "dev", "index": 0})
        >>> obs, *_ = env.step("search[" + info["instruction"] + "]")
        >>> sum(1 for part in obs.split(" [SEP] ") if _PRODUCT_ID.match(part))
        3

    ``info`` keys rewritten: ``available_actions["clickables"]``, cut to the products shown, and
    ``allowed_actions`` to match (copies).
    """

    def __init__(self, env: gym.Env, k: int = 5, separator: str = "[SEP]"):
        if not isinstance(k, int) or isinstance(k, bool) or k < 1:
            raise ValueError(f"k must be an int >= 1, got {k!r}")
        gym.utils.RecordConstructorArgs.__init__(self, k=k, separator=separator)
        gym.Wrapper.__init__(self, env)
        self.k, self.joiner = k, f" {separator} "

    def step(self, action: Any):
        obs, reward, terminated, truncated, info = self.env.step(action)
        if isinstance(obs, str) and self.joiner in obs:
            parts = obs.split(self.joiner)
            ids = [i for i, part in enumerate(parts) if _PRODUCT_ID.match(part.strip())]
            if len(ids) > self.k:
                kept = parts[: ids[self.k]]
                hidden = {parts[i].strip().lower() for i in ids[self.k:]}
                if parts[-1].startswith(_FEEDBACK):  # the environment's invalid-action feedback: keep it
                    kept.append(_without_clickables(parts[-1], hidden))
                obs = self.joiner.join(kept)
                info = _map_clickables(info, lambda c: None if str(c).lower() in hidden else c)
        return obs, reward, terminated, truncated, info


def _map_clickables(info: dict[str, Any], rename: Callable[[str], str | None]) -> dict[str, Any]:
    """``info`` with ``available_actions["clickables"]`` renamed by ``rename`` (``None`` drops one) and
    ``allowed_actions`` made from them again; copies."""
    available = info.get("available_actions")
    if not isinstance(available, dict) or not isinstance(available.get("clickables"), list):
        return info
    clickables = [new for new in map(rename, available["clickables"]) if new is not None]
    return _with_available(info, {**available, "clickables": clickables})


def _with_available(info: dict[str, Any], available: dict[str, Any]) -> dict[str, Any]:
    """``info`` (a copy) with ``available_actions`` and, where the env writes it, ``allowed_actions`` to match."""
    info = {**info, "available_actions": available}
    if "allowed_actions" in info:
        info["allowed_actions"] = click_actions(available)
    return info


def _without_clickables(feedback: str, hidden: set[str]) -> str:
    """The feedback's ``clickables: a, b, ...`` list without the products the page does not show."""
    head, marker, listed = feedback.rpartition("; clickables: ")
    if not marker:
        return feedback
    return head + marker + ", ".join(c for c in listed.split(", ") if c.lower() not in hidden)


class NumberedResults(gym.Wrapper, gym.utils.RecordConstructorArgs):
    """Show a results page's products by position (``1``, ``2``, ...) and accept ``click[<position>]``.

    A product id is ten characters a policy must copy exactly from the page; a small policy trained on
    a few hundred products memorises their ids instead, and cannot click a product it never trained on.
    Here each ``ID [SEP] title [SEP] price`` group of a results page reads ``N [SEP] title [SEP] price``,
    and ``click[N]`` clicks the product shown at position ``N`` of the last results page. Every other
    action passes through unchanged (``click[<id>]`` still works), and so does every other page: a
    number is only a position while a results page is on screen, so an option value such as ``8``
    is still clicked as itself on an item page. Apply it after ``TopResults``, which finds products by
    their ids.

    ``express_action`` turns an action of the unwrapped environment into this interface's form (an id
    click on the page becomes a position click): demonstrations and tokenizer corpora replay the
    environment's oracle through it.

    Args:
        env: A WebShop-like text environment.
        separator: The page's field separator.

    Example:
        >>> import gymnasium as gym, evolver_gym
        >>> env = NumberedResults(gym.make("evolver/WebShop-v0", num_products=200))
        >>> obs, info = env.reset(seed=0, options={"split": "dev", "index": 0})
        >>> obs, *_ = env.step("search[" + info["instruction"] + "]")
        >>> [part for part in obs.split(" [SEP] ") if part.isdigit()][:3]
        ['1', '2', '3']
        >>> obs, reward, terminated, truncated, info = env.step("click[1]")
        >>> info["action_valid"]
        True

    ``info`` keys rewritten: ``available_actions["clickables"]`` names a results page's products by position,
    and ``allowed_actions`` to match.
    """

    def __init__(self, env: gym.Env, separator: str = "[SEP]"):
        if not isinstance(separator, str) or not separator.strip():
            raise ValueError(f"separator must be a non-empty string, got {separator!r}")
        gym.utils.RecordConstructorArgs.__init__(self, separator=separator)
        gym.Wrapper.__init__(self, env)
        self.joiner = f" {separator} "
        self._positions: dict[str, str] = {}  # position -> product id, of the last results page shown

    def reset(self, **kwargs: Any):
        obs, info = self.env.reset(**kwargs)
        self._positions = {}
        return self._number(obs), info

    def step(self, action: Any):
        match = _CLICK.match(action) if isinstance(action, str) else None
        if match is not None and match.group(1) in self._positions:
            action = f"click[{self._positions[match.group(1)]}]"
        obs, reward, terminated, truncated, info = self.env.step(action)
        obs = self._number(obs)
        if self._positions:  # the page's products are clicked by position here
            by_id = {product.lower(): position for position, product in self._positions.items()}
            info = _map_clickables(info, lambda c: by_id.get(str(c).lower(), c))
        return obs, reward, terminated, truncated, info

    def express_action(self, action: str) -> str:
        """``action`` as this interface shows it: ``click[<id>]`` of a product on the page becomes ``click[<N>]``."""
        match = _CLICK.match(action) if isinstance(action, str) else None
        if match is not None:
            for position, product in self._positions.items():
                if product.lower() == match.group(1).lower():
                    return f"click[{position}]"
        return action

    def _number(self, obs: Any) -> Any:
        if not isinstance(obs, str) or self.joiner not in obs:
            return obs  # not a page (an error alone keeps the page it was about)
        parts = obs.split(self.joiner)
        if not any(_RESULTS_HEADER.match(part.strip()) for part in parts):
            self._positions = {}
            return obs
        positions: dict[str, str] = {}
        for i, part in enumerate(parts):
            if _PRODUCT_ID.match(part.strip()):
                position = str(len(positions) + 1)
                positions[position] = part.strip()
                parts[i] = position
        self._positions = positions
        text = self.joiner.join(parts)
        if positions:  # the invalid-action feedback lists clickables by id: name the shown ones by position
            by_id = {product.lower(): position for position, product in positions.items()}
            pattern = re.compile(r"\b(" + "|".join(map(re.escape, by_id)) + r")\b", re.IGNORECASE)
            text = pattern.sub(lambda m: by_id[m.group(1).lower()], text)
        return text


class MarkChosenOptions(gym.Wrapper, gym.utils.RecordConstructorArgs):
    """Mark the option values already chosen on an item page: ``walnut`` reads ``walnut (chosen)``.

    WebShop's text pages do not show which options are chosen (its ``text_rich`` mode does, at several
    times the tokens), so after ``click[walnut]`` the item page reads exactly as before, and a policy
    has to find in its own past actions which options it still needs. Clicks are unchanged: the value
    is still clicked as ``click[walnut]``. Needs an environment with ``chosen_options`` (WebShop's: the
    open item's chosen values).

    Args:
        env: A WebShop-like text environment.
        mark: Appended to a chosen value, after a space.
        separator: The page's field separator.

    Example:
        >>> import gymnasium as gym, evolver_gym
        >>> env = MarkChosenOptions(gym.make("evolver/WebShop-v0", num_products=200))
        >>> obs, info = env.reset(seed=0, options={"split": "dev", "index": 0})
        >>> reference = env.unwrapped.tasks("dev")[0].reference  # search, click the product, options, buy
        >>> for action in reference[:-1]:
        ...     obs, *_ = env.step(action)
        >>> reference[-2], reference[-2][len("click["):-1] + " (chosen)" in obs
        ('click[camel]', True)

    ``info`` keys written: none.
    """

    def __init__(self, env: gym.Env, mark: str = "(chosen)", separator: str = "[SEP]"):
        if not hasattr(env.unwrapped, "chosen_options"):
            raise ValueError(f"MarkChosenOptions needs an env with chosen_options, got {type(env.unwrapped).__name__}")
        if not isinstance(mark, str) or not mark.strip():
            raise ValueError(f"mark must be a non-empty string, got {mark!r}")
        gym.utils.RecordConstructorArgs.__init__(self, mark=mark, separator=separator)
        gym.Wrapper.__init__(self, env)
        self.mark, self.joiner = mark, f" {separator} "

    def step(self, action: Any):
        obs, reward, terminated, truncated, info = self.env.step(action)
        chosen = {v.lower() for v in self.env.unwrapped.chosen_options.values()}
        if chosen and isinstance(obs, str):
            obs = self.joiner.join(f"{part} {self.mark}" if part.strip().lower() in chosen else part
                                   for part in obs.split(self.joiner))
        return obs, reward, terminated, truncated, info


class SwappedWords(gym.Wrapper, gym.utils.RecordConstructorArgs):
    """On request, swap each content word of the instruction with another word of the shop for one episode.

    Reset with ``options["swap_words"]`` true: each word of the instruction that also appears in a product
    title (letters only, at least ``min_length`` long, not page furniture) is paired with a title word
    drawn from the reset's ``np_random``, and the two are exchanged everywhere the policy reads or writes:
    every observation, ``info["instruction"]``, the clickables of ``info["available_actions"]`` and
    ``info["allowed_actions"]``, and
    back in every action before the shop sees it. The swap is its own inverse, so the shop behind is
    untouched: the same searches reach the same pages, the same purchase earns the same reward. A policy
    that memorised where a training goal's words lead is lost in a swapped episode; one that reads the
    instruction and copies from it is not. Without the option an episode passes through unchanged, so
    one environment serves swapped training rollouts and plain evaluations (``EvolverGRPOConfig.
    rollout_options``).

    Args:
        env: A WebShop environment (its catalog gives the words that can be swapped in).
        min_length: Shortest word that is swapped.

    Example:
        >>> import gymnasium as gym, evolver_gym
        >>> env = SwappedWords(gym.make("evolver/WebShop-v0", num_products=200))
        >>> plain, info = env.reset(seed=0, options={"split": "dev", "index": 0})
        >>> swapped, swapped_info = env.reset(seed=0, options={"split": "dev", "index": 0, "swap_words": True})
        >>> swapped != plain and len(swapped_info["swapped_words"]) > 0
        True
        >>> reference = env.unwrapped.tasks("dev")[0].reference
        >>> for action in reference:   # the oracle's actions, written in the swapped words
        ...     obs, reward, terminated, truncated, info = env.step(env.swap(action))
        >>> reward
        1.0

    ``info`` keys written: ``swapped_words`` (the word pairs of a swapped episode, else absent); the
    ``instruction``, ``available_actions`` and ``allowed_actions`` it finds are rewritten in a swapped
    episode.
    """

    _FURNITURE = frozenset(w.lower() for w in re.findall(r"[A-Za-z]+", (
        "WebShop Instruction Search Back to Search Page Total results Next Prev Price to Rating Description "
        "Features Reviews Attributes Buy Now Thank you for shopping with us Your score min max Purchased asin "
        "options Invalid action search click and price lower than dollars with find me i want need looking "
        "under size color count pack of the a an in for")))
    _WORD = re.compile(r"[A-Za-z]+")

    def __init__(self, env: gym.Env, min_length: int = 3):
        if isinstance(min_length, bool) or not isinstance(min_length, int) or min_length < 1:
            raise ValueError(f"min_length must be an int >= 1, got {min_length!r}")
        catalog = getattr(env.unwrapped, "catalog", None)
        if catalog is None or not hasattr(catalog, "products"):
            raise ValueError(f"SwappedWords needs a WebShop environment with a catalog, "
                             f"got {type(env.unwrapped).__name__}")
        gym.utils.RecordConstructorArgs.__init__(self, min_length=min_length)
        gym.Wrapper.__init__(self, env)
        self.min_length = min_length
        titles = {w.lower() for p in catalog.products for w in self._WORD.findall(p["Title"])}
        self.partners = sorted(w for w in titles if len(w) >= min_length and w not in self._FURNITURE)
        self._title_words = frozenset(self.partners)
        self.pairs: dict[str, str] = {}
        self._pattern: re.Pattern | None = None

    def swap(self, text: str) -> str:
        """``text`` with this episode's word pairs exchanged (the identity in a plain episode)."""
        if self._pattern is None or not isinstance(text, str):
            return text

        def exchange(match: re.Match) -> str:
            word = match.group(0)
            other = self.pairs[word.lower()]
            return other.upper() if word.isupper() and len(word) > 1 else other.capitalize() \
                if word[0].isupper() else other

        return self._pattern.sub(exchange, text)

    def _rewrite(self, obs: Any, info: dict[str, Any]) -> tuple[Any, dict[str, Any]]:
        if self._pattern is None:
            return obs, info
        info = dict(info)
        if isinstance(info.get("instruction"), str):
            info["instruction"] = self.swap(info["instruction"])
        available = info.get("available_actions")
        if isinstance(available, dict) and isinstance(available.get("clickables"), list):
            info = _with_available(info, {**available, "clickables": [self.swap(c) for c in available["clickables"]]})
        info["swapped_words"] = sorted((a, b) for a, b in self.pairs.items() if a < b)
        return self.swap(obs), info

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        options = dict(options or {})
        swap = bool(options.pop("swap_words", False))
        obs, info = self.env.reset(seed=seed, options=options)
        self.pairs, self._pattern = {}, None
        if swap:
            rng = self.env.unwrapped.np_random
            words = sorted({w.lower() for w in self._WORD.findall(str(info.get("instruction", "")))})
            chosen = [w for w in words if len(w) >= self.min_length and w in self._title_words]
            free = [w for w in self.partners if w not in set(words)]
            for word in chosen:
                if not free:
                    break
                other = free.pop(int(rng.integers(len(free))))
                self.pairs[word], self.pairs[other] = other, word
            if self.pairs:
                alternatives = "|".join(sorted(map(re.escape, self.pairs), key=len, reverse=True))
                # Whole words only: never a letter run inside a product id or a number-word like 8oz.
                self._pattern = re.compile(rf"(?<![A-Za-z0-9])(?:{alternatives})(?![A-Za-z0-9])", re.IGNORECASE)
        return self._rewrite(obs, info)

    def step(self, action: Any):
        obs, reward, terminated, truncated, info = self.env.step(self.swap(action) if isinstance(action, str)
                                                                 else action)
        obs, info = self._rewrite(obs, info)
        return obs, reward, terminated, truncated, info


SHAPERS = ("drop_repeated_instruction", "top_results=K", "numbered_results", "mark_chosen_options", "swap_words")


def observation_shaper(spec: str) -> Callable[[gym.Env], gym.Env]:
    """``env -> shaped env`` for one name of ``SHAPERS`` (``top_results`` takes ``=K``).

    Example:
        >>> observation_shaper("top_results=3").__name__
        'shape'
    """
    key, _, value = str(spec).partition("=")
    if key == "drop_repeated_instruction" and not value:
        def shape(env: gym.Env) -> gym.Env:
            return DropRepeatedInstruction(env)
    elif key == "top_results" and value.isdigit():
        def shape(env: gym.Env) -> gym.Env:
            if _has_layer(env, NumberedResults):
                raise ValueError("top_results must come before numbered_results: it finds products by their ids")
            return TopResults(env, k=int(value))
    elif key == "numbered_results" and not value:
        def shape(env: gym.Env) -> gym.Env:
            return NumberedResults(env)
    elif key == "mark_chosen_options" and not value:
        def shape(env: gym.Env) -> gym.Env:
            return MarkChosenOptions(env)
    elif key == "swap_words" and not value:
        def shape(env: gym.Env) -> gym.Env:
            return SwappedWords(env)
    else:
        raise ValueError(f"unknown observation shaper {spec!r}; choose from {list(SHAPERS)}")
    return shape


def _has_layer(env: gym.Env, kind: type) -> bool:
    while isinstance(env, gym.Wrapper):
        if isinstance(env, kind):
            return True
        env = env.env
    return False
