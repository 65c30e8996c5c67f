"""The site's MkDocs plugin in a two-language build, called the way MkDocs and mkdocs-static-i18n call it, without a build:
which language is being built and whether it is the first or the last, what each language's build starts
afresh and what it keeps, the notebooks' anchors and alternate links, the remembered bootstrap intervals, and
the Chinese pages' line joining. (``tests/test_i18n.py`` runs a build's claims and notebooks; the site tests
build both languages.)"""

from __future__ import annotations

import functools
import json
import re
from pathlib import Path
from types import SimpleNamespace

import pytest

from snippets.lab import cache, claims, i18n, mkdocs_hook as hook
from snippets.lab import context


class _Plugins(dict):
    """MkDocs' plugin collection: a dict by name."""


def _i18n(current, default="en", build=("en", "zh")):
    return SimpleNamespace(current_language=current, default_language=default, build_languages=list(build))


def _config(plugin=None, **more):
    plugins = _Plugins(i18n=plugin) if plugin is not None else _Plugins()
    return SimpleNamespace(plugins=plugins, **more)


# --- which language, first or last -----------------------------------------------------------------------------

def test_without_the_i18n_plugin_a_build_is_the_default_language_first_and_last():
    for config in (_config(), SimpleNamespace(), None):
        assert hook._languages(config) == (["en"], None)
        assert hook._build_language(config) == ("en", True, True)


def test_before_the_plugin_chooses_a_language_the_build_is_the_default_one_first():
    config = _config(_i18n(None, default="zh"))
    assert hook._languages(config) == (["zh", "en"], None)
    assert hook._build_language(config) == ("zh", True, True)


def test_the_default_language_is_built_first_and_the_others_after_it():
    english, chinese = _config(_i18n("en")), _config(_i18n("zh"))
    assert hook._languages(chinese) == (["en", "zh"], "zh")
    assert hook._build_language(english) == ("en", True, False)
    assert hook._build_language(chinese) == ("zh", False, True)


def test_the_last_language_is_the_last_after_the_default_whatever_order_they_are_listed_in():
    assert hook._build_language(_config(_i18n("en", build=("zh", "en")))) == ("en", True, False)
    assert hook._build_language(_config(_i18n("zh", build=("zh", "en")))) == ("zh", False, True)
    assert hook._build_language(_config(_i18n("zh", build=("en", "zh", "fr")))) == ("zh", False, False)
    assert hook._build_language(_config(_i18n("fr", build=("en", "zh", "fr")))) == ("fr", False, True)
    assert hook._build_language(_config(_i18n("zh", default="zh", build=("en", "zh")))) == ("zh", True, False)


# --- what each language's build starts afresh -------------------------------------------------------------------

def test_the_second_language_keeps_the_code_as_imported_and_the_first_ones_contradictions(fresh_hook, monkeypatch):
    purged = []
    monkeypatch.setattr(hook, "purge_snippets", lambda: purged.append(1))
    plugin = _i18n("en")
    config = _config(plugin)
    fresh_hook._session.contradicted[("c", "m")] = {"pages": []}
    hook._lab("context").current().code["k"] = "body"
    assert fresh_hook.on_config(config) is config
    assert purged == [] and fresh_hook._session.builds == 1, "the first build of a process imports nothing afresh"
    assert fresh_hook._session.contradicted == {}, "a new build forgets the last build's contradictions"
    assert i18n.language() == "en" and hook._lab("context").current().code == {}
    fresh_hook._session.contradicted[("c", "m")] = {"pages": [("a.md", "s")]}
    hook._lab("context").current().code["k"] = "body"
    plugin.current_language = "zh"
    fresh_hook.on_config(config)
    assert purged == [] and fresh_hook._session.builds == 2, "between languages the code stays as imported"
    assert fresh_hook._session.contradicted == {("c", "m"): {"pages": [("a.md", "s")]}}, "raised once, after the last language"
    assert i18n.language() == "zh" and hook._lab("context").current().code == {}, "each language writes its own panels"
    plugin.current_language = "en"
    fresh_hook.on_config(config)
    assert purged == [1] and fresh_hook._session.contradicted == {}, "a rebuild (mkdocs serve) imports the code as it is now"
    assert i18n.language() == "en"


