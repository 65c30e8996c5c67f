"""The site's MkDocs plugin (``Pitfalls``, ``plugins: [pitfalls]`` in mkdocs.yml): tells the lab which page is
rendering, keys the notebook cache to this machine, and makes ``mkdocs serve`` rebuild with the code as it is now.
What it keeps from one build to the next is the plugin's (MkDocs keeps the plugin for every rebuild of one
``mkdocs serve``); what one build collects is that build's ``context.Build``.

* A failure is the plugin's own to detect, whatever the log flags: an exec block that exits with errors
  (markdown-exec's warning, which the plugin hears even under ``-q``), a page that runs an experiment without
  showing its code, a missing translation, a missing executed notebook or a missing CJK font stops the build
  with a ``PluginError`` naming the page and the block, before the page (and the search index) is written.
  ``mkdocs build --strict`` alone would not: with ``-q`` or ``-v`` its warning counter sees nothing
  (mkdocs#4126, #3991), and the traceback would be published inside the page.
* mkdocs-jupyter caches executed notebooks by their content only; here its cache folder also carries the
  environment fingerprint, so a notebook's printed losses are never another machine's. ``REFRESH=1``
  turns that cache off for the first build of the process (a later rebuild under ``mkdocs serve`` reuses
  what that build executed, as the result cache does).
* Notebooks are executed once (nbclient) and the executed ``.ipynb`` is kept beside mkdocs-jupyter's cache and
  published next to the page and its ``.py`` source. The recipes are published under ``recipes/``.
* A page that runs an experiment without showing its code (``snippets.lab.present`` / ``code_panel``) is a
  warning, so the strict build fails.
* A page is prose with named values (front matter ``names: true``): the plugin renders its ``{{ … }}`` with Jinja2
  (``render_names``), naming its topic's modules and the lab's functions (``page_names``), in this process, where
  ``import snippets…`` is served from ``sys.modules``. Under ``mkdocs serve`` every rebuild after the first drops
  the ``snippets`` modules, and the recipes imported by their bare names, so an edited experiment, renderer or
  recipe is imported afresh (the result cache then decides what re-runs).
* A page's usage example imports a recipe by its bare name, as a reader's script beside the file does
  (``from step_budget import …``): an import finder (``RecipeFinder``) loads that name from the recipe's file.
"""

from __future__ import annotations

import functools
import hashlib
import importlib
import importlib.abc
import importlib.util
import json
import logging
import os
import re
import shutil
import sys
from pathlib import Path
from typing import Callable
from html import unescape
from html.parser import HTMLParser
from urllib.parse import unquote

import jinja2

from mkdocs.exceptions import PluginError
from mkdocs.plugins import BasePlugin, event_priority

_EXEC_LOGGER = "mkdocs.plugins.markdown_exec._internal.formatters.base"
CODE_FOLDER = "code"


def _lab(name: str):
    """The lab module ``name`` as currently imported (it may have been purged since the last build)."""
    return importlib.import_module(f"snippets.lab.{name}")


_BLOCK = re.compile(r"code block (?:'([^']*)' )?exited with ([^\n]*)")


def fail(page: str | None, message: str) -> None:
    """Note a failure on ``page`` (logged now, at ERROR: it is shown under ``-q`` too); the build stops when the
    page's content is complete (``on_page_content``), or at once outside a page."""
    text = f"[page docs/{page}] {message}" if page else message
    logging.getLogger("mkdocs.plugins.pitfalls").error(text)
    if page is None:
        raise PluginError(text)
    _lab("context").current().failures.setdefault(page, []).append(message)


def _summary(message: str) -> str:
    """One line for a markdown-exec failure: the block's id and the exception it ended with."""
    found = _BLOCK.search(message)
    if not found:
        return message.strip().splitlines()[0] if message.strip() else "a warning without a message"
    lines = [line.strip() for line in message.partition("Output is:")[2].splitlines()
             if line.strip() and not line.strip().startswith("```")]
    block = f"'{found.group(1)}'" if found.group(1) else "(without an id)"
    return f"exec block {block} exited with {found.group(2)}" + (f": {lines[-1]}" if lines else "")


class _NamePage(logging.Filter):
    """On markdown-exec's logger: names the page in its warnings and notes each one as a failure of that page."""

    def filter(self, record: logging.LogRecord) -> bool:
        build = _lab("context").current()
        page = build.page
        if record.levelno >= logging.WARNING:
            message = record.getMessage()
            if page:
                record.msg, record.args = f"[page docs/{page}] {message}", ()
            build.failures.setdefault(page or "", []).append(_summary(message))
        return True


_filter = _NamePage()


def purge_snippets() -> list[str]:
    """Forget every imported ``snippets`` module, and every recipe imported by its bare name, so the next import
    reads the files as they are now. (The experiments already refreshed in this process stay in
    ``Pitfalls.refreshed``: a rebuild under ``mkdocs serve`` does not re-run them all again.)"""
    names = [name for name, module in list(sys.modules.items())  # all but this module: the plugin MkDocs runs is
             if (name == "snippets" or name.startswith("snippets.") or _is_recipe(module))  # its own, kept for
             and name != __name__]  # the process, and an import of it must find that one
    replicas = sys.modules.get("snippets.lab.replicas")
    if replicas is not None:  # its worker processes hold the old code: the next timing experiment starts fresh ones
        replicas.close_all()
    context = sys.modules.get("snippets.lab.context")
    if context is not None:  # the last build, let go: the next import of the lab makes a variable of its own
        context.end()
    for name in names:
        del sys.modules[name]
    importlib.invalidate_caches()
    return names


RECIPE_DIR = Path(__file__).resolve().parents[1]
RECIPES = tuple(path.name for path in sorted(RECIPE_DIR.glob("*.py"))
                if path.stem != "__init__")  # the recipes: the single files at the top of snippets/


def _is_recipe(module) -> bool:  # noqa: ANN001 - any module
    """Whether ``module`` was loaded from one of the recipes' files (by its bare name or as ``snippets.<name>``)."""
    path = getattr(module, "__file__", None)
    return isinstance(path, str) and Path(path).name in RECIPES and Path(path).resolve().parent == RECIPE_DIR


class RecipeFinder(importlib.abc.MetaPathFinder):
    """Finds a recipe by its bare name (``step_budget``), as a reader's script beside the file imports it: from the
    recipe's file in ``snippets/``, never from an installed package of that name (PyPI has a ``seeding``). It finds
    nothing else, so no other name of ``snippets/`` becomes importable."""

    pitfalls_recipes = True

    def find_spec(self, name, path=None, target=None):  # noqa: ANN001, ANN201 - importlib's protocol
        if path is None and f"{name}.py" in RECIPES:
            return importlib.util.spec_from_file_location(name, RECIPE_DIR / f"{name}.py")
        return None


# Set by tools/translations.py (make translations): a file to write what the build printed in its language, the
# catalogue keys it used and the texts it found no translation for, instead of failing on them
TRANSLATIONS_ENV = "PITFALLS_TRANSLATIONS_OUT"


def _recording():
    """The recording ``make record`` is making with this build (``store.writer``), or None: the same writer, and
    the same checked copy of the recording it replaces, as the experiments' runner uses."""
    return _lab("store").writer(_lab("cache").find_experiment)


def _twin(source: str) -> Path | None:
    """The default-language notebook a translated one (``docs/zh/notebooks/x.py``) takes its outputs from."""
    path = Path(source)
    parts = path.parts
    if len(parts) >= 3 and parts[-2] == "notebooks" and parts[-3] in _lab("i18n").LANGUAGES \
            and parts[-3] != _lab("i18n").DEFAULT:
        return path.parents[2] / "notebooks" / path.name
    return None


NO_ALT = 'alt="No description has been provided for this image"'


