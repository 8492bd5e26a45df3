"""Page state and rendering: WebShop's search, results, item, sub-pages and done page.

* ``PageState`` - where the browser is: page kind, keywords, result page, item, options, visited ASINs.
* ``segments`` - the visible strings of a page with their kind (text, button, option, product link).
* ``render`` - a page in one of the observation modes: ``text`` (upstream's ``[SEP]`` format, exact),
  ``text_rich`` (``[button]`` markup), ``url`` (the simulated site's URL) and ``html``.
* ``clickables`` - upstream's ``available_actions["clickables"]`` for a page, lower-cased.
* ``click_actions`` - the ``allowed_actions`` of a page from its ``available_actions``: ``click[...]``
  strings, or ``None`` where a search bar takes free text.

Pages are rendered straight from state (no HTML round trip), which is what makes steps cheap.
Search, results, item and sub-pages match upstream's text strings; the done page is shortened
(upstream also prints an MTurk code and the goal's details) but ends, as upstream's does, with
``Your score (min 0.0, max 1.0) [SEP] <reward>``.
"""

from __future__ import annotations

import html as html_lib
import json
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote

__all__ = ["PAGE_SIZE", "OBSERVATION_MODES", "PageState", "clickables", "click_actions", "option_name_of_click",
           "render", "segments"]

PAGE_SIZE = 10
OBSERVATION_MODES = ("text", "text_rich", "url", "html")
SUB_PAGES = ("description", "features", "reviews")
_BASE_URL = "http://127.0.0.1:3000"


@dataclass
class PageState:
    """The browser state of one session."""

    page: str = "search"  # search | results | item | sub | done
    keywords: list[str] = field(default_factory=list)
    results: list[str] = field(default_factory=list)
    page_num: int = 1
    asin: str | None = None
    sub_page: str | None = None
    options: dict[str, str] = field(default_factory=dict)
    visited: set[str] = field(default_factory=set)
    reward: float | None = None

    def copy(self) -> PageState:
        return PageState(
            self.page,
            list(self.keywords),
            list(self.results),
            self.page_num,
            self.asin,
            self.sub_page,
            dict(self.options),
            set(self.visited),
            self.reward,
        )

    def page_results(self) -> list[str]:
        start = (self.page_num - 1) * PAGE_SIZE
        return self.results[start : start + PAGE_SIZE]


def segments(
    state: PageState, instruction: str, products: dict[str, dict[str, Any]]
) -> list[tuple[str, str]]:
    """``[(text, kind), ...]`` with kind in ``text``, ``instruction``, ``button``, ``option``, ``product``."""
    head = [("Instruction:", "text"), (instruction, "instruction")]
    if state.page == "search":
        return [("WebShop", "text"), *head, ("Search", "button")]
    if state.page == "results":
        out = [
            *head,
            ("Back to Search", "button"),
            (f"Page {state.page_num} (Total results: {len(state.results)})", "text"),
        ]
        if state.page_num > 1:
            out.append(("< Prev", "button"))
        out.append(("Next >", "button"))
        for asin in state.page_results():
            p = products[asin]
            out += [(asin, "product"), (p["Title"], "text"), (p["Price"], "text")]
        return out
    product = products[state.asin]
    nav = [*head, ("Back to Search", "button"), ("< Prev", "button")]
    if state.page == "item":
        out = list(nav)
        for name, values in product["options"].items():
            out.append((name, "text"))
            out += [(v, "option") for v in values]
        out += [
            (product["Title"], "text"),
            (f"Price: {product['Price']}", "text"),
            (f"Rating: {product['Rating']}", "text"),
            ("Description", "button"),
            ("Features", "button"),
            ("Reviews", "button"),
            ("Buy Now", "button"),
        ]
        return out
    if state.page == "sub":
        if state.sub_page == "description":
            body = [product["Description"]]
        elif state.sub_page == "features":
            body = list(product["BulletPoints"])
        elif state.sub_page == "attributes":
            body = list(product["Attributes"])
        else:
            body = [
                str(x)
                for r in product["Reviews"]
                for x in (r.get("score", ""), r.get("title", ""), r.get("body", ""))
            ]
        return nav + [(t, "text") for t in body if t]
    # done
    return [
        ("Thank you for shopping with us!", "text"),
        ("Purchased", "text"),
        ("asin", "text"),
        (state.asin or "", "text"),
        ("options", "text"),
        (json.dumps(state.options), "text"),
        ("Your score (min 0.0, max 1.0)", "text"),
        (str(state.reward), "text"),
    ]