def test_the_notebook_pages_are_cached_apart_per_language(fresh_hook, tmp_path, monkeypatch):
    from mkdocs_jupyter import plugin as jupyter_plugin
    from mkdocs_jupyter.plugin import Plugin

    monkeypatch.setattr(jupyter_plugin, "TocExtension", jupyter_plugin.TocExtension)
    monkeypatch.setattr(jupyter_plugin.convert, "slugify", jupyter_plugin.convert.slugify)
    jupyter = Plugin()
    errors, _ = jupyter.load_config({"include": ["notebooks/*.py"], "execute": True})
    assert not errors
    docs = tmp_path / "docs"
    (docs / "notebooks").mkdir(parents=True)
    folders = {}
    for language in ("en", "zh"):
        config = _config(_i18n(language), docs_dir=str(docs))
        config.plugins["mkdocs-jupyter"] = jupyter
        fresh_hook._configure_notebooks(config, jupyter, language)
        folders[language] = Path(jupyter.config["cache_dir"])
    assert folders["zh"] == folders["en"] / "pages-zh"
    assert fresh_hook._session.executed_dir == folders["en"] / "executed", "one execution, shared by the languages"


# --- notebooks in Chinese ---------------------------------------------------------------------------------------

def test_notebook_headings_get_unicode_anchors(monkeypatch):
    from markdown.extensions.toc import slugify_unicode
    from mkdocs_jupyter import convert

    monkeypatch.setattr(convert, "slugify", convert.slugify)
    plugin_module = SimpleNamespace(TocExtension=None)
    hook._unicode_notebook_anchors(plugin_module)
    assert convert.slugify("问题 1：复现") == "问题-1复现"
    assert convert.slugify("Question 1, reproduced") == "question-1-reproduced"
    assert isinstance(plugin_module.TocExtension, functools.partial)
    assert plugin_module.TocExtension.keywords == {"slugify": slugify_unicode}
    assert plugin_module.TocExtension().getConfig("slugify") is slugify_unicode


def _page(src_path: str, abs_src_path: str | None = None):
    url = src_path.removesuffix(".md").removesuffix(".py").removesuffix("index") + "/"
    return SimpleNamespace(file=SimpleNamespace(src_path=src_path, abs_src_path=abs_src_path, abs_dest_path="/x"),
                           url=url.replace("//", "/").lstrip("/"))


def test_alternate_links_leave_every_page_and_notebook_anchors_are_unquoted(fresh_hook, monkeypatch):
    monkeypatch.setattr(fresh_hook._session, "executed_dir", None)
    head = ('<head>\n  <link rel="alternate" href="/" hreflang="en">\n  <link rel="alternate" href="/zh/" '
            'hreflang="zh">\n<title>t</title>')
    body = ('<h2 id="%E9%97%AE%E9%A2%98">问题<a href="#%E9%97%AE%E9%A2%98">¶</a></h2>'
            '<a href="https://x.org/a%20b">x</a><a href="#plain">p</a>')
    page = head + body
    notebook = fresh_hook.on_post_page(page, _page("zh/notebooks/question_steps.py"), None)
    assert notebook == ('<head>\n<title>t</title><h2 id="问题">问题<a href="#问题">¶</a></h2>'
                        '<a href="https://x.org/a%20b">x</a><a href="#plain">p</a>')
    other = fresh_hook.on_post_page(page, _page("zh/update-steps.md"), None)
    assert other == "<head>\n<title>t</title>" + body, "a page's own anchors are left as written"


