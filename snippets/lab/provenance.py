"""The code behind a result, shown beside it: what ran, with which parameters, where, and when.

``present(result, renderer)`` prints a figure or table followed by a collapsed panel holding

* the experiment's provenance: name, parameters, compute time, computed by this build or read from the cache,
  and the environment stamp;
* the source of the experiment function, read from the file that ran (never retyped), and of the helpers it
  calls that decide what is measured — the functions and classes of ``snippets.experiments`` and the lab's
  timing helper that it refers to, transitively; the recipes it uses are named with a link;
* one click further, the drawing code and the checks behind the page's claims.

With ``REPO_URL`` set (for example ``https://github.com/<owner>/<repo>``) every source is linked to its file and
line range at ``REPO_REF`` (a commit, for links that keep pointing at the code that ran; default
``REPO_BRANCH``, else ``main``).

The panel is HTML (a Material ``details`` block with highlighted code), so it works in Markdown and in HTML
exec blocks alike. Each panel records that the page showed the experiment; the MkDocs hook fails the build
when a page runs an experiment whose code it never shows.
"""

from __future__ import annotations

import html
import inspect
import os
import re
import types
from pathlib import Path
from typing import Any, Callable, Iterable

from pygments import highlight
from pygments.formatters import HtmlFormatter
from pygments.lexers import PythonLexer

from . import cache, i18n
from .cache import Experiment, Result
from .i18n import t

RECIPES = ("snippets.seeding", "snippets.tensor_loader", "snippets.step_budget")
# Modules whose functions decide what is measured: the page packages, the question's setup, the timing helper.
MEASURING_PREFIXES = ("snippets.experiments.", "snippets.lab.timing")
# Experiments whose code each page showed in this build ({page: {name}}).
shown_on_page: dict[str, set[str]] = {}
# Helpers whose source a page already printed ({page: {qualified name}}): shown once per page, then named.
_helpers_on_page: dict[str, set[str]] = {}

_FORMATTER = HtmlFormatter(cssclass="language-python highlight", wrapcode=True)
_LEXER = PythonLexer()


def _names(code: types.CodeType) -> set[str]:
    """Every global or attribute name a function's code (and the functions nested in it) refers to."""
    names = set(code.co_names)
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            names |= _names(const)
    return names


def _measuring(obj: Any) -> bool:
    module = getattr(obj, "__module__", "") or ""
    return (inspect.isfunction(obj) or inspect.isclass(obj)) and module.startswith(MEASURING_PREFIXES) \
        and not module.endswith((".figures", ".checks"))


def _code_of(obj: Any) -> list[types.CodeType]:
    if inspect.isfunction(obj):
        return [obj.__code__]
    if inspect.isclass(obj):
        return [v.__code__ for v in vars(obj).values() if inspect.isfunction(v)]
    return []


# helpers() by function: each language's pages show the same experiments' panels (a pure function of the code).
_helpers: dict[Callable, tuple[list[Any], list[Any]]] = {}


def helpers(func: Callable) -> tuple[list[Any], list[Any]]:
    """What ``func`` calls that decides what is measured, and the recipes it uses, in order of first use."""
    if func not in _helpers:
        _helpers[func] = _find_helpers(func)
    found, recipes = _helpers[func]
    return list(found), list(recipes)


def _find_helpers(func: Callable) -> tuple[list[Any], list[Any]]:
    found: list[Any] = []
    recipes: list[Any] = []
    queue: list[Any] = [func]
    while queue:
        current = queue.pop(0)
        namespace = getattr(current, "__globals__", None)
        if namespace is None:
            namespace = vars(inspect.getmodule(current)) if inspect.getmodule(current) else {}
        for code in _code_of(current):
            names = _names(code)
            candidates = [namespace.get(name) for name in sorted(names)]
            # Attributes of modules it refers to (``question.make_data``).
            for value in list(candidates):
                if isinstance(value, types.ModuleType):
                    candidates += [getattr(value, name, None) for name in sorted(names)]
            for value in candidates:
                if isinstance(value, Experiment):
                    value = value.func
                if value is None or value is func or value in found or value in recipes:
                    continue
                if getattr(value, "__module__", None) in RECIPES and (inspect.isfunction(value) or
                                                                      inspect.isclass(value)):
                    recipes.append(value)
                elif _measuring(value):
                    found.append(value)
                    queue.append(value)
    return found, recipes


def _relative(path: str) -> str:
    try:
        return Path(path).resolve().relative_to(cache.PROJECT_ROOT).as_posix()
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
    path = cache.cache_dir().parent / "code" / f"{key}.html"
    try:
        return path.read_text(encoding="utf-8")
    except OSError:
        pass
    text = highlight(source, _LEXER, _FORMATTER)
    cache.store_text(path, text)
    return text


def source_block(obj: Any) -> str:
    """The highlighted source of ``obj`` with its file, line range and, when ``REPO_URL`` is set, a link."""
    target = obj.func if isinstance(obj, Experiment) else obj
    lines, first = inspect.getsourcelines(target)
    last = first + len(lines) - 1
    rel = _relative(inspect.getsourcefile(target) or "")
    caption = f"{rel}, lines {first}–{last}"
    url = _link(rel, first, last)
    if url:
        caption = f'<a href="{html.escape(url)}">{html.escape(caption)}</a>'
    else:
        caption = html.escape(caption)
    code = _highlighted("".join(lines))
    # Material's title bar for a code block: a span.filename before the <pre>.
    return code.replace("<pre>", f'<span class="filename">{caption}</span><pre>', 1)


