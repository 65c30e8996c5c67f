"""The code behind a result, shown beside it: what ran, with which parameters, where, and when.

``present(result, renderer)`` prints a figure or table followed by a collapsed panel holding

* the experiment's provenance: name, parameters, compute time, computed by this build or read from the cache,
  and the environment stamp;
* the source of the experiment function and of every function, class and value of the project it reaches
  (``code.reach``), as this process loaded them (never retyped): exactly what the result is keyed by, so the
  code shown is the code that produced it; the recipe code it uses in its own fold;
* one click further, the drawing code (with the page's helpers it draws with) and the checks behind the page's
  claims.

With ``REPO_URL`` set (for example ``https://github.com/<owner>/<repo>``) every source is linked to its file and
line range at ``REPO_REF`` (a commit, for links that keep pointing at the code that ran; default
``REPO_BRANCH``, else ``main``).

The panel is HTML (a Material ``details`` block with highlighted code) that a page names where it shows the result
(``{{ code_panel(result) }}``). Each panel records that the page showed the experiment; the site's MkDocs plugin fails the build
when a page runs an experiment whose code it never shows.
"""

from __future__ import annotations

import html
import inspect
import os
import re
from pathlib import Path
from typing import Any, Callable, Iterable

from pygments import highlight
from pygments.formatters import HtmlFormatter
from pygments.lexers import PythonLexer

from . import code, context, i18n, machines, render, store
from .cache import Experiment, Result
from .i18n import t


_FORMATTER = HtmlFormatter(cssclass="language-python highlight", wrapcode=True)
_LEXER = PythonLexer()


def _relative(path: str) -> str:
    try:
        return Path(path).resolve().relative_to(store.PROJECT_ROOT).as_posix()
    except ValueError:
        return Path(path).name


def _link(rel: str, first: int | None = None, last: int | None = None) -> str | None:
    repo = os.environ.get("REPO_URL", "").rstrip("/")
    if not repo:
        return None
    ref = os.environ.get("REPO_REF") or os.environ.get("REPO_BRANCH") or "main"
    anchor = f"#L{first}-L{last}" if first else ""
    return f"{repo}/blob/{ref}/{rel}{anchor}"


def _highlighted(source: str) -> str:
    """Pygments' HTML for ``source``, kept on disk by content: highlighting is most of a panel's cost."""
    import hashlib

    import pygments

    key = hashlib.sha256(f"{pygments.__version__}\0{source}".encode()).hexdigest()[:32]
    path = store.cache_dir().parent / "code" / f"{key}.html"
    try:
        return path.read_text(encoding="utf-8")
    except OSError:
        pass
    text = highlight(source, _LEXER, _FORMATTER)
    store.store_text(path, text)
    return text


def piece_block(piece: code.Piece) -> str:
    """The highlighted source of ``piece`` as this process loaded it, with its file, line range and, when
    ``REPO_URL`` is set, a link."""
    rel = _relative(piece.path)
    caption = (t("{file}, lines {first}–{last}", file=rel, first=piece.first, last=piece.last)
               if piece.last > piece.first else t("{file}, line {first}", file=rel, first=piece.first))
    url = _link(rel, piece.first, piece.last)
    if url:
        caption = f'<a href="{html.escape(url)}">{html.escape(caption)}</a>'
    else:
        caption = html.escape(caption)
    highlighted = _highlighted(piece.source)
    # Material's title bar for a code block: a span.filename before the <pre>.
    return highlighted.replace("<pre>", f'<span class="filename">{caption}</span><pre>', 1)


def source_block(obj: Any) -> str:
    """``piece_block`` of a function, class or experiment."""
    return piece_block(code.reach(obj.func if isinstance(obj, Experiment) else obj).root)


def _details(summary: str, body: str, *, kind: str = "note", experiment: str | None = None) -> str:
    # data-search-exclude: code is not prose; left in, it would triple the search index every page loads.
    data = f' data-experiment="{html.escape(experiment)}" data-search-exclude' if experiment else ""
    return f'<details class="{kind} pitfalls-code"{data}><summary>{summary}</summary>\n{body}\n</details>'



