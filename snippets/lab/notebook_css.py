"""MkDocs hook: a notebook page carries only the part of JupyterLab's stylesheet that can style it.

mkdocs-jupyter writes JupyterLab's whole stylesheet into every notebook page, in ``<style>`` elements: about
570 KB for every widget, icon and theme of JupyterLab, of which a page of code cells and outputs uses a few
per cent. A phone downloads it, parses it and matches each element of the page against every rule before it
can respond. Of those ``<style>`` elements this hook keeps:

* a rule's selectors that can match in this page: every class a selector names occurs in the page (in an
  element's ``class``, in an inline script, or is one of Material's ``md-*`` classes, which Material's
  JavaScript adds), and it puts no ``:root``, ``html`` or ``body`` inside another element;
* the custom properties (``--name``) that something reads with ``var(--name)``: a kept rule, a kept property,
  the page itself or one of the site's own stylesheets (the theme's and ``extra_css``);
* ``@keyframes`` that a kept rule names, and ``@media`` / ``@supports`` blocks with what they keep.

A dropped rule matches no element of the page and a dropped property is read by nothing, so the page looks
the same; the browser tests check it in both palettes. Pages without a notebook are left alone.
"""

from __future__ import annotations

import functools
import re
from collections import namedtuple
from html.parser import HTMLParser
from pathlib import Path

import tinycss2

_STYLE = re.compile(r'(<style type="text/css">)(.*?)(</style>)', re.S)
_VAR = re.compile(r"var\(\s*(--[A-Za-z0-9_-]+)")
_NEVER_INSIDE = {"html", "body"}


class _Classes(HTMLParser):
    """Every class an element of the page carries, and every word of its inline scripts."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.names: set[str] = set()
        self._script = False

    def handle_starttag(self, tag, attrs):
        for name, value in attrs:
            if name == "class" and value:
                self.names.update(value.split())
        self._script = tag == "script"

    def handle_endtag(self, tag):
        self._script = False

    def handle_data(self, data):
        if self._script:
            self.names.update(re.findall(r"[A-Za-z_][\w-]*", data))


def on_page_content(html, page, config, **kwargs):
    if 'class="jupyter-wrapper"' not in html:
        return html
    return _pruned(html, site_references(config))


def site_references(config) -> frozenset[str]:  # noqa: ANN001 - a MkDocs config
    """The custom properties the site's own stylesheets read (the theme's and ``extra_css``): never dropped."""
    sheets = [sheet for folder in config.theme.dirs for sheet in Path(folder).rglob("*.css")]
    sheets += [Path(config.docs_dir) / str(sheet) for sheet in config.extra_css]
    return _references(tuple((str(sheet), sheet.stat().st_mtime_ns) for sheet in sheets if sheet.is_file()))


@functools.lru_cache(maxsize=4)  # by the sheets' paths and times: read again when one changes (make serve)
def _references(sheets: tuple[tuple[str, int], ...]) -> frozenset[str]:
    return frozenset(name for path, _ in sheets
                     for name in _VAR.findall(Path(path).read_text(encoding="utf-8", errors="replace")))


@functools.lru_cache(maxsize=8)  # a rebuild (make serve) meets the same notebook pages again: pruned once each
def _pruned(html: str, references: frozenset[str]) -> str:
    return prune_notebook_styles(html, references=references)


def prune_notebook_styles(html: str, *, references: set[str] = frozenset()) -> str:
    """``html`` with each ``<style type="text/css">`` element cut down to what can style this page."""
    classes = _Classes()
    classes.feed(_STYLE.sub("", html))
    classes.close()
    present = classes.names
    sheets = [match.group(2) for match in _STYLE.finditer(html)]
    kept_rules = [_keep_rules(_parse(sheet), present) for sheet in sheets]
    used = set(references) | set(_VAR.findall(_STYLE.sub("", html)))
    declarations = [decl for rules in kept_rules for decl in _declarations(rules)]
    for decl in declarations:
        if not decl.name.startswith("--"):
            used.update(_VAR.findall(_serialize(decl.value)))
    grew = True
    while grew:  # properties that read other properties
        before = len(used)
        for decl in declarations:
            if decl.name in used:
                used.update(_VAR.findall(_serialize(decl.value)))
        grew = len(used) > before
    pruned = iter(_write(rules, used) for rules in kept_rules)
    return _STYLE.sub(lambda match: match.group(1) + next(pruned) + match.group(3), html)


@functools.lru_cache(maxsize=8)  # every notebook page carries the same stylesheets (nothing mutates them)
def _parse(css: str) -> list:
    return tinycss2.parse_stylesheet(css, skip_comments=True, skip_whitespace=True)


def _serialize(tokens) -> str:
    return tinycss2.serialize(tokens).strip()


def _selectors(prelude: list) -> list[list]:
    """A rule's selector list, split at its top-level commas."""
    selectors, current = [], []
    for token in prelude:
        if token.type == "literal" and token.value == ",":
            selectors.append(current)
            current = []
        else:
            current.append(token)
    selectors.append(current)
    return selectors


