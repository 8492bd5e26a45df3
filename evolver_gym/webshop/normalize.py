"""String normalisation used by WebShop's reward: fuzzy matching and colour normalisation.

* ``COLOR_SET`` - WebShop's 102 colour words, in its (alphabetical) order.
* ``normalize_color`` - the first colour word that occurs in a string (substring test), else the string.
* ``full_process`` - thefuzz-style preprocessing: drop Latin-1 bytes, lower-case, non-alphanumerics
  to spaces, strip.
* ``token_set_ratio`` - thefuzz's ``fuzz.token_set_ratio`` on ``rapidfuzz``: processed, rounded to int.

The order of ``COLOR_SET`` matters: the *first* hit wins, so "navy blue" and "dark blue" become
"blue", "rose gold" becomes "gold", "dark grey" becomes "dark" but "light grey" becomes "grey", and
substrings hit too ("standard" becomes "tan", "washable" becomes "ash").
These are WebShop's semantics and are kept on purpose.
"""

from __future__ import annotations

from typing import Any

from rapidfuzz import fuzz
from rapidfuzz.utils import default_process

__all__ = ["COLOR_SET", "full_process", "normalize_color", "token_set_ratio"]

# fmt: off
COLOR_SET: tuple[str, ...] = (
    "alabaster", "apricot", "aqua", "ash", "asphalt", "azure", "banana", "beige", "black", "blue",
    "blush", "bordeaux", "bronze", "brown", "burgundy", "camel", "camo", "caramel", "champagne",
    "charcoal", "cheetah", "chestnut", "chocolate", "christmas", "coffee", "cognac", "copper", "coral",
    "cranberry", "cream", "crystal", "dark", "denim", "eggplant", "elephant", "espresso", "fuchsia",
    "gold", "granite", "grape", "graphite", "grass", "gray", "green", "grey", "heather", "indigo",
    "ivory", "ivy", "khaki", "lavender", "lemon", "leopard", "light", "lilac", "lime", "magenta",
    "maroon", "mauve", "merlot", "midnight", "mint", "mocha", "multicolor", "mushroom", "mustard",
    "natural", "navy", "nude", "olive", "orange", "peach", "pewter", "pink", "plum", "purple",
    "rainbow", "red", "rose", "royal", "rust", "sand", "sapphire", "seashell", "silver", "skull",
    "slate", "steel", "stone", "stonewash", "sunflower", "tan", "taupe", "teal", "tiger", "turquoise",
    "violet", "walnut", "wheat", "white", "wine", "yellow",
)
# fmt: on
assert len(COLOR_SET) == 102 and list(COLOR_SET) == sorted(set(COLOR_SET)), "COLOR_SET: 102 sorted words"

# thefuzz's ``ascii_only`` deletes the code points 128-255 (it does not fold accents).
_LATIN1 = {i: None for i in range(128, 256)}


def normalize_color(value: Any) -> Any:
    """The first ``COLOR_SET`` word ``in`` ``value``, else ``value`` unchanged.

    ``in`` is a substring test for strings and an element test for tuples, exactly like WebShop:
    synthetic goals pass ``(name, value)`` tuples, which normalise only when ``value`` *is* a
    colour word.

    Example:
        >>> normalize_color("navy blue"), normalize_color("z2-pink"), normalize_color("standard")
        ('blue', 'pink', 'tan')
        >>> normalize_color(("color", "black")), normalize_color(("size", "large"))
        ('black', ('size', 'large'))
    """
    try:
        for color in COLOR_SET:
            if color in value:
                return color
    except TypeError:  # not a container: nothing to normalise
        pass
    return value


def full_process(value: Any) -> str:
    """thefuzz's ``full_process(s, force_ascii=True)`` (non-strings go through ``str`` first)."""
    return default_process(str(value).translate(_LATIN1))


def token_set_ratio(a: Any, b: Any) -> int:
    """``thefuzz.fuzz.token_set_ratio(a, b)``: 0-100, processed strings, ``int(round(score))``.

    Example:
        >>> token_set_ratio("essential oil", "essential oils") > 85
        True
        >>> token_set_ratio("powder snow", "cool powder snow")
        100
    """
    if a is None or b is None:
        return 0
    return int(round(fuzz.token_set_ratio(full_process(a), full_process(b))))