def test_what_plugins_write_in_english_is_translated_on_a_chinese_page_and_it_searches_its_own_index(fresh_hook, monkeypatch):
    monkeypatch.setattr(fresh_hook._session, "executed_dir", None)
    page = ('<script id="__config" type="application/json">{"annotate": null, "base": "../..", "features": []}'
            '</script><h2 id="a">甲<a class="headerlink" href="#a" title="Permanent link">¶</a></h2>'
            '<a aria-label="上一页: 首页" href="../">x</a><clipboard-copy aria-label="Copy to Clipboard" for="c">'
            '<span class="notice" hidden="">Copied!</span></clipboard-copy>'
            '<div class="jp-InputPrompt jp-InputArea-prompt">In\xa0[3]:</div><a title="not in any catalogue">y</a>')
    shown = fresh_hook.on_post_page(page, _page("zh/seeding-order.md"), None)
    assert '"base": "../../zh/"' in shown, "a Chinese page searches zh/search/search_index.json"
    assert 'title="永久链接"' in shown and 'aria-label="上一页：首页"' in shown
    assert 'aria-label="复制到剪贴板"' in shown and ">已复制</span>" in shown and "输入 [3]：" in shown
    assert 'title="not in any catalogue"' in shown, "an attribute no catalogue translates is left as it is"
    english = fresh_hook.on_post_page(page, _page("seeding-order.md"), None)
    assert english == page, "an English page is left as its plugins wrote it"


def test_the_search_index_is_split_by_language(tmp_path):
    from snippets.lab import search_index

    (tmp_path / "search").mkdir()
    index = {"config": {"lang": ["en", "zh"]}, "docs": [{"location": "", "text": "a — b"},
                                                        {"location": "zh/", "text": "甲"},
                                                        {"location": "zh/x/#b", "text": "乙"}]}
    (tmp_path / "search" / "search_index.json").write_text(json.dumps(index), encoding="utf-8")
    search_index.split(tmp_path, ["zh"])
    root = json.loads((tmp_path / "search" / "search_index.json").read_text(encoding="utf-8"))
    chinese = json.loads((tmp_path / "zh" / "search" / "search_index.json").read_text(encoding="utf-8"))
    assert [d["location"] for d in root["docs"]] == [""] and root["config"] == index["config"]
    assert [d["location"] for d in chinese["docs"]] == ["", "x/#b"]
    assert "甲" in (tmp_path / "zh" / "search" / "search_index.json").read_text(encoding="utf-8"), \
        "Chinese as it is, not escaped: a third of the size"
    assert "a — b" in (tmp_path / "search" / "search_index.json").read_text(encoding="utf-8")
    search_index.split(tmp_path, ["zh"])  # again, on an index of one language: nothing changes
    assert json.loads((tmp_path / "zh" / "search" / "search_index.json").read_text(encoding="utf-8")) == chinese
    (tmp_path / "search" / "search_index.json").write_text(json.dumps({"config": {}}), encoding="utf-8")
    search_index.split(tmp_path, ["zh"])  # an index without pages: nothing to split
    assert json.loads((tmp_path / "search" / "search_index.json").read_text(encoding="utf-8")) == {"config": {}}
    (tmp_path / "search" / "search_index.json").write_text(json.dumps(index), encoding="utf-8")
    (tmp_path / "zh" / "search" / "search_index.json").unlink()
    search_index.split(tmp_path, ["zh"])  # its folder there already: written into it
    assert json.loads((tmp_path / "zh" / "search" / "search_index.json").read_text(encoding="utf-8")) == chinese
    (tmp_path / "search" / "search_index.json").unlink()
    search_index.split(tmp_path, ["zh"])  # no index at all (search off): nothing to do