def with_alt_text(page: str, executed: str) -> str:
    """nbconvert gives every figure of a notebook the alt text "No description has been provided for this image";
    each gets instead the ``alt`` of its cell's metadata, written on the cell's first line in the percent-format
    source: ``# %% alt="What the figure shows"``. A figure whose cell has none fails the build, by name."""
    import html

    import nbformat

    notebook = nbformat.read(executed, as_version=4)
    alts: list[str] = []
    for number, cell in enumerate(notebook.cells, 1):
        figures = sum(1 for output in cell.get("outputs", [])
                      if {"image/png", "image/jpeg"} & set(output.get("data", {})))
        if figures and not str(cell.metadata.get("alt", "")).strip():
            raise PluginError(f"{Path(executed).name}: cell {number} draws {figures} figure(s) but has no alt text; "
                              'describe what it shows on the cell\'s first line: # %% alt="..."')
        alts += [cell.metadata.get("alt", "")] * figures
    pieces = page.split(NO_ALT)
    if len(pieces) - 1 != len(alts):
        raise PluginError(f"{Path(executed).name}: {len(alts)} figure(s) in the notebook's outputs but "
                          f"{len(pieces) - 1} image(s) without alt text in its page")
    return pieces[0] + "".join(f'alt="{html.escape(alt)}"{piece}' for alt, piece in zip(alts, pieces[1:]))


# Finished HTML that a page names: a code panel's highlighted sources (render.deferrable) and a figure, whole.
_FINISHED = re.compile(r'(<div class="pitfalls-code__body" data-key="\w+">\n)(.*?)(\n</div><!--/pitfalls-code \w+-->)'
                       r'|(<figure class="pitfalls-figure"[^>]*>.*?</figure>)', re.S)


def set_aside(markdown: str, source: str) -> str:
    """A page's panels' highlighted sources and its figures are most of its tags and half a warm build's Markdown
    time: finished HTML that Python-Markdown would walk tag by tag and leave as it is. They leave the page's Markdown
    as tokens, and ``put_back`` returns them to its HTML: the same page."""
    aside = _lab("context").current().aside.setdefault(source, {})

    def token(match: re.Match) -> str:
        key = f"pitfallspage{len(aside)}x"
        if match.group(4) is not None:  # a figure, whole
            aside[key] = match.group(4)
            return key
        aside[key] = match.group(2)  # a panel's sources, inside its body
        return match.group(1) + key + match.group(3)

    return _FINISHED.sub(token, markdown)


def put_back(html: str, source: str) -> str:
    """The finished HTML ``set_aside`` took from the page ``source``, in place of its tokens."""
    aside = _lab("context").current().aside.pop(source, {})
    if not aside:
        return html
    # a figure on a line of its own is a block, also inside a tab or an admonition, where its indented HTML alone
    # would have been read as a paragraph
    html = re.sub(r"<p>(pitfallspage\d+x)</p>", lambda match: aside.get(match.group(1), match.group(0)), html)
    return re.sub(r"pitfallspage\d+x", lambda match: aside.get(match.group(0), match.group(0)), html)


def _unicode_notebook_anchors(jupyter_plugin) -> None:
    """mkdocs-jupyter gives a notebook's headings, and its table of contents, ASCII-only anchors: a Chinese heading
    gets ``id=""`` and a contents link to ``#_1``. Both are made with MkDocs' Unicode slug instead, which writes
    the same anchors for English headings (``question-1-reproduced``)."""
    import functools

    from markdown.extensions.toc import TocExtension, slugify_unicode
    from mkdocs_jupyter import convert

    convert.slugify = lambda value: slugify_unicode(value, "-")
    jupyter_plugin.TocExtension = functools.partial(TocExtension, slugify=slugify_unicode)


def topic_pages(docs_dir: str | Path) -> dict[str, str]:
    """Each page under ``docs_dir`` that presents a topic (its path, ``loader-overhead.md``) and the topic, named in
    its front matter (``topic: loader``, the package ``snippets/experiments/loader``), read with MkDocs' own
    front-matter parser."""
    from mkdocs.utils.meta import get_data

    found = {}
    for path in sorted(Path(docs_dir).rglob("*.md")):
        _, meta = get_data(path.read_text(encoding="utf-8"))
        topic = meta.get("topic")
        if topic is not None and not (isinstance(topic, str) and re.fullmatch(r"[a-z_][a-z0-9_]*", topic)):
            raise PluginError(f"docs/{path.relative_to(docs_dir).as_posix()}: its front matter's topic is {topic!r}: "
                              "name one package of snippets/experiments/, as in 'topic: loader'")
        if topic:
            found[path.relative_to(docs_dir).as_posix()] = topic
    return found


def topic_experiments(docs_dir: str) -> set[str]:
    """Every experiment of the topics the pages under ``docs_dir`` present (``loader.question_timing``, …)."""
    names = set(topic_pages(docs_dir).values())
    return {exp.name for exp in _lab("cache").page_experiments() if exp.name.partition(".")[0] in names}


def _languages(config) -> tuple[list[str], str | None]:
    """Every language this ``mkdocs build`` writes, the default first, and the one this build writes
    (mkdocs-static-i18n builds one after the other; None before it has chosen, when the default comes first)."""
    plugins = getattr(config, "plugins", None)
    plugin = plugins.get("i18n") if plugins is not None else None
    if plugin is None:
        return [_lab("i18n").DEFAULT], None
    return [plugin.default_language] + [lang for lang in getattr(plugin, "build_languages", [])
                                        if lang != plugin.default_language], plugin.current_language


def _build_language(config) -> tuple[str, bool, bool]:
    """The language this build writes, whether it is the first (or only) of its ``mkdocs build`` and whether it is
    the last."""
    every, current = _languages(config)
    if current is None:
        return every[0], True, True
    return current, current == every[0], current == every[-1]


def _project_url(config) -> str | None:
    """Where the project lives: its repository (REPO_URL), else the site's address unless it is a local one."""
    url = config.get("repo_url") or config.get("site_url") or ""
    return None if not url or "127.0.0.1" in url or "localhost" in url else url.rstrip("/") + "/"


def published_recipe(source: str, url: str | None) -> str:
    """A recipe as the site publishes it: its source, byte for byte, except that its ``# Project:`` comment names
    the project's address when the build knows one (``REPO_URL`` or ``SITE_URL``)."""
    if not url:
        return source
    return re.sub(r"^(# Project: PyTorch pitfalls, measured)( — .*)?$", lambda m: f"{m.group(1)} — {url}",
                  source, count=1, flags=re.M)


_ENCODED_ANCHOR = re.compile(r'\b(id="|href="#)([^"#]*%[0-9A-F]{2}[^"#]*)"')
_ALTERNATE_LINK = re.compile(r'\s*<link rel="alternate" href="[^"]*" hreflang="[^"]*">')


# What the page's plugins write in English whatever the page's language: the headings' permalink titles (toc), the
# notebooks' copy buttons and prompts (mkdocs-jupyter), the notebook download buttons (overrides/main.html).
_ATTRIBUTE = re.compile(r'\b(title|aria-label)="([^"]*)"')
_NOTICE = re.compile(r'(<span class="notice" hidden="">)(Copied!)(</span>)')
_PROMPT = re.compile(r'(<div class="jp-InputPrompt[^"]*">)In(?:\xa0|&nbsp;| )?\[(\d*)\]:')


def theirs_translated(output: str, language: str) -> str:
    """A page of ``language`` with the English its plugins wrote translated from the catalogues (each text one
    of their keys, ``Permanent link``); every other attribute is left as it is."""
    import html as html_module

    i18n = _lab("i18n")

    def attribute(found):
        text = html_module.unescape(found.group(2))
        translated = i18n.translate(text, language, _lab("context").current().used) if i18n.needs_translation(text) else None
        if translated is None and language == "zh":  # the theme's "上一页: 首页": a Chinese colon
            translated = re.sub(r"(?<=[\u4e00-\u9fff]): ", "：", text)
        return f'{found.group(1)}="{html_module.escape(translated)}"'

    output = _ATTRIBUTE.sub(attribute, output)
    output = _NOTICE.sub(lambda m: m.group(1) + i18n.t_in(language, m.group(2)) + m.group(3), output)
    return _PROMPT.sub(lambda m: m.group(1) + i18n.t_in(language, "In [{number}]:", number=m.group(2)), output)


_FENCED = re.compile(r"^([ ]*)(```|~~~).*?^\1\2[ ]*$", re.S | re.M)
# a claim ({{ say(…) }}) on a Chinese page continues its sentence on either side of a line break (a figure, table or
# panel on a line of its own stays a block of its own)
_CJK_BREAK = re.compile(r"(?:(?<=[\u3400-\u9fff\u3000-\u303f\uff01-\uff1f])|(?<=\}\}))\n[ \t]*"
                        r"(?=[\u3400-\u9fff\u3000-\u303f\uff08\u201c]|\{\{ say\()")


