"""Griffe extension used by ``mkdocs.yml``: a Google-style ``Example:`` section reads as ``Examples:``.

The project's docstrings title their doctest blocks ``Example:`` (one example, as Gymnasium does).
Griffe's Google parser knows only the plural, and would render the singular as an admonition of
Markdown text, where ``>>>`` becomes a block quote and ``[0.404, 0.596]`` an unresolved
cross-reference. This extension renames the title before the docstring is parsed, so the block is
rendered as code.

Example:
    >>> import griffe
    >>> obj = griffe.Function("f", docstring=griffe.Docstring("Do.\\n\\nExample:\\n    >>> 1\\n    1"))
    >>> ExampleSections().on_object(obj=obj, loader=None)
    >>> obj.docstring.value.splitlines()[2]
    'Examples:'
"""

from __future__ import annotations

import re
from typing import Any

import griffe

_TITLE = re.compile(r"^([ \t]*)Example:[ \t]*$", re.MULTILINE)


class ExampleSections(griffe.Extension):
    """Renames ``Example:`` section titles to ``Examples:`` in every docstring."""

    def on_object(self, *, obj: griffe.Object, loader: Any, **kwargs: Any) -> None:
        if obj.docstring is not None:
            obj.docstring.value = _TITLE.sub(r"\1Examples:", obj.docstring.value)