def _twins(hook, tmp_path, monkeypatch) -> Path:
    """docs/notebooks/q.py and its Chinese twin, same code; ``hook`` keeps executed copies under tmp_path/executed."""
    monkeypatch.setattr(hook._session, "executed_dir", tmp_path / "executed")
    docs = tmp_path / "docs"
    (docs / "zh" / "notebooks").mkdir(parents=True)
    (docs / "notebooks").mkdir()
    (docs / "notebooks" / "q.py").write_text("# %% [markdown]\n# Title\n# %%\nprint(1)\n", encoding="utf-8")
    (docs / "zh" / "notebooks" / "q.py").write_text("# %% [markdown]\n# 标题\n# %%\nprint(1)\n", encoding="utf-8")
    return docs


def test_a_translated_notebooks_executed_copy_is_named_by_its_language_and_its_twins_copy(fresh_hook, tmp_path, monkeypatch):
    docs = _twins(fresh_hook, tmp_path, monkeypatch)
    english = fresh_hook._executed_path(str(docs / "notebooks" / "q.py"))
    chinese = fresh_hook._executed_path(str(docs / "zh" / "notebooks" / "q.py"))
    assert english.parent == chinese.parent == tmp_path / "executed"
    assert english.name.startswith("q-") and chinese.name.startswith("q-zh-") and chinese.suffix == ".ipynb"
    (docs / "notebooks" / "q.py").write_text("# %% [markdown]\n# Title\n# %%\nprint(2)\n", encoding="utf-8")
    assert fresh_hook._executed_path(str(docs / "zh" / "notebooks" / "q.py")) != chinese, \
        "new English outputs make a new Chinese copy"
    assert hook._twin(str(docs / "en" / "notebooks" / "q.py")) is None, "the default language has no twin"
    assert hook._twin("notebooks/q.py") is None and hook._twin("q.py") is None
    assert hook._twin("zh/notebooks/q.py") == Path("notebooks/q.py")
    assert re.fullmatch(r"q-zh-[0-9a-f]{16}\.ipynb", chinese.name) and re.fullmatch(r"q-[0-9a-f]{16}\.ipynb",
                                                                                   english.name)


def test_the_converter_renders_a_translated_notebook_from_its_twins_one_execution(fresh_hook, tmp_path, monkeypatch):
    import nbformat

    docs = _twins(fresh_hook, tmp_path, monkeypatch)
    executions, rendered = [], []

    class Client:  # stands for nbclient's
        def __init__(self, notebook, **options):
            self.notebook = notebook

        def execute(self, **kernel):
            executions.append(1)
            self.notebook.cells[1].outputs = [nbformat.v4.new_output("stream", name="stdout", text="1\n")]
            self.notebook.metadata.update(language_info={"name": "python"}, kernelspec={"name": "k"},
                                          papermill={"not": "kept"})

    import nbclient

    monkeypatch.setattr(nbclient, "NotebookClient", Client)
    monkeypatch.setattr(fresh_hook._session, "reexecute", False)

    def original(path, **options):
        rendered.append((Path(path).name, options))
        return "<html>"

    convert = fresh_hook._keep_executed(original)
    assert convert(str(docs / "zh" / "notebooks" / "q.py"), execute=True, kernel_name="k", theme="t") == "<html>"
    assert executions == [1], "the Chinese notebook's outputs come from one execution of the English one"
    names = [name for name, _ in rendered]
    assert names[-1].startswith("q-zh-")
    assert all(options == {"execute": False, "kernel_name": "k", "theme": "t"} for _, options in rendered)
    merged = nbformat.read(tmp_path / "executed" / names[-1], as_version=4)
    assert merged.cells[0].source == "标题" and merged.cells[1].outputs[0]["text"] == "1\n"
    assert merged.metadata["language_info"] == {"name": "python"} and merged.metadata["kernelspec"] == {"name": "k"}
    assert "papermill" not in merged.metadata
    convert(str(docs / "zh" / "notebooks" / "q.py"), execute=True, kernel_name="k", theme="t")
    assert executions == [1], "a second build reuses the executed copies"


# --- pages in Chinese -------------------------------------------------------------------------------------------

