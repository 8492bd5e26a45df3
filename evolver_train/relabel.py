"""Demonstrations with fresh names, so that a small policy learns to copy rather than memorise.

* ``IdRelabeller`` - fresh random values for the ids in a demonstration (``SFTConfig.relabel_ids``).
* ``WordRelabeller`` - other words of the environment's vocabulary for the content words of a
  demonstration's instruction (``SFTConfig.relabel_words``).

Both rewrite a demonstration each time it is put in a batch, consistently within it (pages and
actions alike), so the only way to produce the right action is to copy from the instruction or the
page.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Sequence

import numpy as np

from evolver_gym.core import Step, Trajectory

__all__ = ["IdRelabeller", "WordRelabeller"]


def _rewrite(trajectory: Trajectory, pattern: re.Pattern, substitute) -> Trajectory:
    """``trajectory`` with ``pattern.sub(substitute, ...)`` applied to every observation and action."""
    steps = [Step(observation=pattern.sub(substitute, st.observation), action=pattern.sub(substitute, st.action),
                  reward=st.reward, info=st.info)
             for st in trajectory.steps]
    return Trajectory(task=trajectory.task, steps=steps, success=trajectory.success, score=trajectory.score,
                      metadata=trajectory.metadata)


class IdRelabeller:
    """Fresh random values for the ids in a demonstration, consistent within it.

    Every match of ``pattern`` (case-insensitive) in the observations and actions of a demonstration
    is replaced: the match's first group when the pattern has one (a fixed prefix such as WebShop's
    ``b0`` stays), else the whole match, character by character from ``alphabet``. The same id gets
    the same new value everywhere in the demonstration, upper case where it was written in upper case.
    Lengths are kept, so a spelled id keeps its token count.

    Example:
        >>> from evolver_gym.core import Step, Task, Trajectory
        >>> demo = Trajectory(task=Task(task_id="t", env_id="e", instruction="x"), steps=[
        ...     Step(observation="[SEP] B0ABCDEFGH [SEP] Red shirt", action="click[b0abcdefgh]")])
        >>> new = IdRelabeller(r"b0([a-z0-9]{8})", "xyz").relabel(demo, np.random.default_rng(0))
        >>> page, action = new.steps[0].observation, new.steps[0].action
        >>> page[6:8], page[8:16].lower() == action[8:16], set(action[8:16]) <= set("xyz")
        ('B0', True, True)
    """

    def __init__(self, pattern: str, alphabet: str):
        if not alphabet:
            raise ValueError(f"alphabet must not be empty, got {alphabet!r}")
        self.pattern = re.compile(pattern, re.IGNORECASE)
        self.alphabet = np.array(sorted(set(alphabet.lower())))

    @classmethod
    def from_demonstrations(cls, pattern: str, demonstrations: Sequence[Trajectory]) -> IdRelabeller:
        """A relabeller whose alphabet is the characters of the replaced parts of the ids found."""
        probe = re.compile(pattern, re.IGNORECASE)
        chars: set[str] = set()
        for d in demonstrations:
            for step in d.steps:
                for m in probe.finditer(step.observation + " " + step.action):
                    chars.update((m.group(1) if probe.groups else m.group(0)).lower())
        if not chars:
            raise ValueError(f"relabel_ids {pattern!r} matches no id in the demonstrations")
        return cls(pattern, "".join(chars))

    def relabel(self, trajectory: Trajectory, rng: np.random.Generator) -> Trajectory:
        fresh: dict[str, str] = {}

        def substitute(m: re.Match) -> str:
            text = m.group(0)
            key = text.lower()
            if key not in fresh:
                lo, hi = (m.start(1), m.end(1)) if self.pattern.groups else m.span()
                lo, hi = lo - m.start(), hi - m.start()
                drawn = "".join(self.alphabet[rng.integers(len(self.alphabet), size=hi - lo)])
                fresh[key] = key[:lo] + drawn + key[hi:]
            return fresh[key].upper() if text.isupper() else fresh[key]

        return _rewrite(trajectory, self.pattern, substitute)


# A word: three or more letters, not part of a longer run of letters and digits (an id, "24count").
_WORD = re.compile(r"(?<![a-z0-9])[a-z]{3,}(?![a-z0-9])", re.IGNORECASE)


def _words(text: str) -> set[str]:
    return {w.lower() for w in _WORD.findall(text)}


def _demonstration_words(trajectory: Trajectory) -> set[str]:
    """The words of every observation and action of ``trajectory``."""
    return _words(" ".join(st.observation + " " + st.action for st in trajectory.steps))


class WordRelabeller:
    """Other words for the content words of a demonstration's instruction, consistent within it.

    A content word is a word of three or more letters in the task's instruction that is not
    ``structural``. Each is swapped, with probability ``share``, for a word drawn uniformly from
    ``vocabulary`` that the demonstration does not already contain, everywhere it occurs: the
    instruction, the pages (a product title, an option value) and the actions (the search, the option
    click), with its case kept. A policy trained on these cannot produce the right search or option
    click from its memory of the train products; it has to copy the word, and every word of the
    vocabulary is practised as a copied word, the words no train goal uses included.

    ``from_demonstrations`` calls structural every word that a share of the demonstrations use
    (the page furniture, the instruction's template, option names), so the format is never touched.

    Example:
        >>> from evolver_gym.core import Step, Task, Trajectory
        >>> task = Task(task_id="t", env_id="e", instruction="find red shoes, price lower than 30 dollars")
        >>> demo = Trajectory(task=task, steps=[
        ...     Step(observation="Instruction: find red shoes, price lower than 30 dollars",
        ...          action="search[find red shoes]"),
        ...     Step(observation="Red Shoes [SEP] size [SEP] red [SEP] blue", action="click[red]")])
        >>> relabeller = WordRelabeller(["violet"], share=1.0,
        ...                             structural=["find", "price", "lower", "than", "dollars", "shoes"])
        >>> [st.action for st in relabeller.relabel(demo, np.random.default_rng(0)).steps]
        ['search[find violet shoes]', 'click[violet]']
        >>> relabeller.relabel(demo, np.random.default_rng(0)).steps[1].observation
        'Violet Shoes [SEP] size [SEP] violet [SEP] blue'
    """

    def __init__(self, vocabulary: Iterable[str], *, share: float, structural: Iterable[str] = ()):
        if not 0.0 < share <= 1.0:
            raise ValueError(f"share must be in (0, 1], got {share!r}")
        self.share = share
        self.structural = frozenset(w.lower() for w in structural)
        pool = sorted({w.lower() for w in vocabulary if _WORD.fullmatch(w)} - self.structural)
        if not pool:
            raise ValueError("the vocabulary has no word of three or more letters outside the structural words")
        self.pool = np.array(pool)

    @classmethod
    def from_demonstrations(cls, demonstrations: Sequence[Trajectory], vocabulary: Iterable[str] = (), *,
                            share: float, structural_share: float = 0.15) -> WordRelabeller:
        """Structural words are those at least ``structural_share`` of ``demonstrations`` use anywhere;
        ``vocabulary`` defaults to the demonstrations' own words."""
        if not 0.0 < structural_share <= 1.0:
            raise ValueError(f"structural_share must be in (0, 1], got {structural_share!r}")
        used: Counter[str] = Counter()
        for d in demonstrations:
            used.update(_demonstration_words(d))
        if not used:
            raise ValueError("the demonstrations have no word to relabel")
        structural = {w for w, count in used.items() if count >= structural_share * len(demonstrations)}
        return cls(list(vocabulary) or list(used), share=share, structural=structural)

    def relabel(self, trajectory: Trajectory, rng: np.random.Generator) -> Trajectory:
        chosen = [w for w in sorted(_words(str(trajectory.task.instruction)) - self.structural)
                  if rng.random() < self.share]
        if not chosen:
            return trajectory
        taken = _demonstration_words(trajectory)
        fresh: dict[str, str] = {}
        for word in chosen:
            for _ in range(8):  # a word already in the demonstration would make it ambiguous: draw again
                new = str(self.pool[rng.integers(len(self.pool))])
                if new not in taken:
                    fresh[word] = new
                    taken.add(new)
                    break
        if not fresh:
            return trajectory
        pattern = re.compile(r"(?<![a-z0-9])(?:" + "|".join(map(re.escape, fresh)) + r")(?![a-z0-9])", re.IGNORECASE)

        def substitute(m: re.Match) -> str:
            text, new = m.group(0), fresh[m.group(0).lower()]
            if text.isupper() and len(text) > 1:
                return new.upper()
            return new.capitalize() if text[0].isupper() else new

        return _rewrite(trajectory, pattern, substitute)
