"""Offline stand-in for spaCy's noun tags on generated product titles (WebShop's ``r_type``).

* ``title_tokens`` - a title split the way spaCy's English tokenizer splits the generator's titles
  (decimals and ``12/12`` stay whole; ``32GB`` -> ``32``, ``gb``; ``42mm/44mm/45mm`` -> ``42mm/44mm/45``,
  ``mm``), lower-cased.
* ``TitleNounTagger`` - an averaged perceptron over each token's neighbours (words within 3, their
  3-letter endings within 2, word pairs and the word triple) that predicts whether spaCy's
  ``en_core_web_sm`` tags the token NOUN or PROPN; words spaCy always tagged one way (20 or more
  times) keep that tag. Its weights (``noun_weights.txt``) are learnt from spaCy's tags on generated
  titles by ``scripts/build_webshop_nouns.py``.

spaCy's tag of a title word depends on up to four tokens either side through a neural network, so
no word list or small model reproduces it on every unseen title: ``benchmarks/RESULTS.md`` records
how often rewards differ on catalogs the weights were not learnt from.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from functools import lru_cache
from pathlib import Path

__all__ = ["TitleNounTagger", "title_tokens", "WEIGHTS_PATH"]

WEIGHTS_PATH = Path(__file__).with_name("noun_weights.txt")
_MM_LIST = re.compile(r"(\d+(?:mm/\d+)+)(mm)")
_UNIT = re.compile(r"(\d+)(gb|tb|t)")
_PIECE = re.compile(r"\d+(?:[./]\d+)+|[a-z0-9]+|[^\sa-z0-9]")
_PAD = 3  # tokens of context on each side


def title_tokens(text: str) -> list[str]:
    """Lower-cased tokens of a generated title, split as spaCy's English tokenizer splits them.

    Example:
        >>> title_tokens("Kyvo Flash Drive - Slim, 3.4 Fl Oz, 32GB, iPhone 12/12 Pro")
        ['kyvo', 'flash', 'drive', '-', 'slim', ',', '3.4', 'fl', 'oz', ',', '32', 'gb', ',', 'iphone', '12/12', 'pro']
    """
    out: list[str] = []
    for chunk in text.lower().split():
        core = chunk.rstrip(",;:.!?)")
        match = _MM_LIST.fullmatch(core) or _UNIT.fullmatch(core)
        if match:
            out += [match.group(1), match.group(2), *chunk[len(core) :]]
        else:
            out += _PIECE.findall(chunk)
    return out


def features(tokens: list[str], i: int) -> list[str]:
    """The perceptron's features of ``tokens[i]`` (shared by the tagger and its builder)."""
    p = ["<s>"] * _PAD + tokens + ["</s>"] * _PAD
    j = i + _PAD
    w = p[j]
    out = ["b", f"w{w}", f"p{p[j - 1]}|{w}", f"n{w}|{p[j + 1]}", f"t{p[j - 1]}|{w}|{p[j + 1]}"]
    for k in (-2, -1, 1, 2):
        out += [f"s{k}:{p[j + k][-3:]}", f"ws{k}:{w}|{p[j + k][-3:]}"]
    out.append(f"s0:{w[-3:]}")
    for k in range(1, _PAD + 1):
        out += [f"{-k}:{p[j - k]}", f"{k}:{p[j + k]}", f"{-k}w:{p[j - k]}|{w}", f"{k}w:{w}|{p[j + k]}"]
    return out


class TitleNounTagger:
    """Which tokens of a generated title spaCy's ``en_core_web_sm`` tags NOUN or PROPN, offline.

    Args:
        weights: feature -> weight (a token is a noun when its features' weights sum above 0);
            ``None`` reads ``noun_weights.txt``.

    Example:
        >>> tagger = TitleNounTagger()
        >>> tagger("Camdyn Relaxed Fit Hoodie for Men")
        ['camdyn', 'relaxed', 'fit', 'hoodie', 'men']
    """

    def __init__(self, weights: Mapping[str, float] | None = None):
        if weights is None:
            weights = _read_weights(WEIGHTS_PATH)
        elif not isinstance(weights, Mapping) or not weights:
            raise ValueError(f"weights must be a non-empty mapping of feature -> weight, got {weights!r:.80}")
        self.weights = dict(weights)

    def is_noun(self, tokens: list[str]) -> list[bool]:
        """One flag per token of ``tokens`` (as ``title_tokens`` gives them). A word with a fixed
        tag (weight ``=word``: spaCy tagged it the same way wherever it was seen) keeps that tag."""
        get = self.weights.get
        flags = []
        for i, token in enumerate(tokens):
            fixed = get(f"={token}")
            flags.append(fixed > 0 if fixed is not None else sum(get(f, 0.0) for f in features(tokens, i)) > 0)
        return flags

    def __call__(self, text: str) -> list[str]:
        tokens = title_tokens(text)
        return [t for t, noun in zip(tokens, self.is_noun(tokens)) if noun]

    @staticmethod
    def write(weights: Mapping[str, float], path: Path, header: Iterable[str] = ()) -> None:
        """Write ``weights`` as the tagger reads them: ``#`` header lines, then ``feature weight``."""
        lines = [f"# {h}" for h in header]
        lines += [f"{f} {w:.6g}" for f, w in sorted(weights.items())]
        path.write_text("\n".join(lines) + "\n", encoding="utf-8")


@lru_cache(maxsize=2)
def _read_weights(path: Path) -> dict[str, float]:
    weights = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        if line and not line.startswith("#"):
            feature, value = line.rsplit(" ", 1)
            weights[feature] = float(value)
    return weights