def test_a_chinese_page_reads_as_one_paragraph_an_english_one_is_left_as_written(fresh_hook, monkeypatch):
    monkeypatch.setattr(context.current(), "collect_contradictions", False)
    markdown = "第一行，\n第二行。\n"
    assert fresh_hook.on_page_markdown(markdown, _page("zh/seeding-order.md")) == "第一行，第二行。\n"
    assert i18n.language() == "zh" and context.current().page == "zh/seeding-order.md"
    assert context.current().collect_contradictions is True, "claims are collected during a build, raised at its end"
    assert fresh_hook.on_page_markdown(markdown, _page("seeding-order.md")) == markdown
    assert i18n.language() == "en"


@pytest.mark.parametrize("markdown, joined", [
    ("甲\n乙", "甲乙"),
    ("甲。\n“乙”", "甲。“乙”"),
    ("（甲）\n（乙）", "（甲）（乙）"),
    ("甲\n）", "甲\n）"),  # a closing bracket never starts a joined line
    ("甲！\n乙", "甲！乙"),
    ("甲\n\n乙", "甲\n\n乙"),
    ("a\n乙", "a\n乙"),
    ("甲\nb", "甲\nb"),
    ("甲\n  ```\n  甲\n  乙\n  ```\n乙\n丙", "甲\n  ```\n  甲\n  乙\n  ```\n乙丙"),
    ("~~~\n甲\n乙\n~~~", "~~~\n甲\n乙\n~~~"),
    # a claim continues its sentence; a panel or figure on a line of its own stays a block
    ("甲；\n{{ say(c, \"乙\") }}\n丙", "甲；{{ say(c, \"乙\") }}丙"),
    ("甲。\n{{ code_panel(result) }}", "甲。\n{{ code_panel(result) }}"),
    ("{{ figures.fit(result) }}\n\n甲", "{{ figures.fit(result) }}\n\n甲"),
    ("甲\n乙\n```\n丙\n丁\n```\n戊\n己\n```\n庚\n辛\n```\n壬\n癸", "甲乙\n```\n丙\n丁\n```\n戊己\n```\n庚\n辛\n```\n壬癸"),
])
def test_chinese_lines_join_outside_code_only(markdown, joined):
    assert hook.join_cjk_lines(markdown) == joined


def test_each_contradicted_check_is_one_line_naming_every_page_that_states_it(fresh_hook, tmp_path, monkeypatch):
    from mkdocs.exceptions import PluginError

    for page, check, sentence in (("a.md", "p.one", "one"), ("zh/a.md", "p.one", "一"), ("a.md", "p.two", "two")):
        context.current().contradicted.append({"check": check, "condition": "x > 1", "measured": "x = 0", "page": page,
                                    "sentence": sentence})
        fresh_hook.on_page_content("<h1>T</h1>", SimpleNamespace(file=SimpleNamespace(src_path=page), url=""))
    assert context.current().contradicted == []
    with pytest.raises(PluginError) as raised:
        fresh_hook.on_post_build(_config(site_dir=str(tmp_path), extra_css=[], site_name="S"))
    assert str(raised.value) == (
        "Claim contradicted: check p.one (x > 1) does not hold — measured: x = 0 — stated on page docs/a.md: 'one'; "
        "page docs/zh/a.md: '一'\n"
        "Claim contradicted: check p.two (x > 1) does not hold — measured: x = 0 — stated on page docs/a.md: 'two'")