_LISTING = re.compile(r'<details class="(\w+) pitfalls-listing">\s*(<summary>.*?</summary>)\n?(.*?)</details>', flags=re.S)


def listings(page_html: str) -> str:
    """A page's collapsed listings (``??? example pitfalls-listing "snippets/recipe.py"`` around a code block)
    made into code panels, whose code ``defer`` moves out of the page: a whole recipe is hundreds of highlighted
    tokens that a phone would parse on every visit, for the few readers who open it. A listing holds no other
    panel."""

    def panel(match: re.Match) -> str:
        kind, summary, body = match.groups()
        if "<details" in body:
            raise ValueError(f"a pitfalls-listing panel holds another panel: {summary}")
        return (f'<details class="{kind} pitfalls-code pitfalls-listing" data-search-exclude>{summary}\n'
                f"{render.deferrable(body.strip())}\n</details>")

    return _LISTING.sub(panel, page_html)


def defer(page_html: str, folder: str) -> tuple[str, dict[str, str]]:
    """Move every code panel's sources out of a page: a page stays light however much code it shows.

    Each panel keeps its summary and provenance line; its sources become ``<folder><key>.html`` (``folder``: the
    URL of the site's code folder relative to the page, ending in ``/``), which ``assets/code-panels.js`` fetches
    into the panel when a reader opens it. Without JavaScript, or opened from disk, the panel links the file.
    Returns the page and ``{key: sources}``.
    """
    bodies: dict[str, str] = {}

    def replace(match: re.Match) -> str:
        key, body = match.group(1), match.group(2)
        bodies[key] = body
        url = html.escape(f"{folder}{key}.html")
        return (f'<div class="pitfalls-code__body" data-src="{url}"><p class="pitfalls-code__fallback">'
                + t('This loads here when the panel opens. <a href="{url}">Open it on its own page</a>.', url=url)
                + "</p></div>")

    return render.DEFERRABLE.sub(replace, page_html), bodies


def fragment_document(body: str, *, title: str, stylesheets: Iterable[str]) -> str:
    """A deferred panel's file: a page of its own (readable when opened directly) whose ``<main>`` the panel
    fetches."""
    links = "".join(f'<link rel="stylesheet" href="{html.escape(href)}">' for href in stylesheets)
    return (f'<!doctype html>\n<html lang="{i18n.language()}"><head><meta charset="utf-8">'
            f'<meta name="viewport" content="width=device-width,initial-scale=1">'
            f"<title>{html.escape(title)}</title>{links}<meta name=\"robots\" content=\"noindex\"></head>\n"
            f'<body><main class="md-content"><article class="md-content__inner md-typeset">'
            f"<h1>{html.escape(title)}</h1>\n{body}\n"
            f"</article></main></body></html>\n")


def _listed(pieces: Iterable[code.Piece]) -> str:
    return ", ".join(f"<code>{html.escape(p.qualname)}</code>" for p in pieces)


def _pieces_body(pieces: list[code.Piece]) -> str:
    """The sources of ``pieces``; those an earlier panel on this page printed are named instead."""
    build = context.current()
    printed = build.printed.setdefault(build.page, set()) if build.page else set()
    fresh = [p for p in pieces if p.qualname not in printed]
    seen = [p for p in pieces if p.qualname in printed]
    body = "\n".join(piece_block(p) for p in fresh)
    if seen:
        body += "\n<p>" + t("Shown in an earlier panel on this page: {names}.", names=_listed(seen)) + "</p>"
    printed.update(p.qualname for p in fresh)
    return body