def _can_match(selector: list, present: set[str]) -> bool:
    compound = 0  # how many combinators came before this token
    previous = None
    for token in selector:
        if token.type == "whitespace" or (token.type == "literal" and token.value in (">", "+", "~")):
            if previous is not None and previous.type != "whitespace":
                compound += 1
        elif token.type == "ident" and previous is not None and previous.type == "literal" \
                and previous.value == ".":
            if token.value not in present and not token.value.startswith("md-"):
                return False
        elif token.type == "ident" and compound > 0:
            after_colon = previous is not None and previous.type == "literal" and previous.value == ":"
            if (after_colon and token.lower_value == "root") or \
                    (not after_colon and token.lower_value in _NEVER_INSIDE
                     and not (previous is not None and previous.type == "literal" and previous.value in ".#")):
                return False  # :root, <html> and <body> are inside no other element
        previous = token
    return True


_Rule = namedtuple("_Rule", "selectors declarations")  # a rule kept: its selectors that can match
_Block = namedtuple("_Block", "keyword prelude rules")  # an @media or @supports block, with the rules it keeps


def _keep_rules(rules: list, present: set[str]) -> list:
    kept = []
    for rule in rules:
        if rule.type == "qualified-rule":
            selectors = [s for s in _selectors(rule.prelude) if _can_match(s, present)]
            if selectors:
                declarations = [d for d in tinycss2.parse_declaration_list(rule.content, skip_comments=True,
                                                                           skip_whitespace=True)
                                if d.type == "declaration"]
                kept.append(_Rule([_serialize(s) for s in selectors], declarations))
        elif rule.type == "at-rule" and rule.lower_at_keyword in ("media", "supports") and rule.content is not None:
            inner = _keep_rules(tinycss2.parse_rule_list(rule.content, skip_comments=True, skip_whitespace=True),
                                present)
            if inner:
                kept.append(_Block(rule.lower_at_keyword, _serialize(rule.prelude), inner))
        elif rule.type == "at-rule" and rule.lower_at_keyword == "charset":
            continue  # meaningless inside a <style> element
        elif rule.type == "at-rule":
            kept.append(rule)
    return kept


def _declarations(rules: list):
    for rule in rules:
        if isinstance(rule, _Rule):
            yield from rule.declarations
        elif isinstance(rule, _Block):
            yield from _declarations(rule.rules)


def _write(rules: list, used: set[str], names: set[str] | None = None) -> str:
    if names is None:  # the words the kept declarations use: a @keyframes nobody names goes
        names = {word for decl in _declarations(rules) if not decl.name.startswith("--") or decl.name in used
                 for word in re.findall(r"[\w-]+", _serialize(decl.value))}
    out = []
    for rule in rules:
        if isinstance(rule, _Rule):
            body = ";".join(f"{d.name}:{_serialize(d.value)}{' !important' if d.important else ''}"
                            for d in rule.declarations if not d.name.startswith("--") or d.name in used)
            if body:
                out.append(",".join(rule.selectors) + "{" + body + "}")
        elif isinstance(rule, _Block):
            inner = _write(rule.rules, used, names)
            if inner:
                out.append(f"@{rule.keyword} {rule.prelude}{{{inner}}}")
        elif rule.lower_at_keyword == "keyframes" and _serialize(rule.prelude) not in names:
            continue
        else:
            out.append(_serialize([rule]))
    return "".join(out)