_CJK_CHAR = "\u3400-\u9fff"
_CJK_STOP = "。，；：！？、）”』」"
_PRE = re.compile(r"(<(pre|code|script|style|textarea)\b.*?</\2>)", re.S)
_TAG = re.compile(r"(<[^>]+>)")


# ASCII brackets around Chinese (an interval's "(3–20，有噪声)"): full-width ones, with no space before them
_CJK_IN_PARENS = re.compile(f"[ \t]?\\(([^()]*[{_CJK_CHAR}{_CJK_STOP}][^()]*)\\)")
# and around a number's interval, as Chinese text writes every bracket: "10× (3–20)" reads "10×（3–20）"
_NUMBER_INTERVAL = re.compile(r"(?<=[\d×%]) \((-?[\d.,]+–-?[\d.,]+)\)")


def close_cjk_spacing(html: str) -> str:
    """No space where Chinese has none: between two Chinese characters, and after a full-width mark (。，；：）),
    as Python's ``print(a, b)`` or a Markdown line break leave them; brackets around Chinese and around a number's
    interval are full-width (``10×（3–20；校验：大于 3×）``, ``92%（86–95）``); tags in between are kept, code is not
    touched."""
    out = []
    for n, part in enumerate(_PRE.split(html)):
        if n % 3 == 1:
            out.append(part)
            continue
        if n % 3 == 2:  # the tag name _PRE captured
            continue
        pieces = _TAG.split(part)  # text, tag, text, tag, …
        visible = [(i, piece) for i, piece in enumerate(pieces) if i % 2 == 0]
        for k, (i, text) in enumerate(visible):
            def neighbour(after: bool) -> str:
                """The visible character next to this text: the first after it, or the last before it."""
                for _, other in (visible[k + 1:] if after else reversed(visible[:k])):
                    if other.strip():
                        return other.lstrip()[0] if after else other.rstrip()[-1]
                return ""
            if text and not text.strip(" \t"):  # a space alone between two tags: "。</span> <span>在"
                before, after = neighbour(False), neighbour(True)
                if before and after and (before in _CJK_STOP or (re.match(f"[{_CJK_CHAR}]", before)
                                                             and re.match(f"[{_CJK_CHAR}“（]", after))):
                    pieces[i] = ""
                continue
            if text[:1] in (" ", "\t") and re.match(f"[{_CJK_CHAR}{_CJK_STOP}]", neighbour(False)) \
                    and re.match(f"[{_CJK_CHAR}“（]", text.lstrip()):
                text = text.lstrip(" \t")
            if re.search(f"[{_CJK_CHAR}{_CJK_STOP}][ \t]+$", text) and re.match(f"[{_CJK_CHAR}“（]", neighbour(True)):
                text = text.rstrip(" \t")
            text = _CJK_IN_PARENS.sub(r"（\1）", text)
            text = _NUMBER_INTERVAL.sub(r"（\1）", text)
            text = re.sub(f"(?<=[{_CJK_STOP}])[ \t]+(?=\\S)", "", text)
            pieces[i] = re.sub(f"(?<=[{_CJK_CHAR}])[ \t](?=[{_CJK_CHAR}])", "", text)
        out.append("".join(pieces))
    return "".join(out)


def join_cjk_lines(markdown: str) -> str:
    """A line break between two Chinese characters is a space in HTML, which Chinese does not have between words:
    such breaks are removed outside fenced code (a wrapped Chinese paragraph reads as one), and so are those beside a
    claim (``{{ say(…) }}``), which a Chinese page fills with Chinese."""
    out, at = [], 0
    for fence in _FENCED.finditer(markdown):
        out += [_CJK_BREAK.sub("", markdown[at:fence.start()]), fence.group(0)]
        at = fence.end()
    out.append(_CJK_BREAK.sub("", markdown[at:]))
    return "".join(out)


class _Topic:
    """A topic by its name on a page (``{{ loader.figures.percent(share) }}``): its modules, imported when named."""

    def __init__(self, name: str) -> None:
        self._name = name

    def __getattr__(self, module: str):  # noqa: ANN204 - a module of the topic
        if module.startswith("_"):
            raise AttributeError(module)
        return importlib.import_module(f"snippets.experiments.{self._name}.{module}")


def page_names(meta: dict) -> dict:
    """What a page's sentences may name (``{{ figures.loss_curves(result) }}``): the lab's functions
    (``snippets.lab.__all__``) and its ``machines``, ``render``, ``versions``, ``i18n`` and ``timing``; every topic by
    its name (``loader.derive``); and, on a page whose front matter names a topic, that topic's ``measure``,
    ``figures``, ``checks`` and ``derive`` (those it has) by theirs."""
    import builtins

    lab = importlib.import_module("snippets.lab")
    # Python's own, as a sentence counts with them: {{ len(rows) }}, {{ max(times) }}
    names = {name: getattr(builtins, name) for name in ("len", "min", "max", "sum", "abs", "round", "sorted", "any",
                                                        "all", "zip", "str", "int", "map", "set")}
    names.update({name: getattr(lab, name) for name in lab.__all__})
    names.update({name: _lab(name) for name in ("machines", "render", "versions", "i18n", "timing")})
    cache = _lab("cache")
    names.update({topic: _Topic(topic) for topic in cache.topics()})
    topic = meta.get("topic")
    for module in ("measure", "figures", "checks", "derive") if topic else ():
        found = cache.topic_modules(module).get(topic)
        if found is not None:
            names[module] = found
    return names


def _and_list(items) -> str:  # noqa: ANN001 - any iterable of texts
    """``a, b, and c`` in English, ``a、b 和 c`` in Chinese (Babel's list pattern, with the space the site's Chinese
    keeps between a word of it and code or Latin text)."""
    from babel.lists import format_list

    language = _lab("context").current().language
    joined = format_list([str(item) for item in items], locale=language)
    if language == "zh":
        joined = re.sub(r"(?<=[`A-Za-z0-9_)])和", " 和", joined)
        joined = re.sub(r"和(?=[`A-Za-z0-9_(])", "和 ", joined)
    return joined


@functools.cache
def environment():  # noqa: ANN201 - a jinja2.Environment
    """How pages are read as templates: strictly (an unknown name is an error), a ``{% … %}`` line leaving no blank
    line behind, with ``f`` (``{{ weights | f(".2g") }}``: a number as ``format()`` writes it) and ``and_list``
    (``{{ names | and_list }}``: "a, b, and c", "a、b 和 c")."""
    made = jinja2.Environment(undefined=jinja2.StrictUndefined, trim_blocks=True, lstrip_blocks=True,
                              keep_trailing_newline=True, autoescape=False)
    made.filters["f"] = format
    made.filters["and_list"] = _and_list
    return made


@functools.lru_cache(maxsize=64)
def _template(markdown: str):  # noqa: ANN202 - a jinja2.Template
    """A page's template, compiled once for its text (a rebuild that did not change the page compiles nothing)."""
    return environment().from_string(markdown)


def render_names(markdown: str, source: str, meta: dict, original: str | None = None) -> str:
    """A page written as prose with named values (front matter ``names: true``): its ``{{ … }}`` and ``{% … %}``
    rendered by Jinja2, MkDocs' own template engine, strictly (an unknown name is an error). A failure is the
    page's (``fail``), naming the line of the page's source and what it says there; the page then shows nothing."""
    try:
        return _template(markdown).render(page_names(meta))
    except Exception as error:  # noqa: BLE001 - whatever a page's code raised, named with its line
        line = error.lineno if isinstance(error, jinja2.TemplateSyntaxError) else None
        traceback = error.__traceback__
        while traceback is not None:
            if traceback.tb_frame.f_code.co_filename == "<template>":
                line = traceback.tb_lineno
            traceback = traceback.tb_next
        lines, where = markdown.splitlines(), "its template"
        said = lines[line - 1].strip() if line and line <= len(lines) else ""
        # the line in the file: the front matter is above the Markdown, and a Chinese page's lines were joined
        text = original if original is not None else markdown
        if said and said in text:
            where = f"line {text[:text.find(said)].count(chr(10)) + 1} ({said})"
        fail(source, f"{where}: {type(error).__name__}: {error}")
        return ""