def option_name_of_click(options: dict[str, list[str]], value: str) -> str | None:
    """The option name a click on ``value`` is stored under, or None if no option offers it.

    WebShop's text env selects the *last* option button on the page with that value, so when Color
    and Pattern Name both offer "black", the click sets Pattern Name.

    Example:
        >>> option_name_of_click({"Color": ["black", "white"], "Pattern Name": ["black"]}, "black")
        'Pattern Name'
    """
    chosen = None
    for name, values in options.items():
        if value in values:
            chosen = name
    return chosen


def clickables(state: PageState, products: dict[str, dict[str, Any]]) -> list[str]:
    """The lower-cased clickable names of the page, in upstream's order."""
    if state.page == "search":
        return ["search"]
    if state.page == "results":
        out = ["back to search"] + (["< prev"] if state.page_num > 1 else []) + ["next >"]
        return out + [a.lower() for a in state.page_results()]
    if state.page == "item":
        values = [v for vs in products[state.asin]["options"].values() for v in vs]
        return ["back to search", "< prev", *SUB_PAGES, "buy now", *values]
    if state.page == "sub":
        return ["back to search", "< prev"]
    return []


def click_actions(available: dict[str, Any]) -> list[str] | None:
    """``info["allowed_actions"]`` of a page from its ``available_actions`` (``{"has_search_bar", "clickables"}``).

    ``click[<c>]`` for each clickable of a page without a search bar (an empty list on the done page:
    nothing more is accepted); ``None`` on a page with one, whose search text is free.

    Example:
        >>> click_actions({"has_search_bar": False, "clickables": ["back to search", "next >"]})
        ['click[back to search]', 'click[next >]']
        >>> click_actions({"has_search_bar": True, "clickables": ["search"]}) is None
        True
    """
    if available.get("has_search_bar", True):
        return None
    return [f"click[{c}]" for c in available.get("clickables", [])]


def _url(state: PageState, session: str) -> str:
    kw = quote(str(state.keywords), safe="")
    opts = quote(json.dumps(state.options), safe="")
    sid = quote(session, safe="")
    if state.page == "search":
        return f"{_BASE_URL}/{sid}"
    if state.page == "results":
        return f"{_BASE_URL}/search_results/{sid}/{kw}/{state.page_num}"
    if state.page == "item":
        return f"{_BASE_URL}/item_page/{sid}/{state.asin}/{kw}/{state.page_num}/{opts}"
    if state.page == "sub":
        return f"{_BASE_URL}/item_sub_page/{sid}/{state.asin}/{kw}/{state.page_num}/{state.sub_page}/{opts}"
    return f"{_BASE_URL}/done/{sid}/{state.asin}/{opts}"


def _text_rich(state: PageState, segs: list[tuple[str, str]]) -> str:
    chosen = set(state.options.values())
    prefix, body = "", ""
    for text, kind in segs:
        if kind == "button":
            piece = f"[button] {text} [button_]"
        elif kind == "option":
            if text in chosen:
                piece = f"  [clicked button] {text} [clicked button_]"
                prefix = f"You have clicked {text}.\n" + prefix
            else:
                piece = f"  [button] {text} [button_]"
        elif kind == "product":
            tag = "clicked button" if text in state.visited else "button"
            piece = f"\n[{tag}] {text} [{tag}_]"
        else:
            piece = f"\n{text}"
        body += piece + "\n"
    return prefix + body


def _html(state: PageState, segs: list[tuple[str, str]]) -> str:
    chosen = set(state.options.values())
    rows = []
    for text, kind in segs:
        t = html_lib.escape(text)
        if kind == "button":
            rows.append(f'<button class="btn" type="submit">{t}</button>')
        elif kind == "option":
            checked = " checked" if text in chosen else ""
            rows.append(f'<input type="radio" name="option" value="{t}"{checked}><label>{t}</label>')
        elif kind == "product":
            rows.append(f'<a class="product-link">{t}</a>')
        elif kind == "instruction":
            rows.append(f'<div id="instruction-text"><h4>{t}</h4></div>')
        else:
            rows.append(f"<p>{t}</p>")
    search = '<input id="search_input" name="search_query" type="text">' if state.page == "search" else ""
    return f"<html><body><form>{search}{''.join(rows)}</form></body></html>"


def render(
    state: PageState,
    instruction: str,
    products: dict[str, dict[str, Any]],
    mode: str = "text",
    session: str = "fixed_0",
) -> str:
    """The observation of ``state`` in ``mode``."""
    if mode == "url":
        return _url(state, session)
    segs = segments(state, instruction, products)
    if mode == "text":
        return " [SEP] ".join(text for text, _ in segs)
    if mode == "text_rich":
        return _text_rich(state, segs)
    return _html(state, segs)