def test_a_missing_translation_stops_the_build_at_its_page_once(fresh_hook, monkeypatch, caplog):
    import logging

    from mkdocs.exceptions import PluginError

    monkeypatch.setattr(context.current(), "missing", {("zh", "bitwise equal"): {"zh/a.md", "zh/b.md"}})
    page = SimpleNamespace(file=SimpleNamespace(src_path="zh/a.md"), url="zh/a/")
    why = ("no zh translation for 'bitwise equal': add it to the zh.po catalogue beside the code that prints it, "
           "or run `make translations`, which adds it there (with the translation of similar English, flagged "
           "fuzzy, where it finds one) for you to translate or check")
    with caplog.at_level(logging.WARNING, logger="mkdocs.plugins.pitfalls"), pytest.raises(PluginError) as raised:
        fresh_hook.on_page_content("<h1>T</h1>", page)
    assert str(raised.value) == f"page docs/zh/a.md failed (1 problem); nothing was published:\n  - {why}"
    assert fresh_hook.on_page_content("<h1>T</h1>", page).startswith("<h1>T</h1>"), "said once, for its page"
    errors = [r.getMessage() for r in caplog.records if r.name == "mkdocs.plugins.pitfalls"]
    assert errors == [f"[page docs/zh/a.md] {why}"]
    assert context.current().missing == {("zh", "bitwise equal"): {"zh/b.md"}}, "the other page is stopped on its own build"


def test_a_contradiction_is_raised_after_the_last_language_only(fresh_hook, tmp_path, monkeypatch):
    from mkdocs.exceptions import PluginError

    plugin = _i18n("en")
    config = _config(plugin, site_dir=str(tmp_path / "site"), extra_css=[], site_name="S")
    fresh_hook._session.contradicted[("p.c", "x = 0")] = {"check": "p.c", "condition": "x > 1", "measured": "x = 0",
                                           "pages": [("a.md", "x is 0")]}
    fresh_hook.on_post_build(config)
    assert (tmp_path / "site" / "code").is_dir() and fresh_hook._session.contradicted
    plugin.current_language = "zh"
    with pytest.raises(PluginError) as raised:
        fresh_hook.on_post_build(config)
    assert str(raised.value) == ("Claim contradicted: check p.c (x > 1) does not hold — measured: x = 0 — stated on "
                                 "page docs/a.md: 'x is 0'")
    assert fresh_hook._session.contradicted == {}, "raised once"
    fresh_hook.on_post_build(config)  # nothing left to raise


def test_a_panels_page_in_chinese_is_titled_in_chinese(fresh_hook, tmp_path):
    config = _config(_i18n("zh"), site_dir=str(tmp_path / "site"), extra_css=[], site_name="S")
    hook._lab("context").current().code["k"] = "<pre>x</pre>"
    fresh_hook.on_post_build(config)
    document = (tmp_path / "site" / "code" / "k.html").read_text(encoding="utf-8")
    assert '<html lang="zh">' in document
    assert f"<title>{i18n.t_in('zh', 'Code behind a result — {site}', site='S')}</title>" in document
    assert "Code behind" not in document


@pytest.mark.parametrize(("language", "items", "joined"), [
    ("en", ["`a`", "`b`", "the backward of `c`"], "`a`, `b`, and the backward of `c`"),
    ("en", ["`a`", "`b`"], "`a` and `b`"),
    ("zh", ["`a`", "`b`", "`c` 的反向传播"], "`a`、`b` 和 `c` 的反向传播"),
    ("zh", ["甲", "乙"], "甲和乙"),
    ("zh", ["`a`"], "`a`"),
])
def test_a_list_in_a_sentence_reads_in_the_pages_language(fresh_hook, monkeypatch, language, items, joined):
    monkeypatch.setattr(context.current(), "language", language)
    assert hook._and_list(items) == joined


# --- after each language's build ----------------------------------------------------------------------------------


def _site(tmp_path, *files) -> Path:
    site = tmp_path / "site"
    for name in files:
        (site / name).parent.mkdir(parents=True, exist_ok=True)
        (site / name).write_text("x", encoding="utf-8")
    return site


def test_without_a_site_address_every_sitemap_goes_and_with_one_they_stay(fresh_hook, tmp_path):
    """A sitemap lists absolute addresses: a build that knows none (no SITE_URL) publishes none, in any language."""
    maps = ["sitemap.xml", "sitemap.xml.gz", "zh/sitemap.xml", "zh/sitemap.xml.gz"]
    site = _site(tmp_path, *maps, "zh/other.xml", "feed.xml")
    fresh_hook.on_post_build(_config(site_dir=str(site), extra_css=[], site_name="S"))
    assert sorted(p.relative_to(site).as_posix() for p in site.rglob("*.xml*")) == ["feed.xml", "zh/other.xml"]
    site = _site(tmp_path, *maps)
    fresh_hook.on_post_build(_config(site_dir=str(site), extra_css=[], site_name="S", site_url="https://example.org/"))
    assert all((site / name).exists() for name in maps)