def with_conditions_note(html: str, entries: list | None) -> str:
    """The page's one note on measurement conditions (``render.noise_warning``), where the first value it names is;
    the places later tables asked for it stay empty."""
    render = _lab("render")
    place = f"<p>{render.CONDITIONS_NOTE}</p>"
    html = html.replace(place, render.CONDITIONS_NOTE)
    if not entries:
        return html.replace(render.CONDITIONS_NOTE, "")
    return html.replace(render.CONDITIONS_NOTE, render.conditions_note(entries), 1).replace(render.CONDITIONS_NOTE, "")


def with_measuring_note(html: str, pending: dict | None) -> str:
    """Under ``make serve``'s first builds (``store.deferred``), a page that shows recorded results says so under its
    title, with how far this machine's measuring build has got (``serve``) or why it failed."""
    store, t = _lab("store"), _lab("i18n").t
    if not pending or not store.deferred():
        return html
    import html as html_module
    import json

    try:
        state = json.loads(store.progress_path().read_text(encoding="utf-8"))
    except (OSError, ValueError):
        state = {}
    lead = html_module.escape(store.primary_label() or "")
    if isinstance(state.get("failed"), str):
        title = t("Measuring this machine failed")
        body = t("These numbers stay those recorded on {label}. What failed: {error}", label=lead,
                 error=html_module.escape(state["failed"]))
        kind = "failure"
    else:
        title = t("Recorded elsewhere, for now")
        done, total, left = state.get("done"), state.get("total"), state.get("left_s")
        so_far = (t(" {done} of {total} experiments measured so far, about {minutes} min left.", done=done,
                    total=total, minutes=max(1, round(left / 60)))
                  if isinstance(done, int) and isinstance(total, int) and isinstance(left, (int, float)) else "")
        body = t("Numbers marked as recorded on {label} are that machine's, until this machine has measured them: "
                 "make serve is measuring now, and the page reloads as results arrive.", label=lead) + so_far
        kind = "info"
    note = (f'<div class="admonition {kind} pitfalls-measuring" role="status"><p class="admonition-title">{title}</p>'
            f"<p>{body}</p></div>\n")
    end = html.find("</h1>")
    return html[:end + 5] + "\n" + note + html[end + 5:] if end >= 0 else note + html


# The characters of code a 320 px phone shows on one line (8.5 px a character in a 262 px code box, rounded down).
PHONE_CODE_CHARACTERS = 30
_CODE_BLOCK = re.compile(r'(<div class="(?:[^"]* )?highlight(?: [^"]*)?")((?:(?!<div\b).)*?<pre\b[^>]*>)(.*?)'
                         r'(<code)([^>]*>)(.*?)(</code>)', re.S)


def sized_code_blocks(html: str) -> str:
    """Each code block with what a phone needs before it is drawn (a block is drawn only as it nears the screen:
    content-visibility in assets/extra.css). Its number of lines, ``--pitfalls-lines``, from which the space it
    holds until then is sized, so the page barely moves when it is drawn; and, when a line is longer than a 320 px
    phone shows, ``tabindex="0"`` on its ``<code>``: a box that scrolls sideways is reachable by keyboard from the
    start (Material adds it only to blocks it has already equipped, on screen)."""
    def sized(match: re.Match) -> str:
        div, pre, before, code, attributes, body, end = match.groups()
        lines = re.sub(r"<[^>]+>", "", body).rstrip("\n").split("\n")
        longest = max(len(unescape(line)) for line in lines)
        div += f' style="--pitfalls-lines: {len(lines)}"'
        if longest > PHONE_CODE_CHARACTERS and "tabindex=" not in attributes:
            code += ' tabindex="0"'
        return div + pre + before + code + attributes + body + end

    return _CODE_BLOCK.sub(sized, html)


# What a part never holds: a heading (the table of contents reads the headings' places as Material starts).
_HEADING = re.compile(r"h[1-6]$")
_VOID = frozenset("area base br col embed hr img input link meta source track wbr".split())


class _TopLevel(HTMLParser):
    """Each top-level element of a page's content: where it starts, whether it is a heading, and whether every
    element closed."""

    def __init__(self, html: str):
        super().__init__(convert_charrefs=False)
        self._starts = [0]
        for line in html.splitlines(keepends=True):
            self._starts.append(self._starts[-1] + len(line))
        self.depth = 0
        self.balanced = True
        self.tops: list[tuple[int, str]] = []  # (offset, "heading" | "block")

    def _top(self, tag: str) -> None:
        if not self.depth:
            line, column = self.getpos()
            self.tops.append((self._starts[line - 1] + column, "heading" if _HEADING.match(tag) else "block"))

    def handle_starttag(self, tag, attrs):
        self._top(tag)
        if tag not in _VOID:
            self.depth += 1

    def handle_startendtag(self, tag, attrs):
        self._top(tag)

    def handle_endtag(self, tag):
        if tag not in _VOID:
            self.depth -= 1
            self.balanced = self.balanced and self.depth >= 0


@functools.lru_cache(maxsize=64)  # a rebuild (make serve) meets the same pages again
def _top_level(html: str) -> tuple[list[tuple[int, str]], bool]:
    """The top-level elements of ``html`` (``_TopLevel.tops``), and whether every element in it closed."""
    parser = _TopLevel(html)
    parser.feed(html)
    parser.close()
    return parser.tops, parser.balanced and parser.depth == 0


def in_parts(html: str) -> str:
    """The blocks after each heading but the title, up to the next heading, wrapped in ``<div class="pitfalls-part">``:
    a part is skipped while the page loads and drawn after it, one at a time (content-visibility in
    assets/extra.css, assets/parts.js). Material forces a layout of the whole page several times as it starts; with
    the parts skipped, each of those lays out the first screen and the headings, not the whole page. What comes
    before the first section (the title, the In short) is the first screen and stays as it is. Content
    whose elements do not all close (raw HTML the parser cannot follow) is left as it is: a wrapper closed in the
    wrong place would break the page, a missing one only costs time."""
    tops, balanced = _top_level(html)
    if not balanced:
        return html
    tops = tops + [(len(html), "end")]
    first = next((index for index, (_, kind) in enumerate(tops) if kind == "heading" and index), None)
    if first is None:
        return html
    out, done, begin = [], 0, None
    for at, kind in tops[first:]:
        if kind == "block":
            begin = at if begin is None else begin
            continue
        if begin is not None:
            out += [html[done:begin], '<div class="pitfalls-part">', html[begin:at].rstrip(), "</div>\n"]
            done, begin = at, None
    return "".join(out) + html[done:]


_HEADING_ID = re.compile(r'<h([2-6])\b[^>]*\bid="([^"]+)"')


def collapsed(html: str, ids: object, source: str) -> str:
    """The sections a page's front matter names (``collapsed: [section-id, …]``, the ids of ``##`` or deeper
    headings) closed under their heading, in ``<details class="pitfalls-section">``, each up to the next heading of
    its level or above: the page opens at the answer and the evidence the reader needs first; what goes deeper is
    one click away (its summary says what the section holds), and search, find-in-page and links into it still
    reach it (assets/parts.js opens a section a link points into). A name that is not a section of the page, or a
    section inside another closed one, stops the build."""
    if not ids:
        return html
    if not isinstance(ids, list) or not all(isinstance(name, str) for name in ids):
        fail(None, f"docs/{source}: front matter 'collapsed' must be a list of section ids (## headings), got {ids!r}")
    tops, balanced = _top_level(html)
    headings = {}  # id -> (index among the top-level elements, level)
    for index, (at, kind) in enumerate(tops):
        match = _HEADING_ID.match(html, at)  # a heading's tag, with its id (no other element starts so)
        if match:
            headings[match.group(2)] = (index, int(match.group(1)))
    unknown = [name for name in ids if name not in headings]
    if unknown or not balanced:
        fail(None, f"docs/{source}: front matter 'collapsed' names {', '.join(unknown) or 'sections'} but the page has "
                   f"no such section to close (its sections: {', '.join(headings) or 'none'})")
    starts = [at for at, _ in tops] + [len(html)]
    levels = {index: level for index, level in headings.values()}
    spans = []
    for name in sorted(ids, key=lambda name: headings[name][0]):
        index, level = headings[name]
        last = next((later for later in range(index + 1, len(tops))
                     if tops[later][1] == "heading" and levels.get(later, 1) <= level), len(tops))
        if spans and index < spans[-1][2]:
            fail(None, f"docs/{source}: front matter 'collapsed' names {name}, which lies inside {spans[-1][0]}, "
                       "closed already")
        spans.append((name, index, last))
    out, done = [], 0
    for _, index, last in spans:
        begin, end = starts[index + 1], starts[last]
        body = html[begin:end]
        if not body.strip():
            continue
        out += [html[done:begin], '<details class="pitfalls-section">', f"<summary>{_section_summary(body)}</summary>\n",
                body.rstrip(), "\n</details>\n"]
        done = end
    return "".join(out) + html[done:]