def provenance_line(result: Result) -> str:
    params = ", ".join(f"{k}={v!r}" for k, v in result.params.items()) or t("no parameters")
    when = result.computed_at.replace("T", " ").removesuffix("+00:00") + (" UTC" if "+00:00" in result.computed_at else "")
    origin = (t("recorded on {label} (computed {when}), not yet measured on this machine", label=html.escape(
                  result.recorded_on), when=when) if not result.here
              else t("read from this machine's result cache (computed {when})", when=when) if result.cached
              else t("computed by this build"))
    return (f'<p class="pitfalls-provenance"><code>{html.escape(result.experiment)}'
            f"({html.escape(params)})</code> — "
            + t("took {seconds} s to compute, {origin}. Measured with {stamp}.", seconds=f"{result.elapsed_s:.1f}",
                origin=origin, stamp=html.escape(i18n.stamp(result.stamp))) + "</p>")


def code_panel(*results: Result, drawn_by: Callable | Iterable[Callable] | None = None,
               checks: Iterable[Callable] = ()) -> str:
    """The one collapsed panel of a section, with the code that measured each of ``results`` (see the module
    docstring): each result's provenance and sources, then the drawing code and the checks the section uses."""
    if not results:
        raise TypeError("code_panel() needs at least one Result returned by run()")
    for result in results:
        if not isinstance(result, Result) or result.exp is None:
            raise TypeError(f"code_panel() needs a Result returned by run(), got {type(result).__name__}")
    results = tuple({r.experiment: r for r in results}.values())  # a result named twice is shown once
    lines, parts = [], []
    for result in results:
        exp = result.exp
        context.current().showed(exp.name)
        reached = code.reach(exp.func)
        helpers = [p for p in reached.reached if not p.recipe]
        recipes = [p for p in reached.reached if p.recipe]
        lines.append(provenance_line(result))
        parts.append(piece_block(reached.root))
        if helpers:
            parts.append(_details(t("What it calls: {listed}", listed=_listed(helpers)), _pieces_body(helpers)))
        if recipes:
            parts.append(_details(t("Recipe code it uses: {listed}", listed=_listed(recipes)), _pieces_body(recipes)))
    parts.insert(1, "<p>" + t("This code and the code it uses, listed below, are what this result is keyed by: "
                              "changing any of it measures the result again at the next build; changing a comment, "
                              "a docstring or any other code does not.") + "</p>")
    drawers = [drawn_by] if callable(drawn_by) else list(drawn_by or [])
    for drawer in drawers:
        drawing = code.reach(drawer)
        # the page's own helpers it draws with (derive.py); the lab's generic drawing code is not repeated here
        own = [p for p in drawing.reached if p.module.startswith("snippets.experiments.")]
        parts.append(_details(t("Drawing code: {name}", name=f"<code>{html.escape(drawing.root.qualname)}</code>"),
                              piece_block(drawing.root) + ("\n" + _pieces_body(own) if own else "")))
    check_list = list(checks)
    if check_list:
        listed = ", ".join(f"<code>{html.escape(getattr(c, 'check_name', c.__name__))}</code>" for c in check_list)
        parts.append(_details(t("Checks behind the claims: {listed}", listed=listed),
                              "\n".join(source_block(inspect.unwrap(c)) for c in check_list)))
    for result in results:
        elsewhere = machines.compare(result, drawers)
        if elsewhere:
            parts.append(elsewhere)
    parts.append("<p>" + t("To measure it again on your machine: <code>REFRESH=timing make build</code> (timings) "
                           "or <code>REFRESH=1 make build</code> (everything), in a clone of the repository.") + "</p>")
    names = ", ".join(f"<code>{html.escape(r.experiment)}</code>" for r in results)
    summary = t("Code that measured this: {name}", name=names)
    body = "\n".join(lines) + "\n" + render.deferrable("\n".join(parts))
    return _details(summary, body, kind="example", experiment=" ".join(r.experiment for r in results)) + "\n"


def present(result: Result, renderer: Callable[[Result], str] | None = None, *,
            checks: Iterable[Callable] = ()) -> str:
    """``renderer(result)`` (a figure or table), then the code panel of ``result``."""
    shown = renderer(result) if renderer is not None else ""
    return f"{shown}\n{code_panel(result, drawn_by=renderer, checks=checks)}"