def test_make_serves_first_build_lists_what_it_showed_from_the_recording(fresh_hook, tmp_path, monkeypatch):
    store = hook._lab("store")
    monkeypatch.setattr(store, "pending_path", lambda: tmp_path / "pending.json")
    context.current().pending.update({"a.md": {"seeding.y": 1.0}, "zh/a.md": {"seeding.y": 1.0, "loader.x": 3.5}})
    fresh_hook._session.pending_notebooks.update({"docs/notebooks/b.py", "docs/notebooks/a.py"})
    config = _config(site_dir=str(tmp_path / "site"), extra_css=[], site_name="S")
    fresh_hook.on_post_build(config)
    assert not (tmp_path / "pending.json").exists(), "a build that is not make serve's first lists nothing"
    monkeypatch.setenv("PITFALLS_DEFER", "1")
    fresh_hook.on_post_build(config)
    assert (tmp_path / "pending.json").read_text(encoding="utf-8") == json.dumps(  # keys sorted: the same file
        {"experiments": {"loader.x": 3.5, "seeding.y": 1.0}, "notebooks": ["docs/notebooks/a.py", "docs/notebooks/b.py"]})


def test_make_translations_is_told_what_a_language_used_and_lacked_and_nothing_stops_it(fresh_hook, tmp_path,
                                                                                        monkeypatch):
    out = tmp_path / "zh.json"
    monkeypatch.setenv(hook.TRANSLATIONS_ENV, str(out))
    monkeypatch.setattr(i18n, "pending", lambda language: {"fuzzy one": "is fuzzy"})  # make translations checks them
    build = context.current()
    build.used.update({"b", "a"})
    build.missing.update({("zh", "y 的"): {"zh/a.md"}, ("zh", "x"): {"zh/b.md"}, ("fr", "z"): {"fr/a.md"}})
    fresh_hook.on_post_build(_config(_i18n("en"), site_dir=str(tmp_path / "site"), extra_css=[], site_name="S"))
    assert not out.exists(), "the default language has no catalogue"
    fresh_hook.on_post_build(_config(_i18n("zh"), site_dir=str(tmp_path / "site"), extra_css=[], site_name="S"))
    assert out.read_text(encoding="utf-8") == json.dumps(
        {"language": "zh", "used": ["a", "b"], "missing": ["x", "y 的"]}, ensure_ascii=False)


def _whole_site_config(language: str, tmp_path) -> SimpleNamespace:
    return _config(_i18n(language), site_dir=str(tmp_path / "site"), extra_css=[], site_name="S",
                   docs_dir=str(Path(hook.__file__).resolve().parents[2] / "docs"))


def test_the_whole_site_shows_every_experiment_it_measured(fresh_hook, tmp_path, monkeypatch):
    from mkdocs.exceptions import PluginError

    every = hook.topic_experiments(_whole_site_config("en", tmp_path).docs_dir)
    monkeypatch.setattr(context.current(), "ran", {"a.md": every - {"seeding.split_order"}, "b.md": set()})
    with pytest.raises(PluginError) as raised:
        fresh_hook.on_post_build(_whole_site_config("en", tmp_path))
    assert str(raised.value) == ("1 experiment of the pages' topics that no page runs, measured for nothing: show each "
                                 "on a page, or remove it: seeding.split_order")
    monkeypatch.setattr(context.current(), "ran", {"a.md": every - {"seeding.split_order", "loader.question_timing"}})
    with pytest.raises(PluginError, match=r"^2 experiments of the pages' topics that no page runs, .*: "
                                          r"loader\.question_timing, seeding\.split_order$"):
        fresh_hook.on_post_build(_whole_site_config("en", tmp_path))
    monkeypatch.setattr(context.current(), "ran", {"a.md": every})
    fresh_hook.on_post_build(_whole_site_config("en", tmp_path))