def _section_summary(body: str) -> str:
    """What a closed section holds, said on its summary: "Open the section: 2 figures, 1 table, 14 checked claims",
    and "Close the section: …" once open (assets/extra.css shows the one that applies)."""
    i18n = _lab("i18n")
    counts = [(body.count('<figure class="pitfalls-figure"'), "{count} figure", "{count} figures"),
              (len(re.findall(r"<table\b", body)), "{count} table", "{count} tables"),
              (len(re.findall(r'<span class="pitfalls-claim[ "]', body)), "{count} checked claim", "{count} checked claims")]
    contents = i18n.joined(i18n.counted(count, one, many) for count, one, many in counts if count)
    said = [i18n.t("Open the section: {contents}", contents=contents) if contents else i18n.t("Open the section"),
            i18n.t("Close the section: {contents}", contents=contents) if contents else i18n.t("Close the section")]
    return (f'<span class="pitfalls-section__closed">{said[0]}</span>'
            f'<span class="pitfalls-section__open">{said[1]}</span>')


LEGEND_CLAIMS = ("✓ marks a sentence checked against this page's measurements: tap, click or focus it to see what "
                 "was checked and what was measured.")
LEGEND_UNDECIDED = "? marks one the measurements here could not decide."
LEGEND_INTERVALS = ("A timed ratio or share is printed with its 95% interval, low–high: the range a re-measurement on "
                    "the same machine should land in. Training results are exact for their seeds: their spread over "
                    "starts is given as a range.")
# a printed interval: "15× (12–20", "90% (84–96", "0.41 (0.32–0.5", and in Chinese "15×（12–20）"
_INTERVAL = re.compile(r"\d[×%]? ?[(（]-?[\d.,]+–")


def _with_legend(html: str) -> str:
    """The page's notation, in two lines, after its In short (before its first section), on every page that has
    checked claims: what ✓ (and ?, where one appears) means, and how an interval reads. A reader meets the
    notation where the numbers start, on the page they landed on."""
    if 'class="pitfalls-claim' not in html:
        return html
    t = _lab("i18n").t
    first = [t(LEGEND_CLAIMS)] + ([t(LEGEND_UNDECIDED)] if "pitfalls-claim--undecided" in html else [])
    second = [t(LEGEND_INTERVALS)] if _INTERVAL.search(html) else []
    space = "" if _lab("context").current().language == "zh" else " "
    lines = [space.join(first)] + ([space.join(second)] if second else [])
    legend = '<p class="pitfalls-legend">' + "<br>\n".join(lines) + "</p>\n"
    after = _end_of_in_short(html)
    if after is not None:  # under the In short: the jump links, then the notation
        return f"{html[:after]}\n{_jump_links(html)}{legend}{html[after:]}"
    section = html.find("<h2")
    at = section if section >= 0 else len(html)
    return f"{html[:at]}{legend}{html[at:]}"


_DIV = re.compile(r"<(/?)div\b[^>]*>")


def _end_of_in_short(html: str) -> int | None:
    """Where the page's In short box (its first ``admonition abstract``) ends, nested tabs and all."""
    start = html.find('<div class="admonition abstract">')
    if start < 0:
        return None
    depth = 0
    for tag in _DIV.finditer(html, start):
        depth += -1 if tag.group(1) else 1
        if depth == 0:
            return tag.end()
    return None


_SECTION = re.compile(r'<h2 id="([^"]+)">(.*?)(?:<a class="headerlink"[^>]*>.*?</a>)?</h2>', re.S)


def _jump_links(html: str) -> str:
    """Under a topic page's In short, a line of links to its sections, the recipe's among them: on a phone, where
    the table of contents is a menu away, the fix and the recipe are one tap from the first screen."""
    if 'class="admonition abstract"' not in html:
        return ""
    sections = _SECTION.findall(html)
    if len(sections) < 3:
        return ""
    t = _lab("i18n").t
    links = " · ".join(f'<a href="#{anchor}">{title.strip()}</a>' for anchor, title in sections)
    space = "" if _lab("context").current().language == "zh" else " "
    return f'<nav class="pitfalls-jump" aria-label="{t("On this page")}"><p>{t("On this page:")}{space}{links}</p></nav>\n'


# Material's palette stylesheet turns transitions off while the palette switches, with a rule on the body's
# ``data-md-color-switching`` attribute over every element: ``[data-md-color-switching] *, … :after, … :before``.
# Material sets that attribute as every page starts (and removes it again), so the rule makes the browser restyle the
# whole page twice during load, a long task on a phone, for a switch that happens only when a reader clicks the
# toggle. The built sheet keys the rule on ``data-pitfalls-switching`` instead, which ``assets/palette-switch.js``
# sets only around a reader's switch: loading restyles nothing for it, and a switch still animates no colour.
SWITCHING = "data-md-color-switching"
OUR_SWITCHING = "data-pitfalls-switching"
_SWITCHING_RULE = re.compile(r"\[data-md-color-switching\] \*,\[data-md-color-switching\] :after,"
                             r"\[data-md-color-switching\] :before\{[^}]*\}")


def switching_rule_keyed_to_the_toggle(site: Path) -> int:
    """Key the palette-switching rule of the built palette stylesheet(s) to ``OUR_SWITCHING``; returns how many
    rules were rekeyed (0 when already done). Raises when the attribute is left anywhere else in the sheet, as
    it would be in a rule of another shape (a newer Material)."""
    rekeyed = 0
    for sheet in site.glob("assets/stylesheets/palette.*.min.css"):
        text = sheet.read_text(encoding="utf-8")
        text, count = _SWITCHING_RULE.subn(lambda m: m.group(0).replace(SWITCHING, OUR_SWITCHING), text)
        if SWITCHING in text:
            raise PluginError(f"{sheet.name}: Material's palette-switching rule has another shape; update "
                              "_SWITCHING_RULE in snippets/lab/mkdocs_hook.py")
        if count:
            sheet.write_text(text, encoding="utf-8")
        rekeyed += count
    return rekeyed


class _InMemory(dict):
    """What Jinja2 asks of a memcache client (``get``, ``set``), held in this process's memory."""

    set = dict.__setitem__


_CONFIG_BASE = re.compile(r'(<script id="__config" type="application/json">\{"annotate": [^,]*, "base": ")([^"]*)(")')


def _search_base(output: str, language: str) -> str:
    """A page of ``language`` searches its own language's index: Material reads ``search/search_index.json``
    under the ``base`` of its ``__config`` (the site root), which for this page is its language's folder."""
    return _CONFIG_BASE.sub(lambda m: f"{m.group(1)}{m.group(2).rstrip('/') or '.'}/{language}/{m.group(3)}", output)


def _whole_site(config) -> bool:
    """Whether this language's build wrote every page (not a serve rebuild of a few, nor a test's small site)."""
    return Path(getattr(config, "docs_dir", "") or ".").resolve() == (Path(__file__).resolve().parents[2] / "docs")