def _details(summary: str, body: str, *, kind: str = "note", experiment: str | None = None) -> str:
    # data-search-exclude: code is not prose; left in, it would triple the search index every page loads.
    data = f' data-experiment="{html.escape(experiment)}" data-search-exclude' if experiment else ""
    return f'<details class="{kind} pitfalls-code"{data}><summary>{summary}</summary>\n{body}\n</details>'



def _deferrable(body: str) -> str:
    """``body`` marked so that a site build can move it into its own file (see ``defer``)."""
    import hashlib

    key = hashlib.sha256(body.encode()).hexdigest()[:16]
    return f'<div class="pitfalls-code__body" data-key="{key}">\n{body}\n</div><!--/pitfalls-code {key}-->'


_DEFERRABLE = re.compile(r'<div class="pitfalls-code__body" data-key="(\w+)">\n(.*?)\n</div><!--/pitfalls-code \1-->',
                         flags=re.S)


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
                f"{_deferrable(body.strip())}\n</details>")

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

    return _DEFERRABLE.sub(replace, page_html), bodies


def fragment_document(body: str, *, title: str, stylesheets: Iterable[str]) -> str:
    """A deferred panel's file: a page of its own (readable when opened directly) whose ``<main>`` the panel
    fetches."""
    links = "".join(f'<link rel="stylesheet" href="{html.escape(href)}">' for href in stylesheets)
    return (f'<!doctype html>\n<html lang="{i18n.language}"><head><meta charset="utf-8">'
            f'<meta name="viewport" content="width=device-width,initial-scale=1">'
            f"<title>{html.escape(title)}</title>{links}<meta name=\"robots\" content=\"noindex\"></head>\n"
            f'<body><main class="md-content"><article class="md-content__inner md-typeset">'
            f"<h1>{html.escape(title)}</h1>\n{body}\n"
            f"</article></main></body></html>\n")


def _qualname(obj: Any) -> str:
    module = obj.__module__.removeprefix("snippets.experiments.").removeprefix("snippets.")
    return f"{module}.{obj.__qualname__}"


def provenance_line(result: Result) -> str:
    params = ", ".join(f"{k}={v!r}" for k, v in result.params.items()) or t("no parameters")
    when = result.computed_at.replace("T", " ").removesuffix("+00:00") + (" UTC" if "+00:00" in result.computed_at else "")
    origin = (t("read from this machine's result cache (computed {when})", when=when) if result.cached
              else t("computed by this build"))
    return (f'<p class="pitfalls-provenance"><code>{html.escape(result.experiment)}'
            f"({html.escape(params)})</code> — "
            + t("took {seconds} s to compute, {origin}. Measured with {stamp}.", seconds=f"{result.elapsed_s:.1f}",
                origin=origin, stamp=html.escape(i18n.stamp(result.stamp))) + "</p>")


def code_panel(result: Result, *, drawn_by: Callable | Iterable[Callable] | None = None,
               checks: Iterable[Callable] = ()) -> str:
    """The collapsed panel with the code that measured ``result`` (see the module docstring)."""
    if not isinstance(result, Result) or result.exp is None:
        raise TypeError(f"code_panel() needs a Result returned by run(), got {type(result).__name__}")
    exp = result.exp
    if cache.current_page:
        shown_on_page.setdefault(cache.current_page, set()).add(exp.name)
    found, recipes = helpers(exp.func)
    parts = [provenance_line(result), source_block(exp)]
    if recipes:
        names = ", ".join(f"<code>{html.escape(r.__name__)}</code> ({html.escape(_relative(inspect.getsourcefile(r)))})"
                          for r in recipes)
        parts.append("<p>" + t("It uses the recipe code {names}, shown in full on its page.", names=names) + "</p>")
    if found:
        listed = ", ".join(f"<code>{html.escape(_qualname(h))}</code>" for h in found)
        printed = _helpers_on_page.setdefault(cache.current_page, set()) if cache.current_page else set()
        fresh = [h for h in found if _qualname(h) not in printed]
        seen = [h for h in found if _qualname(h) in printed]
        body = "\n".join(source_block(h) for h in fresh)
        if seen:
            names = ", ".join(f"<code>{html.escape(_qualname(h))}</code>" for h in seen)
            body += "\n<p>" + t("Shown in an earlier panel on this page: {names}.", names=names) + "</p>"
        printed.update(_qualname(h) for h in fresh)
        parts.append(_details(t("What it calls: {listed}", listed=listed), body))
    drawers = [drawn_by] if callable(drawn_by) else list(drawn_by or [])
    for drawer in drawers:
        parts.append(_details(t("Drawing code: {name}", name=f"<code>{html.escape(_qualname(drawer))}</code>"),
                              source_block(drawer)))
    check_list = list(checks)
    if check_list:
        listed = ", ".join(f"<code>{html.escape(getattr(c, 'check_name', c.__name__))}</code>" for c in check_list)
        parts.append(_details(t("Checks behind the claims: {listed}", listed=listed),
                              "\n".join(source_block(inspect.unwrap(c)) for c in check_list)))
    summary = t("Code that measured this: {name}", name=f"<code>{html.escape(exp.name)}</code>")
    from . import machines

    return machines.compare(result, drawers) + "\n" + _details(summary, parts[0] + "\n" + _deferrable("\n".join(parts[1:])), kind="example",
                            experiment=exp.name) + "\n"


def present(result: Result, renderer: Callable[[Result], str] | None = None, *,
            checks: Iterable[Callable] = ()) -> str:
    """``renderer(result)`` (a figure or table), then the code panel of ``result``."""
    shown = renderer(result) if renderer is not None else ""
    return f"{shown}\n{code_panel(result, drawn_by=renderer, checks=checks)}"
