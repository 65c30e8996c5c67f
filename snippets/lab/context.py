"""The build context: the one place that says which page, in which language, is being built, and that holds what
the build collects on the way (the experiments each page ran and showed, its claims, the translations it lacked).

The site's MkDocs plugin makes a fresh :class:`Build` for every build (``begin``) and names the page it renders
(``Build.page``, ``Build.language``); the lab reads it through :func:`current`. It is passed down as a
:class:`contextvars.ContextVar`, as :mod:`decimal` passes its context: the code of a page calls the lab without
naming the build, and a block under :func:`using` (a test, a second build) sees its own build and leaves the
caller's as it was, in its thread. Outside a build — a test, an experiment run from the command line —
:func:`current` is a build of no page, in English, that raises a contradicted claim at once (a fresh one for
each thread and each purge of the lab). Nothing else in the lab keeps state between two calls, except what it
derives by content (a function's reach, a parsed stylesheet), which is the same in every build.

This module imports nothing of the lab: every layer above it may read it.
"""

from __future__ import annotations

import contextlib
import contextvars
from dataclasses import dataclass, field
from typing import Any, Iterator

DEFAULT_LANGUAGE = "en"


@dataclass
class Build:
    """One build's state: where it is, and what it collected."""

    # where the build is
    page: str | None = None  # the page being rendered, ``docs/``-relative (``zh/loader-overhead.md``)
    language: str = DEFAULT_LANGUAGE  # the language of that page
    # a contradicted claim is collected (the plugin fails the build once, after every language), not raised
    collect_contradictions: bool = False
    # what it collected
    ran: dict[str, set[str]] = field(default_factory=dict)  # {page: experiments it ran}
    shown: dict[str, set[str]] = field(default_factory=dict)  # {page: experiments whose code it showed}
    printed: dict[str, set[str]] = field(default_factory=dict)  # {page: helpers whose source a panel printed}
    claims: dict[str | None, int] = field(default_factory=dict)  # {page: claims written, numbering their tips}
    contradicted: list[dict[str, Any]] = field(default_factory=list)
    # every claim said, with its verdict here and on this machine's other releases (the Versions page's matrix)
    said: list[dict[str, Any]] = field(default_factory=list)
    missing: dict[tuple[str, str], set[str]] = field(default_factory=dict)  # {(language, text): pages}
    twice: dict[tuple[str, str], set[str]] = field(default_factory=dict)  # translations translated again
    used: set[str] = field(default_factory=set)  # the catalogue keys this build's texts matched
    # REFRESH: keys this process re-ran already (carried from one build to the next under mkdocs serve)
    refreshed: set[str] = field(default_factory=set)
    # keys measured by cache.prefetch() in this build before its pages ran (their pages show them as fresh)
    measured_before_pages: set[str] = field(default_factory=set)
    # experiments whose results the pages show from a recording while make serve measures them (store.deferred)
    pending: dict[str | None, dict[str, float]] = field(default_factory=dict)  # {page: {experiment: its seconds}}
    # the site's Markdown extensions, to draw recorded machines' tables like the page's (set by the plugin)
    markdown: tuple[list, dict] = (["tables", "admonition", "attr_list", "md_in_html"], {})
    tab_sets: int = 0  # content-tab groups made so far (their ids)
    # {page: the values measured on a busy or drifting machine}: the page's one note on it (render.noise_warning)
    conditions: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    # {page: the environment stamp its In short names}: tables measured there need no stamp of their own
    stamps: dict[str, str] = field(default_factory=dict)
    titles: dict[str, str] = field(default_factory=dict)  # {page: its title, in its language (the navigation's)}
    # the code panels' highlighted sources, moved out of the pages ({key: HTML}): the plugin writes them under code/
    code: dict[str, str] = field(default_factory=dict)
    aside: dict[str, dict[str, str]] = field(default_factory=dict)  # {page: {token: finished HTML}} (set_aside)
    # what went wrong on each page ({page: [message]}; "" outside a page): the plugin stops the build at that page
    failures: dict[str, list[str]] = field(default_factory=dict)

    def ran_on(self, name: str) -> None:
        if self.page:
            self.ran.setdefault(self.page, set()).add(name)

    def showed(self, name: str) -> None:
        if self.page:
            self.shown.setdefault(self.page, set()).add(name)


_current: contextvars.ContextVar[Build | None] = contextvars.ContextVar("pitfalls_build", default=None)


def current() -> Build:
    """The build being made (or, outside one, a build of no page)."""
    build = _current.get()
    return build if build is not None else begin()


def end() -> None:
    """Let go of the current build. A purge of the lab (``make serve``'s rebuild) imports this module again, with a
    variable of its own: the thread's context would otherwise keep the last build, under a variable nobody reads."""
    _current.set(None)


def begin(build: Build | None = None) -> Build:
    """Make ``build`` (a fresh one by default) the current build, and return it."""
    build = build if build is not None else Build()
    _current.set(build)
    return build


@contextlib.contextmanager
def using(build: Build | None = None) -> Iterator[Build]:
    """``with using() as build:`` — a build of its own for the block; the one before it afterwards."""
    build = build if build is not None else Build()
    token = _current.set(build)
    try:
        yield build
    finally:
        _current.reset(token)