class Pitfalls(BasePlugin):
    """The site's MkDocs plugin (``plugins: [pitfalls]``), and what it keeps from one build to the next in this
    process: ``mkdocs build`` builds each language in turn, ``mkdocs serve`` rebuilds, and MkDocs keeps a plugin
    that has ``on_startup`` for every rebuild of one ``mkdocs serve``. What one build collects on its pages is that
    build's ``context.Build``."""

    def __init__(self) -> None:
        super().__init__()
        self.builds = 0
        # claims contradicted, over every language: {(check, measured): {..., "pages": [(page, sentence)]}}
        self.contradicted: dict[tuple[str, str], dict] = {}
        # REFRESH: the experiments this process already re-ran (a rebuild under mkdocs serve does not re-run them)
        self.refreshed: set[str] = set()
        self.executed_dir: Path | None = None  # where executed notebooks are kept
        self.reexecute = False  # REFRESH=1, first build of the process: notebooks execute again
        self.pending_notebooks: set[str] = set()  # shown as recorded while make serve measures (store.deferred)
        self.executed_now: set[str] = set()  # notebooks executed in this build beside the experiments (prefetch)
        # The theme's templates, compiled once per process: MkDocs makes a new Jinja2 environment for every build,
        # and would compile Material's some forty templates again for each language of every make serve rebuild.
        # Jinja2 compiles a template whose source changed (its checksum) again.
        self.templates = jinja2.MemcachedBytecodeCache(_InMemory())

    def on_startup(self, *, command, dirty) -> None:
        """Present so that MkDocs keeps this plugin, and what it holds, from one ``mkdocs serve`` rebuild to the
        next."""

    def _executed_path(self, source: str) -> Path:
        """Where the executed copy of a percent-format notebook is kept: by this machine and the source's content.
        In a frozen build (``FROZEN=1``), the leading recorded machine's copy, which must match the source.
        A translated notebook's copy is keyed by its own source and its twin's executed copy."""
        machines = _lab("machines")
        twin = _twin(source)
        if twin is not None:
            assert self.executed_dir is not None
            digest = hashlib.sha256(Path(source).read_bytes() + self._executed_path(str(twin)).name.encode()).hexdigest()[:16]
            return self.executed_dir / f"{Path(source).stem}-{Path(source).parts[-3]}-{digest}.ipynb"
        if machines.frozen():
            return machines.frozen_notebook(Path(source))
        digest = hashlib.sha256(Path(source).read_bytes()).hexdigest()[:16]
        assert self.executed_dir is not None
        mine = self.executed_dir / f"{Path(source).stem}-{digest}.ipynb"
        if not mine.exists() and _lab("store").deferred():  # make serve: the recording's until this machine's is made
            try:
                recorded = machines.frozen_notebook(Path(source))
            except _lab("store").ArchiveError:
                return mine
            self.pending_notebooks.add(source)
            return recorded
        return mine

    def _keep_executed(self, original):
        """Wrap mkdocs-jupyter's converter: execute the notebook once with nbclient, keep the executed ``.ipynb``
        (offered for download beside the page), and render that, unexecuted, to HTML."""

        def nb2html(nb_path, execute=False, kernel_name="", **options):
            if not execute or not str(nb_path).endswith(".py"):
                return original(nb_path, execute=execute, kernel_name=kernel_name, **options)
            executed = str(self._executed_copy(str(nb_path), lambda twin: nb2html(
                str(twin), execute=True, kernel_name=kernel_name, **options), kernel_name, options))
            return with_alt_text(original(executed, execute=False, kernel_name=kernel_name, **options), executed)

        nb2html.pitfalls_original = original
        return nb2html

    def _executed_copy(self, nb_path: str, execute_twin, kernel_name: str, options: dict) -> Path:
        """The executed copy of notebook ``nb_path`` this build renders, executed first if it must be."""
        machines = _lab("machines")
        twin = _twin(nb_path)
        if twin is not None:  # a translation: its own words, the outputs of its twin's one execution
            return self._translated(nb_path, twin, lambda: execute_twin(twin))
        target = self._executed_path(nb_path)
        if machines.frozen() or (_lab("store").deferred() and target.exists()):
            # FROZEN=1: the leading machine's executed notebook, never an execution; so too under make serve until
            # this machine has executed it (``store.deferred``)
            return target
        recording = _recording()
        carried = self._carried(nb_path, recording)
        if carried is not None:  # make record: executed from this source already, by the recording it replaces
            # (this machine's fingerprint): its outputs are this build's, published beside the page
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(machines.recorded_notebook(Path(nb_path), recording.previous), target)
            recording.keep_notebook(Path(nb_path), carried)
        elif not self._executed_already(nb_path, recording):
            self._execute(nb_path, kernel_name, allow_errors=options.get("allow_errors", False))
        return target

    def _carried(self, source: str, recording) -> Path | None:
        """Under ``make record`` (not REFRESH=1): the executed copy of notebook ``source`` in the recording being
        replaced, if it was executed from this source; it is carried over, not executed again."""
        return recording.reuse_notebook(Path(source)) if recording is not None and not self.reexecute else None

    def _executed_already(self, source: str, recording) -> bool:
        """Whether notebook ``source`` was executed in this build beside the experiments, or here before from this
        source (whose copy REFRESH=1 and ``make record`` do not take)."""
        return source in self.executed_now or (
            self._executed_path(source).exists() and not self.reexecute and recording is None)

    def _execute(self, nb_path: str, kernel_name: str, *, allow_errors: bool) -> None:
        """Execute percent-format notebook ``nb_path`` with nbclient, in a kernel of its own, into its executed copy
        (``_executed_path``), and into the recording ``make record`` is making."""
        import tempfile

        import jupytext
        import nbformat
        from jupyter_client.manager import KernelManager
        from nbclient import NotebookClient

        notebook = jupytext.read(nb_path)
        logging.getLogger("mkdocs.plugins.pitfalls").info("pitfalls: executing notebook %s", nb_path)
        # over IPC (a Unix socket in a folder of its own), not TCP: nothing listens on the network, and the kernel
        # has no "running over TCP without encryption" warning to print
        with tempfile.TemporaryDirectory(prefix="pitfalls-kernel-") as sockets:
            kernel = KernelManager(kernel_name=kernel_name or "python3", transport="ipc", ip=str(Path(sockets, "kernel")))
            try:
                # one intra-op thread, as every experiment runs: beside the experiments, two threads wait for the core
                # they share with one (question_steps took 114 s there; with one thread 46 s, and printed the same)
                threads = str(_lab("environment").EXPERIMENT_THREADS)
                NotebookClient(notebook, km=kernel, allow_errors=allow_errors,
                               resources={"metadata": {"path": str(Path(nb_path).parent)}}).execute(
                    env={**os.environ, "OMP_NUM_THREADS": threads, "MKL_NUM_THREADS": threads})
            finally:  # a kernel manager handed to nbclient is ours to shut down
                if kernel.has_kernel:
                    kernel.shutdown_kernel(now=True)
        target = self._executed_path(nb_path)
        target.parent.mkdir(parents=True, exist_ok=True)
        _lab("store").store_text(target, nbformat.writes(notebook))
        recording = _recording()
        if recording is not None:  # into the recording being made by make record
            recording.keep_notebook(Path(nb_path), target)

    def _notebook_jobs(self, config, jupyter) -> list[tuple[str, Callable[[], None]]]:
        """The notebooks this build would execute when its pages render them (the default language's: a translation
        takes its twin's outputs), as jobs for ``cache.prefetch`` to run beside the experiments that time nothing: each
        in its own kernel, on a core of its own, instead of one after the other once the experiments are done."""
        machines, store = _lab("machines"), _lab("store")
        if jupyter is None or not jupyter.config["execute"] or machines.frozen() or store.deferred():
            return []
        recording = _recording()
        jobs = []
        for pattern in jupyter.config["include"]:
            for source in sorted(Path(config.docs_dir).glob(pattern)):
                path = str(source)
                if _twin(path) is not None or self._carried(path, recording) is not None or self._executed_already(path, recording):
                    continue

                def run(path: str = path) -> None:
                    self._execute(path, jupyter.config["kernel_name"], allow_errors=jupyter.config["allow_errors"])
                    self.executed_now.add(path)

                jobs.append((f"notebook {source.name}", run))
        return jobs

    def _translated(self, source: str, twin: Path, execute_twin) -> Path:
        """The executed copy of translated notebook ``source``: its cells (Markdown and alt texts in its language)
        with the outputs of ``twin``'s executed copy, matched cell by cell. Its code cells must be the twin's, so
        the notebook runs once, in the default language, whatever the number of languages."""
        import nbformat

        target = self._executed_path(source)
        if target.exists():
            return target
        executed_twin = self._executed_path(str(twin))
        if not executed_twin.exists():
            execute_twin()
        executed = nbformat.read(executed_twin, as_version=4)
        machines = _lab("machines")
        try:
            notebook = machines.with_outputs_of(source, executed)
        except machines.CodeCellsDiffer as error:
            raise PluginError(f"{source}: its code cells must be those of {twin} (they run once, there): {error}") \
                from None
        notebook.metadata.update({key: value for key, value in executed.metadata.items()
                                  if key in ("kernelspec", "language_info")})
        target.parent.mkdir(parents=True, exist_ok=True)
        _lab("store").store_text(target, nbformat.writes(notebook))
        return target

    def _configure_notebooks(self, config, jupyter, language: str) -> None:
        from mkdocs_jupyter import plugin as jupyter_plugin

        cache, environment, machines = _lab("cache"), _lab("environment"), _lab("machines")
        # A frozen build renders the leading recorded machine's notebooks: never this machine's cached renderings.
        keyed = {"frozen": machines.primary().manifest} if machines.frozen() else environment.fingerprint()
        digest = hashlib.sha256(json.dumps(keyed, sort_keys=True).encode()).hexdigest()
        folder = _lab("store").cache_dir().parent / "notebooks" / digest[:16]
        # One rendering cache per language: mkdocs-jupyter evicts, after each build, what that build did not use, and
        # mkdocs-static-i18n builds each language on its own.
        pages = folder if language == _lab("i18n").DEFAULT else folder / f"pages-{language}"
        jupyter.config["cache_dir"] = str(pages)
        self.executed_dir = folder / "executed"
        self.reexecute = self.builds == 1 and cache.refresh_mode() == "all"
        # No rendering cache when make record renders what it records, nor under make serve (store.deferred), which
        # renders a notebook from the recorded copy until this machine has executed it: a rendering kept in
        # mkdocs-jupyter's cache (keyed by the source alone) would outlive that switch, and the measuring build, which
        # reads the same cache, would take it for this machine's and find no executed copy beside it
        if self.reexecute or _recording() is not None or _lab("store").deferred():
            jupyter.config["cache"] = False
        # mkdocs-jupyter's own converter, wrapped for this plugin (a test's plugin after another's: the latest)
        original = getattr(jupyter_plugin.convert.nb2html, "pitfalls_original", jupyter_plugin.convert.nb2html)
        jupyter_plugin.convert.nb2html = self._keep_executed(original)
        _unicode_notebook_anchors(jupyter_plugin)
        # A rendered page cached without its executed notebook (an older cache) is rendered again.
        docs = Path(config.docs_dir)
        for pattern in jupyter.config["include"]:
            for source in docs.glob(pattern):
                if not self._executed_path(str(source)).exists():
                    key = jupyter_plugin._compute_cache_key(str(source), jupyter.config, True)
                    jupyter_plugin._get_cache_path(str(pages), key).unlink(missing_ok=True)

    def on_config(self, config):
        language, first, _ = _build_language(config)
        if self.builds and first:  # a rebuild (mkdocs serve): the code as it is now; not between languages
            found, checked = _lab("code").memo(), _lab("store").memo()
            purge_snippets()
            _lab("code").adopt(found)  # what reached what, kept where the modules read as they did
            _lab("store").adopt(checked)  # the recordings checked, kept while their files are as they were
        self.builds += 1
        if first:
            self.contradicted.clear()
        context = _lab("context")
        # recorded machines' tables are drawn with the page's Markdown extensions
        markdown = ((list(config.markdown_extensions), dict(config.mdx_configs))
                    if getattr(config, "markdown_extensions", None) is not None else context.Build().markdown)
        context.begin(context.Build(language=language, refreshed=self.refreshed, markdown=markdown))
        if first:
            self.executed_now.clear()
        jupyter = config.plugins.get("mkdocs-jupyter")
        if jupyter is not None:
            self._configure_notebooks(config, jupyter, language)
        if first and getattr(config, "docs_dir", None):  # the experiments of the topics its pages present, the timing
            try:  # experiments' processes taking turns, then the others and the notebooks, before any page runs
                _lab("cache").prefetch(topic_experiments(config.docs_dir), beside=self._notebook_jobs(config, jupyter))
            except _lab("replicas").ReplicaError as error:  # PITFALLS_PROCESSES=two: said, not a traceback
                raise PluginError(str(error)) from None
        # A page's usage example imports a recipe by its bare name, as a reader's script does (``from step_budget
        # import …``): the finder loads it from the recipe's file, ahead of any installed package of that name
        if not any(getattr(finder, "pitfalls_recipes", False) for finder in sys.meta_path):
            sys.meta_path.insert(0, RecipeFinder())
        if getattr(config, "repo_url", None):
            config.edit_uri = f"edit/{os.environ.get('REPO_BRANCH', 'main')}/docs/"
        logger = logging.getLogger(_EXEC_LOGGER)
        if _filter not in logger.filters:
            logger.addFilter(_filter)
        # `mkdocs -q` raises the "mkdocs" logger to ERROR, and a warning below that level is never made: this logger
        # keeps its own level, so a failing block is heard (and shown) however the site is built.
        logger.setLevel(logging.WARNING)
        if first:
            self.pending_notebooks.clear()
            if "zh" in _languages(config)[0]:
                problem = _lab("fonts").problem()
                if problem:
                    raise PluginError(problem)
        return config

    @event_priority(-200)  # after mkdocs-static-i18n, which rebuilds the file list for each language
    def on_files(self, files, config):
        """The recipes, downloadable from the site as they are in snippets/ (``recipes/<name>``, under each
        language's folder), and the notebooks as pages in every language (mkdocs-static-i18n re-creates the files
        mkdocs-jupyter marked as pages, which would publish a notebook's source instead of rendering it:
        ultrabug/mkdocs-static-i18n#198)."""
        from mkdocs.structure.files import File

        language, *_ = _build_language(config)
        prefix = "" if language == _lab("i18n").DEFAULT else f"{language}/"
        for name in RECIPES:  # as they are in snippets/: the recipes that ran
            files.append(File.generated(config, f"{prefix}recipes/{name}",
                                        content=published_recipe((RECIPE_DIR / name).read_text(encoding="utf-8"),
                                                                 _project_url(config))))
        jupyter = config.plugins.get("mkdocs-jupyter")
        if jupyter is not None:
            from mkdocs_jupyter.plugin import NotebookFile

            for file in list(files):
                # only .py files: should_include reads every .md page with jupytext to decide
                if (file.src_uri.endswith(".py") and not isinstance(file, NotebookFile)
                        and jupyter.should_include(file)):
                    files.remove(file)
                    files.append(NotebookFile(file, **config))
        plugin = config.plugins.get("i18n")
        if plugin is not None and plugin.current_language in getattr(plugin, "i18n_files_per_language", {}):
            # the i18n sitemap lists the pages it saw: the notebooks are pages again only from here on
            plugin.i18n_files_per_language[plugin.current_language] = files.documentation_pages()
        return files

    def on_post_page(self, output, page, config):
        """Beside a notebook's page and its ``.py`` source: the executed ``.ipynb``, with this build's outputs.

        The ``<link rel="alternate" hreflang>`` tags Material writes for the language menu are left out: Material's
        script fetches a ``sitemap.xml`` beside each (``zh/seeding-order/sitemap.xml``), which does not exist, and
        the site's one ``sitemap.xml`` already gives every page's alternates (``xhtml:link hreflang``)."""
        output = _ALTERNATE_LINK.sub("", output)
        # the Versions page's matrix: every page of this build has been rendered (mkdocs renders them all before it
        # writes any), so every claim has been said
        output = _lab("versions").filled(output)
        language = _lab("i18n").language_of(page.file.src_path)
        if language != _lab("i18n").DEFAULT:
            output = theirs_translated(output, language)
            if page.url.startswith(f"{language}/"):  # its pages live in <language>/, beside the default language's
                output = _search_base(output, language)
        if "notebooks" in page.file.src_path:  # nbconvert percent-encodes a Unicode heading's id (and its ¶ link)
            output = _ENCODED_ANCHOR.sub(lambda m: f'{m.group(1)}{unquote(m.group(2))}"', output)
        source = page.file.abs_src_path
        if self.executed_dir is not None and source and source.endswith(".py") and "notebooks" in page.file.src_path:
            executed = self._executed_path(source)
            if executed.exists():
                target = Path(page.file.abs_dest_path).parent / f"{Path(source).stem}.ipynb"
                target.parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(executed, target)
            else:
                raise PluginError(f"page docs/{page.file.src_path}: its executed notebook is missing from {self.executed_dir}")
        return output

    def on_page_markdown(self, markdown, page, **kwargs):
        i18n = _lab("i18n")
        build = _lab("context").current()
        build.page = page.file.src_path
        build.language = i18n.language_of(page.file.src_path)
        build.collect_contradictions = True
        written = markdown if build.language == i18n.DEFAULT else join_cjk_lines(markdown)
        meta = getattr(page, "meta", None) or {}
        if meta.get("names"):
            source = getattr(page.file, "content_string", None)
            rendered = render_names(written, page.file.src_path, meta, source if isinstance(source, str) else None)
            return set_aside(rendered, page.file.src_path)
        return written

    def on_page_content(self, html, page, **kwargs):
        build = _lab("context").current()
        build.page = None
        source = page.file.src_path
        html = put_back(html, source)
        # the Versions page links each claim to its page by this title (the navigation's, in the page's language)
        build.titles[source] = getattr(page, "title", None) or source
        # Every experiment a page runs has its code shown on that page (provenance.present / code_panel).
        ran = build.ran.get(source, set())
        shown = build.shown.get(source, set())
        for name in sorted(ran - shown):
            fail(source, f"runs experiment {name} but never shows its code: print present(result, renderer) "
                         "or code_panel(result) from snippets.lab beside what it produced")
        # make translations collects the texts without a translation for the catalogues, and says them at the end
        missing = {} if os.environ.get(TRANSLATIONS_ENV) else build.missing
        for (language, text), pages in sorted(missing.items()):
            waiting = _lab("i18n").pending(language).get(text)
            if source in pages and waiting:
                fail(source, f"no {language} translation for {text!r}: its entry {waiting}")
                pages.discard(source)
            elif source in pages:
                fail(source, f"no {language} translation for {text!r}: add it to the {language}.po catalogue beside the "
                             "code that prints it, or run `make translations`, which adds it there (with the translation "
                             "of similar English, flagged fuzzy, where it finds one) for you to translate or check")
                pages.discard(source)
        for (language, text), pages in sorted(build.twice.items()):
            if source in pages:
                fail(source, f"{text!r} is already a {language} translation and was handed to t() again: translate "
                             "the English template once, then fill in its fields")
                pages.discard(source)
        failures = build.failures.pop(source, []) + build.failures.pop("", [])
        if failures:  # before the page is written: no traceback reaches the site or its search index
            raise PluginError(f"page docs/{source} failed ({len(failures)} problem{'s' if len(failures) > 1 else ''}"
                              "); nothing was published:\n" + "\n".join(f"  - {line}" for line in failures))
        for claim in build.contradicted:
            entry = self.contradicted.setdefault((claim["check"], claim["measured"]), {**claim, "pages": []})
            entry["pages"].append((claim["page"], claim["sentence"]))
        build.contradicted.clear()
        html = with_measuring_note(html, build.pending.get(source))
        html = with_conditions_note(html, build.conditions.pop(source, None))
        if build.language == "en":
            html = _lab("claims").capitalised(html)
        elif build.language == "zh":
            html = close_cjk_spacing(html)
        html = _with_legend(html)
        # The panels' sources leave the page (a phone parses the page before it can respond): see provenance.defer.
        from mkdocs.utils import get_relative_url

        provenance = _lab("provenance")
        html, bodies = provenance.defer(provenance.listings(html), get_relative_url(f"{CODE_FOLDER}/", page.url))
        _lab("context").current().code.update(bodies)
        return collapsed(in_parts(sized_code_blocks(html)), (getattr(page, "meta", None) or {}).get("collapsed"), source)

    def on_env(self, env, config, files):
        env.bytecode_cache = self.templates
        return env

    def on_post_build(self, config):
        """Write the code panels' sources, each a page of its own styled like the site, under ``code/``; take the
        palette-switching rule of Material's palette stylesheet to the toggle (``switching_rule_keyed_to_the_toggle``)."""
        site = Path(config.site_dir)
        switching_rule_keyed_to_the_toggle(site)
        if not getattr(config, "site_url", None):  # a sitemap lists absolute addresses: with no SITE_URL there is none to give
            for sitemap in [*site.glob("sitemap.xml*"), *site.glob("*/sitemap.xml*")]:
                sitemap.unlink()
        sheets = sorted(site.glob("assets/stylesheets/main.*.min.css")) + sorted(
            site.glob("assets/stylesheets/palette.*.min.css")) + [site / css for css in config.extra_css]
        hrefs = [f"../{sheet.relative_to(site).as_posix()}" for sheet in sheets if sheet.is_file()]
        provenance = _lab("provenance")
        (site / CODE_FOLDER).mkdir(parents=True, exist_ok=True)
        language, _, last = _build_language(config)
        i18n = _lab("i18n")
        build = _lab("context").current()
        build.language = language
        for key, body in build.code.items():
            (site / CODE_FOLDER / f"{key}.html").write_text(provenance.fragment_document(
                body, title=i18n.t("Code behind a result — {site}", site=config.site_name), stylesheets=hrefs),
                encoding="utf-8")
        if _lab("store").deferred():  # what make serve's measuring build has to measure, and how long it took there
            pending = {name: seconds for page in build.pending.values() for name, seconds in page.items()}
            _lab("store").store_text(_lab("store").pending_path(), json.dumps(
                {"experiments": pending, "notebooks": sorted(self.pending_notebooks)}, sort_keys=True))
        if _whole_site(config):  # what the build measured before the pages ran, each run by a page
            idle = sorted(topic_experiments(config.docs_dir) - set().union(*build.ran.values()))
            if idle:
                raise PluginError(f"{len(idle)} experiment{'s' if len(idle) > 1 else ''} of the pages' topics that no "
                                  "page runs, measured for nothing: show each on a page, or remove it: " + ", ".join(idle))
        if language != i18n.DEFAULT and os.environ.get(TRANSLATIONS_ENV):  # make translations: what the pages printed
            missing = sorted(text for lang, text in build.missing if lang == language)
            _lab("store").store_text(Path(os.environ[TRANSLATIONS_ENV]), json.dumps(
                {"language": language, "used": sorted(build.used), "missing": missing}, ensure_ascii=False))
        elif language != i18n.DEFAULT and _whole_site(config):
            left = i18n.unused(language, build.used)
            if left:  # an entry no page printed: a template that drifted from its English, or one nobody uses
                raise PluginError(f"{len(left)} {language} catalogue entr{'ies' if len(left) > 1 else 'y'} no page used "
                                  "(run `make translations`, which drops them, or give the entry a translator comment "
                                  "'# unused: why' in its catalogue): " + "; ".join(repr(key) for key in left))
        if language != i18n.DEFAULT and not os.environ.get(TRANSLATIONS_ENV):
            waiting = i18n.pending(language)
            if waiting:  # the usual gettext workflow: nothing fuzzy or untranslated is published
                raise PluginError(f"{len(waiting)} {language} catalogue entr{'ies' if len(waiting) > 1 else 'y'} to "
                                  "check: " + "; ".join(f"{key!r} {state}" for key, state in waiting.items()))
        if last:  # the timing workers measured what this build needed: none outlives it (mkdocs serve goes on)
            replicas = sys.modules.get("snippets.lab.replicas")
            if replicas is not None:
                replicas.close_all()
        if last and self.contradicted:
            failures = list(self.contradicted.values())
            self.contradicted.clear()
            message = "\n".join(
                f"Claim contradicted: check {claim['check']} ({claim['condition']}) does not hold — measured: "
                f"{claim['measured']} — stated on " + "; ".join(f"page docs/{page}: {sentence!r}"
                                                                 for page, sentence in claim["pages"])
                for claim in failures)
            if os.environ.get("PITFALLS_RECORD"):
                # make record: what was measured is recorded all the same. A claim that does not hold on this machine
                # (or this torch release) is then shown failing there, in the claim's tip and on the Torch versions
                # page, by every build that reads the recording; only a build's own results fail it. Said on stderr,
                # not through mkdocs' logger, which would make the strict build fail on the warning.
                print(f"{message}\nmake record: recorded all the same; builds that read this recording show the claim "
                      f"failing on it", file=sys.stderr)
            else:
                raise PluginError(message)

    def on_build_error(self, error, **kwargs):
        # An exception escaped a page's Markdown conversion (for example a missing --8<-- include):
        # say which page, so the traceback that follows has a name.
        page = _lab("context").current().page
        if page:
            logging.getLogger("mkdocs.plugins.pitfalls").error(
                "Building page docs/%s failed: %s: %s", page, type(error).__name__, error)