def test_catalogue_entries_no_page_used_or_still_to_check_stop_the_build(fresh_hook, tmp_path, monkeypatch):
    from mkdocs.exceptions import PluginError

    every = hook.topic_experiments(_whole_site_config("zh", tmp_path).docs_dir)
    monkeypatch.setattr(context.current(), "ran", {"a.md": every})
    monkeypatch.setattr(context.current(), "used", {"kept"})
    seen = []
    monkeypatch.setattr(i18n, "unused", lambda language, used: seen.append((language, set(used))) or ["old", "gone"])
    with pytest.raises(PluginError) as raised:
        fresh_hook.on_post_build(_whole_site_config("zh", tmp_path))
    assert str(raised.value) == ("2 zh catalogue entries no page used (run `make translations`, which drops them, or "
                                 "give the entry a translator comment '# unused: why' in its catalogue): 'old'; 'gone'")
    assert seen == [("zh", {"kept"})]
    monkeypatch.setattr(i18n, "unused", lambda language, used: ["old"])
    with pytest.raises(PluginError, match=r"^1 zh catalogue entry no page used .*: 'old'$"):
        fresh_hook.on_post_build(_whole_site_config("zh", tmp_path))
    monkeypatch.setattr(i18n, "unused", lambda language, used: [])
    monkeypatch.setattr(i18n, "pending",
                        lambda language: {"a": "is fuzzy", "b": "is untranslated"} if language == "zh" else {})
    with pytest.raises(PluginError) as raised:
        fresh_hook.on_post_build(_whole_site_config("zh", tmp_path))
    assert str(raised.value) == "2 zh catalogue entries to check: 'a' is fuzzy; 'b' is untranslated"
    monkeypatch.setattr(i18n, "pending", lambda language: {"a": "is fuzzy"} if language == "zh" else {})
    with pytest.raises(PluginError, match=r"^1 zh catalogue entry to check: 'a' is fuzzy$"):
        fresh_hook.on_post_build(_config(_i18n("zh"), site_dir=str(tmp_path / "site"), extra_css=[], site_name="S"))
    fresh_hook.on_post_build(_whole_site_config("en", tmp_path))  # the default language has no catalogue


def test_the_last_language_closes_the_timing_workers(fresh_hook, tmp_path, monkeypatch):
    closed = []
    monkeypatch.setitem(hook.sys.modules, "snippets.lab.replicas", SimpleNamespace(close_all=lambda: closed.append(1)))
    fresh_hook.on_post_build(_config(_i18n("en"), site_dir=str(tmp_path / "site"), extra_css=[], site_name="S"))
    assert closed == [], "the next language may measure with them"
    fresh_hook.on_post_build(_config(_i18n("zh"), site_dir=str(tmp_path / "site"), extra_css=[], site_name="S"))
    assert closed == [1]


def test_make_record_records_a_contradicted_claim_and_says_so(fresh_hook, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("PITFALLS_RECORD", str(tmp_path / "recording"))
    fresh_hook._session.contradicted[("p.c", "x = 0")] = {"check": "p.c", "condition": "x > 1", "measured": "x = 0",
                                                         "pages": [("a.md", "x is 0")]}
    fresh_hook.on_post_build(_config(site_dir=str(tmp_path / "site"), extra_css=[], site_name="S"))
    assert capsys.readouterr().err == (
        "Claim contradicted: check p.c (x > 1) does not hold — measured: x = 0 — stated on page docs/a.md: 'x is 0'\n"
        "make record: recorded all the same; builds that read this recording show the claim failing on it\n")
    assert fresh_hook._session.contradicted == {}
