"""The site's MkDocs plugin, called the way MkDocs calls it, without a build: the notebook cache folder keyed to this
machine, REFRESH, page names in errors and warnings, the check that a page shows the code it runs, the recipes
and executed notebooks it publishes, and the fresh imports of every rebuild after the first.

(``tests/test_build_failures.py`` and the site tests run it inside real builds.)
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.util
import json
import logging
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path
from types import SimpleNamespace

import pytest
from mkdocs.exceptions import PluginError

from conftest import ROOT

from snippets.lab import cache, environment, mkdocs_hook as hook
from snippets.lab import store
from snippets.lab import context, render


def _jupyter_plugin(**options):
    from mkdocs_jupyter.plugin import Plugin

    plugin = Plugin()
    errors, warnings = plugin.load_config({"include": ["notebooks/*.py"], "execute": True, **options})
    assert not errors, errors
    return plugin


def _config(tmp_path, jupyter=None):
    docs = tmp_path / "docs"
    (docs / "notebooks").mkdir(parents=True, exist_ok=True)
    plugins = {"mkdocs-jupyter": jupyter} if jupyter is not None else {}
    return SimpleNamespace(plugins=plugins, docs_dir=str(docs))


def _pitfalls_records(caplog) -> list[tuple[int, str]]:
    """What the plugin logged on its own logger (a ``mkdocs.*`` logger: its warnings fail a strict build)."""
    return [(r.levelno, r.getMessage()) for r in caplog.records if r.name == "mkdocs.plugins.pitfalls"]


def _folder_for(fp: dict) -> Path:
    return store.cache_dir().parent / "notebooks" / hashlib.sha256(json.dumps(fp, sort_keys=True).encode()).hexdigest()[:16]


def test_without_notebooks_the_config_is_returned(fresh_hook, tmp_path):
    config = _config(tmp_path)
    assert fresh_hook.on_config(config) is config


def test_the_notebook_cache_is_keyed_by_the_environment(fresh_hook, tmp_path, monkeypatch):
    jupyter = _jupyter_plugin()
    assert fresh_hook.on_config(_config(tmp_path, jupyter)) is not None
    folder = Path(jupyter.config["cache_dir"])
    assert folder.parent == store.cache_dir().parent / "notebooks"
    assert len(folder.name) == 16 and int(folder.name, 16) >= 0
    assert folder == _folder_for(environment.fingerprint())
    assert fresh_hook._session.executed_dir == folder / "executed"
    assert "cache" not in jupyter.config or jupyter.config["cache"] is not False

    # Another machine (here: another thread count) gets another folder; the same one in any key order the same.
    other = {**environment.fingerprint(), "threads": 999}
    monkeypatch.setattr(environment, "fingerprint", lambda: other)
    monkeypatch.setattr(fresh_hook._session, "builds", 0)
    again = _jupyter_plugin()
    fresh_hook.on_config(_config(tmp_path, again))
    assert Path(again.config["cache_dir"]) != folder and Path(again.config["cache_dir"]) == _folder_for(other)
    monkeypatch.setattr(environment, "fingerprint", lambda: dict(reversed(other.items())))
    monkeypatch.setattr(fresh_hook._session, "builds", 0)
    reordered = _jupyter_plugin()
    fresh_hook.on_config(_config(tmp_path, reordered))
    assert reordered.config["cache_dir"] == again.config["cache_dir"]


@pytest.mark.parametrize("word", ["1", "on", "yes", "true", "all"])
def test_refresh_all_turns_the_notebook_cache_off_for_the_first_build(fresh_hook, tmp_path, monkeypatch, word):
    """Every word the result cache reads as "re-run everything" re-executes the notebooks too."""
    monkeypatch.setenv("REFRESH", word)
    jupyter = _jupyter_plugin()
    fresh_hook.on_config(_config(tmp_path, jupyter))
    assert jupyter.config["cache"] is False
    again = _jupyter_plugin()
    fresh_hook.on_config(_config(tmp_path, again))  # a rebuild under mkdocs serve
    assert again.config["cache"] is not False


@pytest.mark.parametrize("word", ["", "0", "off", "nontiming"])
def test_other_refresh_words_keep_the_notebook_cache(fresh_hook, tmp_path, monkeypatch, word):
    monkeypatch.setenv("REFRESH", word)
    jupyter = _jupyter_plugin()
    fresh_hook.on_config(_config(tmp_path, jupyter))
    assert jupyter.config["cache"] is not False


def test_make_serve_keeps_no_notebook_rendering_a_measuring_build_could_take_for_its_own(fresh_hook, tmp_path,
                                                                                        monkeypatch):
    """Under make serve (``PITFALLS_DEFER``) a notebook may be rendered from the recorded copy: mkdocs-jupyter's
    cache, keyed by the source alone and shared with the measuring build, is off in every build of it; the
    measuring build (no ``PITFALLS_DEFER``) keeps it."""
    monkeypatch.setenv("PITFALLS_DEFER", "1")
    for _ in range(2):  # the first build and a rebuild
        served = _jupyter_plugin()
        fresh_hook.on_config(_config(tmp_path, served))
        assert served.config["cache"] is False
    monkeypatch.delenv("PITFALLS_DEFER")
    monkeypatch.setattr(fresh_hook._session, "builds", 0)
    measuring = _jupyter_plugin()
    fresh_hook.on_config(_config(tmp_path, measuring))
    assert measuring.config["cache"] is not False


def test_a_refresh_word_not_understood_fails_the_build(fresh_hook, tmp_path, monkeypatch):
    monkeypatch.setenv("REFRESH", "maybe")
    with pytest.raises(cache.ExperimentError, match="REFRESH='maybe' is not understood"):
        fresh_hook.on_config(_config(tmp_path, _jupyter_plugin()))


def test_a_cached_page_without_its_executed_notebook_is_rendered_again(fresh_hook, tmp_path):
    from mkdocs_jupyter import plugin as jupyter_plugin

    jupyter = _jupyter_plugin()
    config = _config(tmp_path, jupyter)
    source = Path(config.docs_dir) / "notebooks" / "question.py"
    source.write_text("# %%\nprint(1)\n")
    fresh_hook.on_config(config)
    folder = Path(jupyter.config["cache_dir"])
    rendered = jupyter_plugin._get_cache_path(str(folder), jupyter_plugin._compute_cache_key(str(source),
                                                                                             jupyter.config, True))
    rendered.parent.mkdir(parents=True, exist_ok=True)
    rendered.write_text("{}")
    executed = fresh_hook._executed_path(str(source))
    assert executed.parent == folder / "executed"
    assert executed.name == f"question-{hashlib.sha256(source.read_bytes()).hexdigest()[:16]}.ipynb"

    store.store_text(executed, "{}")  # with its executed notebook: kept
    fresh_hook.on_config(config)
    assert rendered.exists()
    executed.unlink()  # without: rendered again
    fresh_hook.on_config(config)
    assert not rendered.exists()


def test_the_converter_is_wrapped_once_for_the_plugin_that_builds(fresh_hook, tmp_path):
    from mkdocs_jupyter import plugin as jupyter_plugin

    original = jupyter_plugin.convert.nb2html
    fresh_hook.on_config(_config(tmp_path, _jupyter_plugin()))
    wrapped = jupyter_plugin.convert.nb2html
    assert wrapped is not original and wrapped.pitfalls_original is original
    fresh_hook.on_config(_config(tmp_path, _jupyter_plugin()))
    assert jupyter_plugin.convert.nb2html.pitfalls_original is original, "mkdocs-jupyter's own, not a wrapper, wrapped"


def test_the_wrapped_converter_executes_once_keeps_the_notebook_and_renders_it(fresh_hook, tmp_path, monkeypatch):
    import nbclient

    calls, executed = [], []

    class FakeClient:
        def __init__(self, notebook, **options):
            executed.append(options)
            self.notebook = notebook

        def execute(self, **kernel):
            import nbformat

            executed[-1]["kernel_env"] = kernel["env"]
            self.notebook.cells[0].outputs = [nbformat.v4.new_output("stream", name="stdout", text="42\n")]

    monkeypatch.setattr(nbclient, "NotebookClient", FakeClient)
    monkeypatch.setattr(fresh_hook._session, "executed_dir", tmp_path / "executed")
    source = tmp_path / "question.py"
    source.write_text("# %%\nprint(42)\n")
    convert = fresh_hook._keep_executed(lambda path, **options: calls.append((path, options)) or "<html>")
    assert convert(str(source), execute=True, kernel_name="", theme="light") == "<html>"
    target = fresh_hook._executed_path(str(source))
    assert calls == [(str(target), {"execute": False, "kernel_name": "", "theme": "light"})]
    [options] = executed
    kernel = options.pop("km")
    env = options.pop("kernel_env")
    assert options == {"allow_errors": False, "resources": {"metadata": {"path": str(tmp_path)}}}
    # one intra-op thread, as every experiment runs, and otherwise the build's environment
    assert env["OMP_NUM_THREADS"] == env["MKL_NUM_THREADS"] == "1" and env["PATH"] == os.environ["PATH"]
    # the kernel talks over a Unix socket (no "running over TCP without encryption" warning), named python3
    assert kernel.kernel_name == "python3" and kernel.transport == "ipc"
    stored = json.loads(target.read_text())
    assert "".join(stored["cells"][0]["outputs"][0]["text"]) == "42\n"

    calls.clear()
    convert(str(source), execute=True, kernel_name="other", allow_errors=True)
    assert len(executed) == 1, "executed again although this source's executed copy exists"
    assert calls == [(str(target), {"execute": False, "kernel_name": "other", "allow_errors": True})]
    monkeypatch.setattr(fresh_hook._session, "reexecute", True)  # REFRESH=1: executed again, with the options given
    convert(str(source), execute=True, kernel_name="other", allow_errors=True)
    assert executed[-1]["km"].kernel_name == "other" and executed[-1]["allow_errors"] is True


def test_the_notebooks_to_execute_are_jobs_beside_the_experiments_and_their_pages_execute_nothing(fresh_hook,
                                                                                                   tmp_path,
                                                                                                   monkeypatch):
    """The default language's notebooks not executed yet become jobs for ``cache.prefetch`` (a translation takes its
    twin's outputs; an executed copy from this source is kept; a frozen build executes nothing); once a job has
    run, the page renders its executed copy without executing again."""
    import nbclient

    executed = []

    class FakeClient:
        def __init__(self, notebook, **options):
            self.notebook = notebook

        def execute(self, **kernel):
            executed.append(kernel["env"]["OMP_NUM_THREADS"])

    monkeypatch.setattr(nbclient, "NotebookClient", FakeClient)
    jupyter = _jupyter_plugin(include=["notebooks/*.py", "zh/notebooks/*.py"])
    config = _config(tmp_path, jupyter)
    docs = Path(config.docs_dir)
    for folder in (docs / "notebooks", docs / "zh" / "notebooks"):
        folder.mkdir(parents=True, exist_ok=True)
        for name in ("a.py", "b.py"):
            (folder / name).write_text("# %%\nprint(1)\n")
    monkeypatch.setattr(fresh_hook._session, "executed_dir", tmp_path / "executed")
    jobs = fresh_hook._notebook_jobs(config, jupyter)
    assert [label for label, _ in jobs] == ["notebook a.py", "notebook b.py"], "the Chinese twins are not executed"
    jobs[0][1]()
    assert executed == ["1"] and fresh_hook._session.executed_now == {str(docs / "notebooks" / "a.py")}
    assert [label for label, _ in fresh_hook._notebook_jobs(config, jupyter)] == ["notebook b.py"]
    calls = []
    convert = fresh_hook._keep_executed(lambda path, **options: calls.append(path) or "<html>")
    convert(str(docs / "notebooks" / "a.py"), execute=True, kernel_name="")
    assert executed == ["1"] and calls == [str(fresh_hook._executed_path(str(docs / "notebooks" / "a.py")))], \
        "the page renders the job's executed copy, executing nothing"
    monkeypatch.setattr(fresh_hook._session, "executed_now", set())
    assert [label for label, _ in fresh_hook._notebook_jobs(config, jupyter)] == ["notebook b.py"], "a's copy is kept"
    monkeypatch.setattr(fresh_hook._session, "reexecute", True)  # REFRESH=1: both again
    assert len(fresh_hook._notebook_jobs(config, jupyter)) == 2
    monkeypatch.setenv("FROZEN", "1")
    assert fresh_hook._notebook_jobs(config, jupyter) == []


def test_a_notebook_job_executes_with_the_kernel_and_errors_policy_mkdocs_jupyter_is_given(fresh_hook, tmp_path,
                                                                                           monkeypatch):
    jupyter = _jupyter_plugin(kernel_name="pitfalls-kernel", allow_errors=True)
    config = _config(tmp_path, jupyter)
    (Path(config.docs_dir) / "notebooks" / "a.py").write_text("# %%\nprint(1)\n")
    monkeypatch.setattr(fresh_hook._session, "executed_dir", tmp_path / "executed")
    calls = []
    monkeypatch.setattr(fresh_hook, "_execute", lambda path, kernel, allow_errors: calls.append((kernel, allow_errors)))
    [(_, job)] = fresh_hook._notebook_jobs(config, jupyter)
    job()
    assert calls == [("pitfalls-kernel", True)]


def test_a_recorded_notebook_of_this_source_is_no_job_under_make_record(fresh_hook, tmp_path, monkeypatch):
    jupyter = _jupyter_plugin()
    config = _config(tmp_path, jupyter)
    source = Path(config.docs_dir) / "notebooks" / "a.py"
    source.write_text("# %%\nprint(1)\n")
    monkeypatch.setattr(fresh_hook._session, "executed_dir", tmp_path / "executed")
    recording = SimpleNamespace(reuse_notebook=lambda path: tmp_path / "carried.ipynb" if path == source else None)
    monkeypatch.setattr(fresh_hook, "_recording", lambda: recording)
    assert fresh_hook._notebook_jobs(config, jupyter) == [], "carried over from the recording it replaces"
    recording.reuse_notebook = lambda path: None
    fresh_hook._executed_path(str(source)).parent.mkdir(parents=True)
    fresh_hook._executed_path(str(source)).write_text("{}")
    assert [label for label, _ in fresh_hook._notebook_jobs(config, jupyter)] == ["notebook a.py"], \
        "make record executes again what this machine's cache has, from a recording's point of view"


def test_the_build_measures_its_pages_topics_beside_the_notebooks_before_any_page(fresh_hook, tmp_path, monkeypatch):
    asked = []
    monkeypatch.setattr(cache, "prefetch", lambda names, beside: asked.append((names, beside)) or [])
    jupyter = _jupyter_plugin()
    config = _config(tmp_path, jupyter)
    (Path(config.docs_dir) / "notebooks" / "a.py").write_text("# %%\nprint(1)\n")
    (Path(config.docs_dir) / "steps.md").write_text("---\ntopic: steps\n---\n# Steps\n")
    fresh_hook.on_config(config)
    [(names, beside)] = asked
    assert names == fresh_hook.topic_experiments(config.docs_dir) and names and all(n.startswith("steps.") for n in names)
    assert [label for label, _ in beside] == ["notebook a.py"]
    asked.clear()
    fresh_hook.on_config(SimpleNamespace(plugins={}))  # a configuration without pages (a test's): nothing to measure
    assert asked == []


def test_a_bad_process_count_stops_the_build_in_one_line(fresh_hook, tmp_path, monkeypatch):
    from snippets.lab import replicas

    def refuse(names, beside):
        raise replicas.ReplicaError("PITFALLS_PROCESSES='two': give a whole number of processes from 1 to 8")

    monkeypatch.setattr(cache, "prefetch", refuse)
    with pytest.raises(PluginError) as raised:
        fresh_hook.on_config(_config(tmp_path))
    assert str(raised.value) == "PITFALLS_PROCESSES='two': give a whole number of processes from 1 to 8"
    assert raised.value.__cause__ is None and raised.value.__suppress_context__


def test_the_recipes_finder_comes_first(fresh_hook, tmp_path, monkeypatch):
    monkeypatch.setattr(cache, "prefetch", lambda names, beside: [])
    fresh_hook.on_config(_config(tmp_path))
    assert getattr(sys.meta_path[0], "pitfalls_recipes", False), "ahead of the finders of installed packages"
    fresh_hook.on_config(_config(tmp_path))
    assert sum(getattr(finder, "pitfalls_recipes", False) for finder in sys.meta_path) == 1


@pytest.mark.parametrize("path, execute", [("question.py", False), ("question.ipynb", True)])
def test_the_wrapped_converter_passes_other_conversions_through(fresh_hook, tmp_path, path, execute):
    calls = []
    convert = fresh_hook._keep_executed(lambda nb_path, **options: calls.append((nb_path, options)) or "<html>")
    assert convert(path, execute=execute, kernel_name="k", x=1) == "<html>"
    assert calls == [(path, {"execute": execute, "kernel_name": "k", "x": 1})]


def test_the_recipes_are_published(fresh_hook, tmp_path):
    from mkdocs.config.defaults import MkDocsConfig

    config = MkDocsConfig(config_file_path=str(tmp_path / "mkdocs.yml"))
    config.load_dict({"site_name": "t", "docs_dir": str(tmp_path / "docs"), "site_dir": str(tmp_path / "site")})
    (tmp_path / "docs").mkdir()
    errors, warnings = config.validate()
    assert not errors
    config.plugins._current_plugin = "pitfalls"  # as while MkDocs runs the plugin
    files = fresh_hook.on_files([], config)
    assert [(f.src_uri, f.dest_uri, f.content_string) for f in files] == [
        (f"recipes/{name}", f"recipes/{name}", (ROOT / "snippets" / name).read_text(encoding="utf-8"))
        for name in sorted(p.name for p in (ROOT / "snippets").glob("*.py") if p.name != "__init__.py")], \
        "every single file at the top of snippets/, with no project address: byte for byte"


def test_a_published_recipe_names_the_project_address_in_its_project_line_only(fresh_hook):
    source = (ROOT / "snippets" / "seeding.py").read_text(encoding="utf-8")
    published = fresh_hook.published_recipe(source, "https://example.org/pitfalls/")
    changed = [(a, b) for a, b in zip(source.splitlines(), published.splitlines()) if a != b]
    assert changed == [("# Project: PyTorch pitfalls, measured — measured and explained on its page seeding-order/",
                        "# Project: PyTorch pitfalls, measured — https://example.org/pitfalls/")]
    assert len(published.splitlines()) == len(source.splitlines())
    assert fresh_hook.published_recipe(source, None) == source


def _notebook_page(tmp_path, src="notebooks/question.py"):
    source = tmp_path / "docs" / src
    source.parent.mkdir(parents=True, exist_ok=True)
    source.write_text("# %%\n")
    dest = tmp_path / "site" / Path(src).with_suffix("") / "index.html"
    return SimpleNamespace(file=SimpleNamespace(abs_src_path=str(source), src_path=src, abs_dest_path=str(dest)))


def test_the_executed_notebook_is_published_beside_its_page(fresh_hook, tmp_path, monkeypatch):
    monkeypatch.setattr(fresh_hook._session, "executed_dir", tmp_path / "executed")
    page = _notebook_page(tmp_path)
    store.store_text(fresh_hook._executed_path(page.file.abs_src_path), '{"cells": []}')
    assert fresh_hook.on_post_page("<html>", page, None) == "<html>"
    assert (tmp_path / "site" / "notebooks" / "question" / "question.ipynb").read_text() == '{"cells": []}'
    assert fresh_hook.on_post_page("<html>", page, None) == "<html>", "a rebuild publishes it again"


def test_a_missing_executed_notebook_stops_the_build_naming_the_page(fresh_hook, tmp_path, monkeypatch):
    monkeypatch.setattr(fresh_hook._session, "executed_dir", tmp_path / "executed")
    page = _notebook_page(tmp_path)
    with pytest.raises(PluginError) as raised:
        fresh_hook.on_post_page("<html>", page, None)
    assert str(raised.value) == (f"page docs/notebooks/question.py: its executed notebook is missing from "
                                 f"{tmp_path / 'executed'}")
    assert not (tmp_path / "site").exists()


@pytest.mark.parametrize("src, executed_dir", [("index.md", True), ("notebooks/other.md", True),
                                               ("scripts/run.py", True), ("notebooks/question.py", False)])
def test_other_pages_publish_no_notebook(fresh_hook, tmp_path, monkeypatch, caplog, src, executed_dir):
    monkeypatch.setattr(fresh_hook._session, "executed_dir", tmp_path / "executed" if executed_dir else None)
    page = _notebook_page(tmp_path, src)
    with caplog.at_level(logging.WARNING, logger="mkdocs.plugins.pitfalls"):
        assert fresh_hook.on_post_page("out", page, None) == "out"
    assert not caplog.records and not (tmp_path / "site").exists()


def test_a_generated_page_without_a_source_publishes_no_notebook(fresh_hook, monkeypatch):
    monkeypatch.setattr(fresh_hook._session, "executed_dir", Path("/nonexistent"))
    page = SimpleNamespace(file=SimpleNamespace(abs_src_path=None, src_path="notebooks/x.py", abs_dest_path="/x"))
    assert fresh_hook.on_post_page("out", page, None) == "out"


# ---- page names ------------------------------------------------------------------------------------------------


def _page(src_path: str, url: str | None = None):
    if url is None:
        url = "" if src_path == "index.md" else src_path.removesuffix(".md") + "/"
    return SimpleNamespace(file=SimpleNamespace(src_path=src_path), url=url)


def test_the_page_being_built_is_known_between_markdown_and_content(fresh_hook, monkeypatch):
    monkeypatch.setattr(context.current(), "ran", {})
    assert fresh_hook.on_page_markdown("# Title", _page("update-steps.md")) == "# Title"
    assert context.current().page == "update-steps.md"
    assert fresh_hook.on_page_content("<h1>Title</h1>", _page("update-steps.md")) == "<h1>Title</h1>"
    assert context.current().page is None


def _named_page(src_path: str, source: str, **meta):
    page = _page(src_path)
    page.meta, page.file.content_string = meta, source
    return page


def test_a_page_of_named_values_is_rendered_and_its_finished_html_set_aside(fresh_hook):
    figure = '<figure class="pitfalls-figure"><svg></svg></figure>'
    markdown = '{{ 1 + 2 }} and {{ len("ab") }}\n\n{{ shown }}\n'.replace("{{ shown }}", "{{ '%s' }}" % figure)
    page = _named_page("a.md", "---\nnames: true\n---\n" + markdown, names=True)
    assert fresh_hook.on_page_markdown(markdown, page) == "3 and 2\n\npitfallspage0x\n"
    assert context.current().aside == {"a.md": {"pitfallspage0x": figure}}
    plain = _named_page("b.md", "{{ 1 + 2 }}")
    assert fresh_hook.on_page_markdown("{{ 1 + 2 }}", plain) == "{{ 1 + 2 }}", "a page without names: true is left alone"
    assert fresh_hook.on_page_content("<p>pitfallspage0x</p>", page) == figure


def test_a_named_pages_error_names_its_line_in_the_file(fresh_hook):
    """The line counts the front matter above the Markdown MkDocs hands over, as an editor shows the file."""
    markdown = "\nline one\n{{ nope }}\n"
    page = _named_page("a.md", "---\nnames: true\ntopic: loader\n---\n" + markdown, names=True, topic="loader")
    assert fresh_hook.on_page_markdown(markdown, page) == ""
    assert context.current().failures == {"a.md": ["line 7 ({{ nope }}): UndefinedError: 'nope' is undefined"]}


def test_a_generated_pages_error_is_named_by_the_line_of_what_was_rendered(fresh_hook):
    """A page without a source file's text (a generated file) still renders; its error names the rendered line."""
    page = _page("gen.md")
    page.meta = {"names": True}
    assert fresh_hook.on_page_markdown("{{ 2 * 3 }}", page) == "6"
    page.file.content_string = None  # MkDocs' File gives None where it has no text
    assert fresh_hook.on_page_markdown("one\n{{ nope }}", page) == ""
    assert context.current().failures == {"gen.md": ["line 2 ({{ nope }}): UndefinedError: 'nope' is undefined"]}


def test_a_chinese_page_joins_its_wrapped_lines_and_an_english_one_keeps_them(fresh_hook):
    assert fresh_hook.on_page_markdown("甲\n乙", _named_page("zh/a.md", "甲\n乙")) == "甲乙"
    assert fresh_hook.on_page_markdown("甲\n乙", _named_page("a.md", "甲\n乙")) == "甲\n乙"


def test_a_pages_content_is_titled_spaced_for_its_language_and_its_sections_closed(fresh_hook, monkeypatch):
    monkeypatch.setattr(context.current(), "ran", {})
    titled = _page("a.md")
    titled.title = "Seeding order"
    fresh_hook.on_page_content("<p>x</p>", titled)
    fresh_hook.on_page_content("<p>x</p>", _page("b.md"))
    assert context.current().titles == {"a.md": "Seeding order", "b.md": "b.md"}
    context.current().language = "zh"  # as on_page_markdown set it for the page
    assert fresh_hook.on_page_content("<p>甲 乙</p>", _page("zh/c.md")) == "<p>甲乙</p>"
    context.current().language = "en"  # an English claim that starts a sentence starts with a capital
    claim = '<p><span class="pitfalls-claim">the claim</span> 甲 乙</p>'
    assert fresh_hook.on_page_content(claim, _page("c.md")).startswith(claim.replace(">the", ">The"))
    page = _page("d.md")
    page.meta = {"collapsed": ["deep"]}
    html = fresh_hook.on_page_content('<h1>T</h1>\n<h2 id="deep">Deep</h2>\n<p>x</p>\n', page)
    assert '<details class="pitfalls-section">' in html and html.index('id="deep"') < html.index("<details")


def test_a_pages_notes_are_its_own(fresh_hook, monkeypatch):
    """make serve's measuring note and the note on measurement conditions go on the page they belong to."""
    store = hook._lab("store")
    monkeypatch.setattr(context.current(), "ran", {})
    monkeypatch.setenv("PITFALLS_DEFER", "1")
    monkeypatch.setattr(store, "progress_path", lambda: Path("/nonexistent/measuring.json"))
    monkeypatch.setattr(store, "primary_label", lambda: "epyc")
    context.current().pending.update({"a.md": {"loader.x": 3.0}})
    shown = fresh_hook.on_page_content("<h1>A</h1>\n<p>x</p>", _page("a.md"))
    assert "pitfalls-measuring" in shown and "epyc" in shown
    assert "pitfalls-measuring" not in fresh_hook.on_page_content("<h1>B</h1>\n<p>x</p>", _page("b.md"))
    render = hook._lab("render")
    entry = {"label": "DataLoader", "busy": 0.5}
    context.current().conditions.update({"c.md": [entry]})
    monkeypatch.setattr(render, "conditions_note", lambda entries: f"<p>NOTE {len(entries)}</p>")
    assert "NOTE 1" in fresh_hook.on_page_content(f"<p>x</p>{render.CONDITIONS_NOTE}", _page("c.md"))
    assert "NOTE" not in fresh_hook.on_page_content(f"<p>x</p>{render.CONDITIONS_NOTE}", _page("d.md"))


def test_a_closed_section_the_page_lacks_is_named_with_its_page(fresh_hook, monkeypatch):
    monkeypatch.setattr(context.current(), "ran", {})
    page = _page("e.md")
    page.meta = {"collapsed": ["nowhere"]}
    with pytest.raises(PluginError, match=r"^docs/e\.md: front matter 'collapsed' names nowhere"):
        fresh_hook.on_page_content("<h1>T</h1>\n<p>x</p>\n", page)


def test_a_failure_noted_outside_a_page_stops_the_next_page(fresh_hook, monkeypatch):
    monkeypatch.setattr(context.current(), "ran", {})
    context.current().failures[""] = ["exec block 'x' exited with errors"]
    with pytest.raises(PluginError) as raised:
        fresh_hook.on_page_content("<p>x</p>", _page("a.md"))
    assert str(raised.value) == ("page docs/a.md failed (1 problem); nothing was published:\n"
                                 "  - exec block 'x' exited with errors")


def test_a_text_translated_twice_or_waiting_in_the_catalogue_stops_its_page(fresh_hook, monkeypatch):
    from snippets.lab import i18n

    monkeypatch.setattr(context.current(), "ran", {})
    monkeypatch.setattr(context.current(), "twice", {("zh", "已译"): {"zh/a.md", "zh/b.md"}})
    with pytest.raises(PluginError) as raised:
        fresh_hook.on_page_content("<p>x</p>", _page("zh/a.md"))
    assert "'已译' is already a zh translation and was handed to t() again: translate the English template once, " \
           "then fill in its fields" in str(raised.value)
    assert context.current().twice == {("zh", "已译"): {"zh/b.md"}}, "said once, on its page"
    monkeypatch.setattr(i18n, "pending", lambda language: {"bitwise equal": "is fuzzy"} if language == "zh" else {})
    monkeypatch.setattr(context.current(), "missing", {("zh", "bitwise equal"): {"zh/c.md", "zh/d.md"}})
    with pytest.raises(PluginError) as raised:
        fresh_hook.on_page_content("<p>x</p>", _page("zh/c.md"))
    assert str(raised.value) == ("page docs/zh/c.md failed (1 problem); nothing was published:\n"
                                 "  - no zh translation for 'bitwise equal': its entry is fuzzy")
    assert context.current().missing == {("zh", "bitwise equal"): {"zh/d.md"}}, "said once, on its page"
    monkeypatch.setattr(context.current(), "missing", {("zh", "bitwise equal"): {"zh/c.md"}})
    monkeypatch.setenv(fresh_hook.TRANSLATIONS_ENV, "/dev/null")  # make translations collects them instead
    assert fresh_hook.on_page_content("<p>x</p>", _page("zh/c.md")) == "<p>x</p>"


def test_the_filter_names_the_page_in_warnings_of_markdown_exec(fresh_hook, tmp_path):
    fresh_hook.on_config(_config(tmp_path))
    fresh_hook.on_config(_config(tmp_path))
    logger = logging.getLogger(hook._EXEC_LOGGER)
    [name_page] = [f for f in logger.filters if isinstance(f, hook._NamePage)]
    build = sys.modules["snippets.lab.context"].current()  # the second build imported the lab afresh
    build.page = "seeding-order.md"

    def record(level, msg="Execution of python code block exited with errors"):
        return logging.LogRecord(hook._EXEC_LOGGER, level, __file__, 1, msg, None, None)

    warning, error, info = record(logging.WARNING), record(logging.ERROR), record(logging.INFO)
    assert name_page.filter(warning) is True and name_page.filter(error) is True and name_page.filter(info) is True
    assert warning.msg == "[page docs/seeding-order.md] Execution of python code block exited with errors"
    assert error.msg.startswith("[page docs/seeding-order.md] ")
    assert info.msg == "Execution of python code block exited with errors"
    build.page = None
    outside = record(logging.WARNING)
    assert name_page.filter(outside) is True and outside.msg == "Execution of python code block exited with errors"
    # Each warning (not the info) is a failure of its page, which stops the build when the page is complete.
    failed = "exec block (without an id) exited with errors"
    assert build.failures == {"seeding-order.md": [failed, failed], "": [failed]}


def test_a_failing_block_stops_the_build_at_its_page_with_its_id_and_exception(fresh_hook, tmp_path, monkeypatch):
    monkeypatch.setattr(context.current(), "ran", {})  # nothing an earlier test ran on that page
    fresh_hook.on_config(_config(tmp_path))
    logger = logging.getLogger(hook._EXEC_LOGGER)
    assert logger.level == logging.WARNING, "under mkdocs -q the block's warning would never be made"
    context.current().page = "loader-overhead.md"
    logger.warning("Execution of python code block 'loader-x' exited with errors\n\nCode block is:\n\n    raise E\n\n"
                   "Output is:\n\n    Traceback (most recent call last):\n      File x\n    ValueError: no good\n")
    fresh_hook.on_page_content("<p>other page</p>", _page("index.md"))  # another page is not stopped by it
    with pytest.raises(PluginError) as raised:
        fresh_hook.on_page_content("<p>Traceback</p>", _page("loader-overhead.md"))
    assert str(raised.value) == ("page docs/loader-overhead.md failed (1 problem); nothing was published:\n"
                                 "  - exec block 'loader-x' exited with errors: ValueError: no good")
    assert context.current().failures == {}


def test_a_page_that_runs_an_experiment_without_showing_its_code_stops_the_build(fresh_hook, monkeypatch, caplog):
    from snippets.lab import provenance

    monkeypatch.setattr(context.current(), "ran", {"steps.md": {"steps.curves", "steps.noise", "steps.arith"},
                                               "other.md": {"x.y"}})
    monkeypatch.setattr(context.current(), "shown", {"steps.md": {"steps.noise"}})
    fresh_hook.on_page_content("", _page("index.md"))
    why = [f"runs experiment {name} but never shows its code: print present(result, renderer) or "
           "code_panel(result) from snippets.lab beside what it produced" for name in ("steps.arith", "steps.curves")]
    with caplog.at_level(logging.WARNING, logger="mkdocs.plugins.pitfalls"), pytest.raises(PluginError) as raised:
        fresh_hook.on_page_content("", _page("steps.md"))
    assert _pitfalls_records(caplog) == [(logging.ERROR, f"[page docs/steps.md] {line}") for line in why]
    assert str(raised.value) == ("page docs/steps.md failed (2 problems); nothing was published:\n"
                                 + "\n".join(f"  - {line}" for line in why))


def test_a_build_error_names_the_page(fresh_hook, monkeypatch, caplog):
    monkeypatch.setattr(context.current(), "page", "loader-overhead.md")
    with caplog.at_level(logging.ERROR, logger="mkdocs.plugins.pitfalls"):
        fresh_hook.on_build_error(FileNotFoundError("snippets/nope.py"))
    assert _pitfalls_records(caplog) == [
        (logging.ERROR, "Building page docs/loader-overhead.md failed: FileNotFoundError: snippets/nope.py")]


def test_a_build_error_outside_a_page_adds_nothing(fresh_hook, caplog):
    with caplog.at_level(logging.DEBUG, logger="mkdocs.plugins.pitfalls"):
        fresh_hook.on_build_error(RuntimeError("x"))
    assert not caplog.records


# ---- rebuilds --------------------------------------------------------------------------------------------------


def test_the_first_build_keeps_the_imported_modules_and_later_ones_import_afresh(fresh_hook, tmp_path):
    first = sys.modules["snippets.lab.cache"]
    fresh_hook.on_config(_config(tmp_path))
    assert sys.modules["snippets.lab.cache"] is first and fresh_hook._session.builds == 1
    first_context = sys.modules["snippets.lab.context"]
    first_context.current().refreshed.add("refreshed by the first build")
    fresh_hook.on_config(_config(tmp_path))
    second = sys.modules["snippets.lab.cache"]
    assert second is not first and fresh_hook._session.builds == 2
    assert "refreshed by the first build" in sys.modules["snippets.lab.context"].current().refreshed, \
        "REFRESH does not re-run, in a rebuild, what the first build re-ran"
    # the plugin names pages through the module the pages now import, not a stale one
    second_context = sys.modules["snippets.lab.context"]
    fresh_hook.on_page_markdown("", SimpleNamespace(file=SimpleNamespace(src_path="index.md")))
    assert second_context.current().page == "index.md" and first_context.current().page != "index.md"
    fresh_hook.on_page_content("", SimpleNamespace(file=SimpleNamespace(src_path="index.md"), url=""))
    assert second_context.current().page is None


def test_purge_forgets_every_snippets_module_but_the_plugins_own(fresh_hook):
    import snippets.step_budget  # noqa: F401

    before = {name for name in sys.modules if name == "snippets" or name.startswith("snippets.")}
    sys.modules["snippets_lookalike"] = SimpleNamespace()
    sys.meta_path.insert(0, fresh_hook.RecipeFinder())  # as on_config does: a recipe by its bare name
    bare = importlib.import_module("step_budget")
    try:
        names = fresh_hook.purge_snippets()
        assert "snippets_lookalike" in sys.modules
    finally:
        del sys.modules["snippets_lookalike"]
    assert bare is not snippets.step_budget and os.path.samefile(bare.__file__, snippets.step_budget.__file__)
    assert set(names) - {"seeding", "tensor_loader"} == before - {"snippets.lab.mkdocs_hook"} | {"step_budget"}
    assert "snippets.step_budget" not in sys.modules and "snippets.lab.cache" not in sys.modules
    # the module of the plugin MkDocs runs stays: an import of it finds that plugin, not a second one
    assert sys.modules["snippets.lab.mkdocs_hook"] is hook
    assert "step_budget" not in sys.modules


def test_purge_lets_go_of_the_last_build(fresh_hook, monkeypatch):
    """make serve purges the lab before each rebuild: the timing workers, which hold the old code, are closed, and
    the last build (its panels, its claims) does not stay alive under the context variable of the module purged
    (the module imported again holds a variable of its own)."""
    import gc
    import weakref

    old = sys.modules["snippets.lab.context"]
    ref = weakref.ref(old.begin(old.Build(page="served.md", code={"k": "<pre>" + "x" * 1000 + "</pre>"})))
    replicas = importlib.import_module("snippets.lab.replicas")
    closed = []
    monkeypatch.setattr(replicas, "close_all", lambda: closed.append(True))
    fresh_hook.purge_snippets()
    assert closed == [True], "the timing workers, which hold the old code, are closed"
    gc.collect()
    assert ref() is None, "the purged module's build is still held by this thread's context"


def test_a_page_imports_a_recipe_by_its_bare_name_from_its_file_not_from_a_package_of_that_name(
        fresh_hook, tmp_path, monkeypatch):
    """A usage example's ``from seeding import …`` is the recipe beside the page's code, as beside a reader's script,
    even where an installed package has that name (PyPI has a ``seeding``); no other name of snippets/ is importable
    by a bare name, and a second build adds no second finder."""
    (tmp_path / "seeding.py").write_text("IMPOSTOR = True\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    for name in ("seeding", "lab", "experiments"):
        monkeypatch.delitem(sys.modules, name, raising=False)
    fresh_hook.on_config(_config(tmp_path))
    fresh_hook.on_config(_config(tmp_path))
    assert sum(getattr(finder, "pitfalls_recipes", False) for finder in sys.meta_path) == 1
    seeding = importlib.import_module("seeding")
    assert not hasattr(seeding, "IMPOSTOR") and hasattr(seeding, "seed_everything")
    assert os.path.samefile(seeding.__file__, ROOT / "snippets" / "seeding.py")
    for name in ("lab", "experiments", "mkdocs_hook"):
        assert importlib.util.find_spec(name) is None, f"{name} is importable by a bare name"
    assert fresh_hook.RecipeFinder().find_spec("seeding", path=["/somewhere"]) is None, "a submodule is not a recipe"


# ---- more of the plugin's contract ---------------------------------------------------------------------------------


def test_with_a_repository_the_edit_links_point_at_the_branch(fresh_hook, tmp_path, monkeypatch):
    monkeypatch.delenv("REPO_BRANCH", raising=False)
    config = _config(tmp_path)
    config.repo_url, config.edit_uri = "https://github.com/owner/repo", "unchanged"
    fresh_hook.on_config(config)
    assert config.edit_uri == "edit/main/docs/"
    monkeypatch.setenv("REPO_BRANCH", "gh-pages-source")
    fresh_hook.on_config(config)
    assert config.edit_uri == "edit/gh-pages-source/docs/"


def test_without_a_repository_the_edit_links_are_left_alone(fresh_hook, tmp_path):
    config = _config(tmp_path)
    config.repo_url, config.edit_uri = None, "unchanged"
    fresh_hook.on_config(config)
    assert config.edit_uri == "unchanged"


def test_the_wrapped_converter_still_calls_mkdocs_jupyters(fresh_hook, tmp_path, monkeypatch):
    from mkdocs_jupyter import plugin as jupyter_plugin

    calls = []
    monkeypatch.setattr(jupyter_plugin.convert, "nb2html", lambda path, **options: calls.append(path) or "<p>")
    fresh_hook.on_config(_config(tmp_path, _jupyter_plugin()))
    assert jupyter_plugin.convert.nb2html("page.ipynb") == "<p>" and calls == ["page.ipynb"]


def test_the_converter_defaults_to_no_execution(fresh_hook, tmp_path):
    calls = []
    convert = fresh_hook._keep_executed(lambda nb_path, **options: calls.append((nb_path, options)) or "<html>")
    convert("question.py")
    assert calls == [("question.py", {"execute": False, "kernel_name": ""})]


def _no_execution(monkeypatch) -> None:
    """nbclient's client replaced by one that executes nothing."""
    import nbclient

    class FakeClient:
        def __init__(self, notebook, **options):
            pass

        def execute(self, **kernel):
            pass

    monkeypatch.setattr(nbclient, "NotebookClient", FakeClient)


def test_executing_a_notebook_is_logged_and_kept_in_a_new_folder(fresh_hook, tmp_path, monkeypatch, caplog):
    _no_execution(monkeypatch)
    monkeypatch.setattr(fresh_hook._session, "executed_dir", tmp_path / "not" / "yet" / "there")
    source = tmp_path / "question.py"
    source.write_text("# %%\nprint(1)\n")
    convert = fresh_hook._keep_executed(lambda nb_path, **options: "<html>")
    with caplog.at_level(logging.INFO, logger="mkdocs.plugins.pitfalls"):
        convert(str(source), execute=True)
    assert _pitfalls_records(caplog) == [(logging.INFO, f"pitfalls: executing notebook {source}")]
    assert fresh_hook._executed_path(str(source)).is_file()


def test_a_notebook_runs_in_a_kernel_of_its_own_over_a_socket_with_the_experiments_threads(tmp_path):
    """nbclient executes the notebook in a fresh kernel reached over IPC (a Unix socket in a folder of its own, gone
    afterwards: nothing listens on the network), with the experiments' intra-op threads. (In a fresh interpreter, as
    a build runs it: a kernel started from a forked process that has run threads may never answer.)"""
    import tempfile

    import nbformat

    source = tmp_path / "probe.py"
    source.write_text("# %%\nimport os\nfrom ipykernel.connect import get_connection_info\n"
                      "info = get_connection_info(unpack=True)\n"
                      "print(os.environ['OMP_NUM_THREADS'], os.environ['MKL_NUM_THREADS'], info['transport'])\n"
                      "print(info['ip'])\n", encoding="utf-8")
    probe = textwrap.dedent(f"""
        from pathlib import Path
        from snippets.lab import mkdocs_hook
        plugin = mkdocs_hook.Pitfalls()
        plugin.executed_dir = Path({str(tmp_path / "executed")!r})
        plugin._execute({str(source)!r}, "", allow_errors=False)
        print(plugin._executed_path({str(source)!r}))
    """)
    done = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True, timeout=180)
    assert done.returncode == 0, done.stderr
    [cell] = nbformat.read(done.stdout.strip().splitlines()[-1], as_version=4).cells
    threads, ip = cell.outputs[0]["text"].splitlines()
    assert threads == f"{environment.EXPERIMENT_THREADS} {environment.EXPERIMENT_THREADS} ipc"
    folder = Path(ip).parent
    assert folder.parent == Path(tempfile.gettempdir()) and folder.name.startswith("pitfalls-kernel-")
    assert Path(ip).name == "kernel" and not folder.exists(), "the socket's folder goes with the kernel"


def test_under_make_serve_a_notebook_not_executed_here_yet_is_the_recorded_one_and_is_pending(fresh_hook, tmp_path,
                                                                                              monkeypatch):
    from snippets.lab import machines

    monkeypatch.setattr(fresh_hook._session, "executed_dir", tmp_path / "executed")
    source = tmp_path / "question.py"
    source.write_text("# %%\nprint(1)\n")
    asked = []
    monkeypatch.setattr(machines, "frozen_notebook", lambda path: asked.append(path) or tmp_path / "recorded.ipynb")
    mine = fresh_hook._executed_path(str(source))
    assert mine.parent == tmp_path / "executed" and asked == [], "a build that is not make serve's executes it here"
    monkeypatch.setenv("PITFALLS_DEFER", "1")
    assert fresh_hook._executed_path(str(source)) == tmp_path / "recorded.ipynb" and asked == [source]
    assert fresh_hook._session.pending_notebooks == {str(source)}, "make serve's measuring build executes it"
    mine.parent.mkdir(parents=True)
    mine.write_text("{}")
    fresh_hook._session.pending_notebooks.clear()
    assert fresh_hook._executed_path(str(source)) == mine and fresh_hook._session.pending_notebooks == set()
    mine.unlink()

    def none_recorded(path):
        raise hook._lab("store").ArchiveError("no recording has it")

    monkeypatch.setattr(machines, "frozen_notebook", none_recorded)
    assert fresh_hook._executed_path(str(source)) == mine and fresh_hook._session.pending_notebooks == set()


def test_a_new_build_is_a_new_context_that_keeps_what_this_process_refreshed(fresh_hook, tmp_path):
    fresh_hook.on_config(_config(tmp_path))
    first = sys.modules["snippets.lab.context"].current()
    first.page, first.ran["a.md"] = "a.md", {"x"}
    first.refreshed.add("key")
    fresh_hook.on_config(_config(tmp_path))
    second = sys.modules["snippets.lab.context"].current()
    assert second is not first and second.page is None and second.ran == {}
    assert second.refreshed == {"key"} and second.refreshed is fresh_hook._session.refreshed


# ---- code panels' sources, out of the pages -----------------------------------------------------------------


def test_panel_sources_leave_each_page_for_the_code_folder(fresh_hook, tmp_path, monkeypatch):
    from snippets.lab import provenance

    monkeypatch.setattr(context.current(), "ran", {})
    panel = f"<details><summary>s</summary>{render.deferrable('<pre>def measured(): ...</pre>')}</details>"
    key = next(iter(provenance.defer(panel, "")[1]))
    topic = fresh_hook.on_page_content(panel, _page("update-steps.md"))
    other = f"<details><summary>s</summary>{render.deferrable('<pre>def other(): ...</pre>')}</details>"
    home = fresh_hook.on_page_content(panel + other, _page("index.md"))
    assert f'data-src="../code/{key}.html"' in topic and f'href="../code/{key}.html"' in topic
    assert f'data-src="code/{key}.html"' in home and "def measured" not in topic + home
    panels = hook._lab("context").current().code  # this build's, written by on_post_build
    assert len(panels) == 2 and panels[key] == "<pre>def measured(): ...</pre>"

    site = tmp_path / "site"
    for sheet in ("assets/stylesheets/main.abc.min.css", "assets/stylesheets/palette.def.min.css",
                  "assets/extra.css"):
        (site / sheet).parent.mkdir(parents=True, exist_ok=True)
        (site / sheet).write_text("/* css */")
    config = SimpleNamespace(site_dir=str(site), extra_css=["assets/extra.css", "assets/missing.css"],
                             site_name="Pitfalls")
    fresh_hook.on_post_build(config)
    written = sorted(path.name for path in (site / "code").iterdir())
    assert written == sorted(f"{k}.html" for k in hook._lab("context").current().code)
    document = (site / "code" / f"{key}.html").read_text(encoding="utf-8")
    assert "<pre>def measured(): ...</pre>" in document and "<title>Code behind a result — Pitfalls</title>" in document
    assert ('<link rel="stylesheet" href="../assets/stylesheets/main.abc.min.css"><link rel="stylesheet" '
            'href="../assets/stylesheets/palette.def.min.css"><link rel="stylesheet" href="../assets/extra.css">'
            '<meta') in document, "the site's styles, the missing sheet left out"
    assert oct((site / "code" / f"{key}.html").stat().st_mode & 0o444) == oct(0o444), "readable by a web server"


def test_each_build_writes_only_its_own_panels(fresh_hook, tmp_path, monkeypatch):
    from snippets.lab import provenance

    monkeypatch.setattr(context.current(), "ran", {})
    fresh_hook.on_config(_config(tmp_path))
    fresh_hook.on_page_content(render.deferrable("old"), _page("a.md"))
    assert len(hook._lab("context").current().code) == 1
    fresh_hook.on_config(_config(tmp_path))
    assert hook._lab("context").current().code == {}, "a rebuild starts with no panels"


def test_a_page_with_claims_explains_the_marks_once_after_its_title(fresh_hook, monkeypatch):
    monkeypatch.setattr(context.current(), "ran", {})
    page = '<h1 id="t">Title</h1><p>Intro <span class="pitfalls-claim" tabindex="0">x</span> and ' \
           '<span class="pitfalls-claim pitfalls-claim--undecided">y</span></p>'
    shown = fresh_hook.on_page_content(page, _page("loader-overhead.md"))
    assert shown.count("pitfalls-legend") == 1 and "? marks one the measurements here could not decide" in shown
    assert "build fails" not in shown and "“wide”" not in shown, "no word explained that the page does not use"
    assert fresh_hook.on_page_content("<h1>T</h1><p>none</p>", _page("index.md")) == "<h1>T</h1><p>none</p>"


def _notebook_with_figures(tmp_path, alts: list, *, photo: bool = False) -> str:
    """An executed notebook: one code cell per entry of ``alts`` (None: no alt), each with one PNG output; with
    ``photo``, then a cell with a JPEG output and the alt "A photo"."""
    import nbformat

    notebook = nbformat.v4.new_notebook()
    for alt in alts:
        cell = nbformat.v4.new_code_cell("plt.show()", metadata={} if alt is None else {"alt": alt})
        cell.outputs = [nbformat.v4.new_output("display_data", data={"image/png": "iVBORw0KGgo=",
                                                                         "text/plain": "<Figure>"})]
        notebook.cells.append(cell)
    notebook.cells.append(nbformat.v4.new_code_cell("print(1)"))
    notebook.cells.append(nbformat.v4.new_markdown_cell("No outputs here."))
    jpeg = nbformat.v4.new_code_cell("photo", metadata={"alt": "A photo"})
    jpeg.outputs = [nbformat.v4.new_output("display_data", data={"image/jpeg": "/9j/4AAQ", "text/plain": "<img>"})]
    if photo:
        notebook.cells.append(jpeg)
    path = tmp_path / "executed.ipynb"
    nbformat.write(notebook, str(path))
    return str(path)


def test_notebook_figures_get_their_cells_alt_text(tmp_path):
    executed = _notebook_with_figures(tmp_path, ['Loss "curves" & fits', "A second figure"])
    page = f'<img src="a.png" {hook.NO_ALT}><p>text</p><img src="b.png" {hook.NO_ALT}>'
    out = hook.with_alt_text(page, executed)
    assert out == ('<img src="a.png" alt="Loss &quot;curves&quot; &amp; fits"><p>text</p>'
                   '<img src="b.png" alt="A second figure">')


def test_a_notebook_figure_without_alt_text_fails_the_build_by_cell(tmp_path):
    from mkdocs.exceptions import PluginError

    executed = _notebook_with_figures(tmp_path, ["described", None])
    with pytest.raises(PluginError, match=r"executed.ipynb: cell 2 draws 1 figure\(s\) but has no alt text; "
                                          r"describe what it shows on the cell's first line: # %% alt=\"...\""):
        hook.with_alt_text(f"<img {hook.NO_ALT}><img {hook.NO_ALT}>", executed)
    executed = _notebook_with_figures(tmp_path, ["described"])
    with pytest.raises(PluginError, match=r"1 figure\(s\) in the notebook's outputs but 2 image\(s\) without alt"):
        hook.with_alt_text(f"<img {hook.NO_ALT}><img {hook.NO_ALT}>", executed)


def test_a_jpeg_figure_gets_its_alt_text_too(tmp_path):
    executed = _notebook_with_figures(tmp_path, ["a plot", "with a photo"], photo=True)
    page = f"<img {hook.NO_ALT}><img {hook.NO_ALT}><img {hook.NO_ALT}>"
    assert hook.with_alt_text(page, executed) == '<img alt="a plot"><img alt="with a photo"><img alt="A photo">'


def test_the_legend_follows_the_in_short_with_the_jump_links_or_else_comes_before_the_first_section():
    claim = '<span class="pitfalls-claim">x</span>'
    wide = f'{claim} 3× (2–4)'
    legend = ('<p class="pitfalls-legend">' + hook.LEGEND_CLAIMS + "<br>\n" + hook.LEGEND_INTERVALS + "</p>\n")
    page = f"<h1>Title</h1><p>{wide}</p><h2 id=\"a\">A</h2><p>more</p>"
    assert hook._with_legend(page) == f"<h1>Title</h1><p>{wide}</p>{legend}<h2 id=\"a\">A</h2><p>more</p>"
    sections = "".join(f'<h2 id="s{i}">Section {i}<a class="headerlink" href="#s{i}">¶</a></h2><p>.</p>'
                       for i in range(3))
    in_short = f'<div class="admonition abstract"><p>{claim}</p><div class="tabbed-set"><div>t</div></div></div>'
    shown = hook._with_legend(f"<h1>T</h1>{in_short}<p>intro</p>{sections}")
    jump = ('<nav class="pitfalls-jump" aria-label="On this page"><p>On this page: <a href="#s0">Section 0</a> · '
            '<a href="#s1">Section 1</a> · <a href="#s2">Section 2</a></p></nav>\n')
    assert shown.startswith(f"<h1>T</h1>{in_short}\n{jump}" + '<p class="pitfalls-legend">'), shown[:600]
    assert shown.endswith(f"<p>intro</p>{sections}")
    assert hook._with_legend("<h1>No claims</h1>") == "<h1>No claims</h1>"


def test_a_frozen_build_renders_the_recorded_notebook_with_the_callers_options(fresh_hook, tmp_path, monkeypatch):
    from snippets.lab import machines

    source, recorded = tmp_path / "question.py", tmp_path / "recorded.ipynb"
    monkeypatch.setenv("FROZEN", "1")
    monkeypatch.setattr(machines, "frozen_notebook", lambda path: recorded if path == source else None)
    monkeypatch.setattr(hook, "with_alt_text", lambda page, executed: f"{page} + {executed}")
    calls = []
    convert = fresh_hook._keep_executed(lambda nb_path, *args, **options: calls.append((nb_path, args, options)) or "<p>")
    assert convert(str(source), execute=True, kernel_name="k", theme="dark") == f"<p> + {recorded}"
    assert calls == [(str(recorded), (), {"execute": False, "kernel_name": "k", "theme": "dark"})]
    assert calls[0][2]["execute"] is False


def test_an_executed_notebook_goes_into_the_recording_being_made(fresh_hook, tmp_path, monkeypatch):
    from snippets.lab import machines

    _no_execution(monkeypatch)
    monkeypatch.setattr(fresh_hook._session, "executed_dir", tmp_path / "executed")
    monkeypatch.setenv("PITFALLS_RECORD", str(tmp_path / "rec"))
    monkeypatch.delenv("PITFALLS_RECORD_PREVIOUS", raising=False)
    source = tmp_path / "question.py"
    source.write_text("# %%\nprint(1)\n")
    fresh_hook._keep_executed(lambda nb_path, **options: "<p>")(str(source), execute=True)
    kept = tmp_path / "rec" / "notebooks"
    assert sorted(p.name for p in kept.iterdir()) == ["question.ipynb", "question.source-digest"]
    assert (kept / "question.ipynb").read_bytes() == fresh_hook._executed_path(str(source)).read_bytes()


def test_make_record_executes_again_a_notebook_this_machines_cache_already_has(fresh_hook, tmp_path, monkeypatch):
    """A recording is made from executions of its own (or carried from the recording it replaces), never from the
    cache of earlier builds."""
    import nbformat

    monkeypatch.setattr(fresh_hook._session, "executed_dir", tmp_path / "executed")
    source = tmp_path / "question.py"
    source.write_text("# %%\nprint(1)\n")
    cached = fresh_hook._executed_path(str(source))
    cached.parent.mkdir(parents=True)
    cached.write_text(nbformat.writes(nbformat.v4.new_notebook()))
    executed = []
    monkeypatch.setattr(fresh_hook, "_execute", lambda path, kernel, allow_errors: executed.append(path))
    convert = fresh_hook._keep_executed(lambda nb_path, **options: "<p>")
    convert(str(source), execute=True)
    assert executed == [], "an ordinary build renders the copy it has"
    monkeypatch.setattr(fresh_hook, "_recording", lambda: SimpleNamespace(reuse_notebook=lambda path: None))
    convert(str(source), execute=True)
    assert executed == [str(source)]


def test_a_recorded_notebook_of_this_source_is_carried_over_not_executed(fresh_hook, tmp_path, monkeypatch):
    import jupytext
    import nbclient
    import nbformat

    from snippets.lab import store

    class NoExecution:
        def __init__(self, notebook, **options):
            raise AssertionError("a notebook recorded from this source is not executed again")

    monkeypatch.setattr(nbclient, "NotebookClient", NoExecution)
    monkeypatch.setattr(fresh_hook._session, "executed_dir", tmp_path / "not" / "made" / "yet")
    source = tmp_path / "question.py"
    source.write_text("# %%\nprint(1)\n")
    recorded = jupytext.read(source)
    recorded.cells[0].outputs = [nbformat.v4.new_output("stream", name="stdout", text="recorded 1\n")]
    previous = tmp_path / "results" / "box"
    (previous / "notebooks").mkdir(parents=True)
    (previous / "notebooks" / "question.ipynb").write_text(nbformat.writes(recorded))
    manifest = {"label": "box", "commit": "c0ffee", "notebooks": {"question": store.notebook_digest(source)}}
    writer = store.Writer(tmp_path / "rec", store.Recording("box", previous, manifest))
    monkeypatch.setattr(store, "writer", lambda find=None: writer)
    rendered = []
    fresh_hook._keep_executed(lambda nb_path, **options: rendered.append(nb_path) or "<p>")(str(source), execute=True)
    executed = fresh_hook._executed_path(str(source))
    assert rendered == [str(executed)], "rendered from the recorded outputs, kept where the page publishes them"
    assert "recorded 1" in executed.read_text()
    kept = tmp_path / "rec" / "notebooks"
    assert sorted(p.name for p in kept.iterdir()) == ["question.ipynb", "question.source-digest"]
    assert (kept / "question.ipynb").read_bytes() == (previous / "notebooks" / "question.ipynb").read_bytes()
    fresh_hook._keep_executed(lambda nb_path, **options: rendered.append(nb_path) or "<p>")(str(source), execute=True)
    assert rendered == [str(executed)] * 2, "the other language's build carries it over again, into the same folder"


def test_recorded_machines_tables_are_drawn_with_the_sites_markdown(fresh_hook, tmp_path, monkeypatch):
    from snippets.lab import machines

    config = _config(tmp_path)
    config.markdown_extensions, config.mdx_configs = ["tables", "toc"], {"toc": {"permalink": True}}
    fresh_hook.on_config(config)
    assert sys.modules["snippets.lab.context"].current().markdown == (["tables", "toc"], {"toc": {"permalink": True}})


def test_a_frozen_build_keeps_its_notebooks_apart_from_this_machines(fresh_hook, tmp_path, monkeypatch):
    from snippets.lab import machines

    jupyter = _jupyter_plugin()
    fresh_hook.on_config(_config(tmp_path, jupyter))
    assert jupyter.config["cache_dir"] == str(_folder_for(environment.fingerprint()))
    monkeypatch.setenv("FROZEN", "1")
    monkeypatch.setattr(machines, "primary", lambda: SimpleNamespace(manifest={"label": "box"}))
    monkeypatch.setattr(fresh_hook._session, "builds", 0)  # as a new process: keep the patched modules
    jupyter = _jupyter_plugin()
    fresh_hook.on_config(_config(tmp_path, jupyter))
    assert jupyter.config["cache_dir"] == str(_folder_for({"frozen": {"label": "box"}}))


def test_the_code_folder_is_made_in_a_new_site_and_rebuilt_over_an_old_one(fresh_hook, tmp_path):
    site = tmp_path / "new" / "site"
    config = SimpleNamespace(site_dir=str(site), extra_css=[], site_name="Pitfalls")
    hook._lab("context").current().code["k"] = "<pre>µ — π</pre>"
    fresh_hook.on_post_build(config)
    fresh_hook.on_post_build(config)
    assert "<pre>µ — π</pre>" in (site / "code" / "k.html").read_text(encoding="utf-8")


def test_a_failure_outside_a_page_stops_at_once_and_other_warnings_read_as_one_line(fresh_hook):
    with pytest.raises(PluginError, match=r"^the results folder cannot be read$"):
        fresh_hook.fail(None, "the results folder cannot be read")
    assert context.current().failures == {}
    assert fresh_hook._summary("") == "a warning without a message"
    assert fresh_hook._summary("  A plain warning\nwith details\n") == "A plain warning"
    assert fresh_hook._summary("Execution of python code block 'b' exited with unexpected code 3\n\n"
                               "Code block is:\n\n    x\n\nOutput is:\n\n    ```\n    gone\n    ```\n") == \
        "exec block 'b' exited with unexpected code 3: gone"
    assert fresh_hook._summary("Execution of python code block 'b' exited with errors") == \
        "exec block 'b' exited with errors"
    # the output's last line, wherever the output itself says "Output is:"; fences alone say nothing
    assert fresh_hook._summary("Execution of python code block exited with errors\n\nOutput is:\n\n```\n"
                               "print('Output is: x')\nOutput is: x\nValueError: bad\n```\n") == \
        "exec block (without an id) exited with errors: ValueError: bad"
    assert fresh_hook._summary("Execution of python code block 'c' exited with errors\n\nOutput is:\n\n```\n```\n") == \
        "exec block 'c' exited with errors"
    assert fresh_hook._summary("code block 'd' exited with errors\n\nOutput is:\n\n```\nKeyError: 'Output is:'\n```\n") == \
        "exec block 'd' exited with errors: KeyError: 'Output is:'"



MATERIAL_PALETTE = (ROOT / ".venv").glob("lib/python*/site-packages/material/templates/assets/stylesheets/"
                                         "palette.*.min.css")


def test_the_palette_switching_rule_is_keyed_to_the_toggle_in_the_built_sheet_and_nothing_else_changes(tmp_path):
    sheets = tmp_path / "assets" / "stylesheets"
    sheets.mkdir(parents=True)
    installed = next(iter(MATERIAL_PALETTE), None)
    text = installed.read_text(encoding="utf-8") if installed else (
        ":root{--md-x:1}[data-md-color-switching] *,[data-md-color-switching] :after,"
        "[data-md-color-switching] :before{transition-duration:0ms!important}[data-md-color-scheme=slate]{--y:2}")
    assert "data-md-color-switching" in text
    (sheets / "palette.0123abcd.min.css").write_text(text, encoding="utf-8")
    assert hook.switching_rule_keyed_to_the_toggle(tmp_path) == 1
    left = (sheets / "palette.0123abcd.min.css").read_text(encoding="utf-8")
    assert "data-md-color-switching" not in left and left.count("[data-pitfalls-switching]") == 3
    assert left.replace("data-pitfalls-switching", "data-md-color-switching") == text  # the one rule, rekeyed
    assert hook.switching_rule_keyed_to_the_toggle(tmp_path) == 0  # a second build's pass changes nothing


def test_a_switching_rule_of_another_shape_stops_the_build_naming_what_to_update(tmp_path):
    sheets = tmp_path / "assets" / "stylesheets"
    sheets.mkdir(parents=True)
    (sheets / "palette.0123abcd.min.css").write_text("[data-md-color-switching] *{transition:none}", encoding="utf-8")
    with pytest.raises(PluginError) as stopped:
        hook.switching_rule_keyed_to_the_toggle(tmp_path)
    assert str(stopped.value) == ("palette.0123abcd.min.css: Material's palette-switching rule has another shape; "
                                  "update _SWITCHING_RULE in snippets/lab/mkdocs_hook.py")


def test_every_palette_sheet_is_rekeyed_and_counted(tmp_path):
    sheets = tmp_path / "assets" / "stylesheets"
    sheets.mkdir(parents=True)
    rule = ("[data-md-color-switching] *,[data-md-color-switching] :after,[data-md-color-switching] :before"
            "{transition-duration:0ms!important}")
    for name in ("palette.aaaa.min.css", "palette.bbbb.min.css"):
        (sheets / name).write_text(f"/* ✓ */{rule}", encoding="utf-8")
    assert hook.switching_rule_keyed_to_the_toggle(tmp_path) == 2
    assert (sheets / "palette.bbbb.min.css").read_bytes() == f"/* ✓ */{rule}".replace(
        "data-md-color-switching", "data-pitfalls-switching").encode("utf-8")


def test_code_blocks_carry_their_line_count_and_a_long_line_makes_them_focusable():
    from snippets.lab.mkdocs_hook import PHONE_CODE_CHARACTERS, sized_code_blocks

    long_line = "x" * (PHONE_CODE_CHARACTERS + 1)
    short = "a &lt; b" + "y" * (PHONE_CODE_CHARACTERS - 5)  # the entity is one character: the line fits
    html = (f'<div class="language-python highlight"><pre><span></span><code><span class="n">{long_line}</span>\n'
            'two\nthree\n</code></pre></div>'
            f'<p>text</p><div class="language-text pitfalls-copy highlight"><pre><code>{short}\n</code></pre></div>'
            f'<div class="highlight"><pre><code tabindex="0">{long_line}\n</code></pre></div>'
            '<div class="highlight-ipynb"><pre><code>untouched</code></pre></div>')
    out = sized_code_blocks(html)
    assert out.count('style="--pitfalls-lines: 3"') == 1 and out.count('style="--pitfalls-lines: 1"') == 2
    assert out.count('<code tabindex="0">') == 2, "the long block gains one; the one that had it keeps one"
    assert f'<code>{short}' in out, "a block whose lines fit a phone is not made focusable"
    assert '<div class="highlight-ipynb"><pre><code>untouched' in out


def test_each_section_s_blocks_become_one_part_and_the_headings_and_first_screen_stay_outside():
    from snippets.lab.mkdocs_hook import in_parts

    html = ('<h1 id="t">Title</h1>\n<div class="admonition abstract"><p>In short</p></div>\n'
            '<h2 id="a">A</h2>\n<p>one<br>two</p>\n<div class="tabbed-set"><div>tabs</div></div>\n'
            '<table><tr><td>1</td></tr></table>\n'
            '<h3 id="b">B</h3>\n<h3 id="c">C</h3>\n<figure><svg><path d="M0 0"/></svg></figure>\n')
    out = in_parts(html)
    assert out.count('<div class="pitfalls-part">') == 2
    assert out.startswith('<h1 id="t">Title</h1>\n<div class="admonition abstract"><p>In short</p></div>\n'
                          '<h2 id="a">A</h2>\n<div class="pitfalls-part"><p>one<br>two</p>'), "first screen kept"
    assert ('<table><tr><td>1</td></tr></table></div>\n<h3 id="b">B</h3>\n<h3 id="c">C</h3>\n'
            '<div class="pitfalls-part"><figure>') in out, "a heading with nothing under it gets no part"
    assert out.endswith('</figure></div>\n')
    unwrapped = re.sub(r'<div class="pitfalls-part">(.*?)</div>\n(?=<h\d|$)', r"\1\n", out, flags=re.S)
    assert unwrapped == html, "nothing but the wrappers added"


SECTIONS = ('<h1 id="t">Title</h1>\n<div class="admonition abstract"><p>In short</p></div>\n'
            '<h2 id="a">A</h2>\n<p>open</p>\n'
            '<h2 id="b">B</h2>\n<p>closed <span class="pitfalls-claim">x</span>'
            '<span class="pitfalls-claim__tip">tip</span></p>\n<table><tr><td>1</td></tr></table>\n'
            '<h3 id="b1">B1</h3>\n<figure class="pitfalls-figure"><svg></svg></figure>\n'
            '<figure class="pitfalls-figure"><svg></svg></figure>\n'
            '<h2 id="c">C</h2>\n<p>open again</p>\n'
            '<h2 id="d">D</h2>\n<p>plain text</p>\n')


def test_a_section_the_front_matter_names_closes_under_its_heading_saying_what_it_holds():
    from snippets.lab.mkdocs_hook import collapsed

    out = collapsed(SECTIONS, ["d", "b"], "topic.md")
    assert out.count('<details class="pitfalls-section">') == 2
    assert ('<h2 id="b">B</h2>\n<details class="pitfalls-section"><summary><span class="pitfalls-section__closed">'
            'Open the section: 2 figures, 1 table, 1 checked claim</span><span class="pitfalls-section__open">'
            'Close the section: 2 figures, 1 table, 1 checked claim</span></summary>\n<p>closed') in out, \
        "a claim's tip is not a second claim"
    assert '<svg></svg></figure>\n</details>\n<h2 id="c">C</h2>\n<p>open again</p>' in out, "up to the next ## only"
    assert out.endswith('<h2 id="d">D</h2>\n<details class="pitfalls-section"><summary><span class="pitfalls-section__'
                        'closed">Open the section</span><span class="pitfalls-section__open">Close the section</span>'
                        '</summary>\n<p>plain text</p>\n</details>\n'), "the last section runs to the end; nothing counted"
    assert re.sub(r'<details class="pitfalls-section"><summary>.*?</summary>\n(.*?)\n</details>\n', r"\1\n", out,
                  flags=re.S) == SECTIONS, "nothing but the wrappers added"
    assert collapsed(SECTIONS, None, "topic.md") == SECTIONS and collapsed(SECTIONS, [], "topic.md") == SECTIONS
    deeper = collapsed(SECTIONS, ["b1"], "topic.md")  # a ### section, up to the next heading of its level or above
    assert ('<h3 id="b1">B1</h3>\n<details class="pitfalls-section"><summary><span class="pitfalls-section__closed">'
            'Open the section: 2 figures</span>') in deeper
    assert '<svg></svg></figure>\n</details>\n<h2 id="c">C</h2>' in deeper and deeper.count("<details") == 1


@pytest.mark.parametrize("ids, said", [
    (["b", "no-such-section"], "names no-such-section but the page has no such section to close (its sections: a, b, b1, c, d)"),
    (["a1"], "names a1 but the page has no such section"),
    (["b", "b1"], "names b1, which lies inside b, closed already"),
    ("b", "must be a list of section ids"),
])
def test_a_front_matter_naming_no_section_of_the_page_stops_the_build_naming_it(ids, said):
    from snippets.lab.mkdocs_hook import collapsed

    with pytest.raises(PluginError, match=re.escape(said)) as raised:
        collapsed(SECTIONS, ids, "topic.md")
    assert "docs/topic.md" in str(raised.value)


def test_sections_are_closed_in_the_order_of_the_page_each_up_to_the_next_heading_of_its_level():
    from snippets.lab.mkdocs_hook import collapsed

    def closed(html, ids):
        return re.findall(r"</summary>\n(.*?)\n</details>", collapsed(html, ids, "topic.md"), flags=re.S)

    page = '<h2 id="z">Z</h2>\n<p>1</p>\n<h2 id="a">A</h2>\n<p>2</p>\n'
    assert closed(page, ["a", "z"]) == ["<p>1</p>", "<p>2</p>"], "named in any order, closed in the page's"
    empty_first = '<h2 id="a">A</h2>\n<h2 id="b">B</h2>\n<p>b</p>\n<h2 id="c">C</h2>\n<p>c</p>\n'
    assert closed(empty_first, ["a", "c"]) == ["<p>c</p>"], "a section with nothing in it stays open; the next closes"
    assert closed(empty_first, ["a"]) == [], "a heading right after it ends it"
    no_id = '<h2 id="a">A</h2>\n<p>a</p>\n<h2>No id</h2>\n<p>after</p>\n'
    assert closed(no_id, ["a"]) == ["<p>a</p>"], "any heading of its level ends it, with an id or without"


@pytest.mark.parametrize(("html", "ids", "said"), [
    (SECTIONS, ["x", "y"], "docs/topic.md: front matter 'collapsed' names x, y but the page has no such section to "
                           "close (its sections: a, b, b1, c, d)"),
    ("<h1>T</h1><p>x</p>", ["x"], "docs/topic.md: front matter 'collapsed' names x but the page has no such section "
                                  "to close (its sections: none)"),
    ('<h2 id="a">A</h2><p>x</p></div>', ["a"], "docs/topic.md: front matter 'collapsed' names sections but the page has "
                                               "no such section to close (its sections: a)"),  # a page it cannot follow
])
def test_a_closed_section_the_page_lacks_is_named_with_every_section_it_has(html, ids, said):
    from snippets.lab.mkdocs_hook import collapsed

    with pytest.raises(PluginError) as raised:
        collapsed(html, ids, "topic.md")
    assert str(raised.value) == said


@pytest.mark.parametrize("html", [
    '<h1>T</h1><h2>A</h2><p>unclosed <div></p>',          # an element the parser cannot follow
    '<h1>T</h1><h2>A</h2><p>one</p></div><p>two</p>',     # a stray end tag
    '<h1>T</h1><p>no section at all</p>',
])
def test_content_the_parser_cannot_follow_or_without_sections_is_left_as_it_is(html):
    from snippets.lab.mkdocs_hook import in_parts

    assert in_parts(html) == html


def test_the_legend_finds_an_interval_in_chinese_brackets_too():
    from snippets.lab.mkdocs_hook import _INTERVAL

    assert _INTERVAL.search("耗时是 10×（3–20，有噪声）") and _INTERVAL.search("15× (12–20)")
    assert not _INTERVAL.search("调用 f(a, b)（见上）")


def test_torch_s_missing_cuda_runtime_note_leaves_the_log_and_its_other_warnings_stay(caplog):
    """torch's CUDA build on a machine without a GPU logs a harmless "No CUDA runtime is found"; the lab drops that
    line alone from torch.utils.cpp_extension's logger."""
    logger = logging.getLogger("torch.utils.cpp_extension")
    with caplog.at_level(logging.WARNING, logger="torch.utils.cpp_extension"):
        logger.warning("No CUDA runtime is found, using CUDA_HOME='/usr/local'")
        logger.warning("Error checking compiler version for c++: a real problem")
    assert [record.getMessage() for record in caplog.records if record.name == logger.name] == [
        "Error checking compiler version for c++: a real problem"]


def test_a_named_pages_finished_html_skips_markdown_and_comes_back_whole(fresh_hook):
    """Figures and panels' sources are set aside before Python-Markdown walks the page, and put back after: a
    figure on a line of its own is a block, inside a tab too (where its indented HTML alone would be a paragraph)."""
    import markdown as md

    figure = ('<figure class="pitfalls-figure" tabindex="0">\n<svg viewBox="0 0 1 1"><text>*not emphasis* a_b_c'
              "</text></svg>\n</figure>\n")
    body = '<pre><span class="k">def</span> f(*args, **kw): return a_b_c</pre>'
    page = ("Text with a *word*.\n\n" + figure + "\n"
            '<details><div class="pitfalls-code__body" data-key="abc123">\n' + body
            + "\n</div><!--/pitfalls-code abc123--></details>\n\n=== \"Tab\"\n\n    " + figure.replace("\n", "\n    "))
    aside = fresh_hook.set_aside(page, "p.md")
    assert "<svg" not in aside and body not in aside, "the finished HTML left the Markdown"
    html = fresh_hook.put_back(md.markdown(aside, extensions=["pymdownx.tabbed"]), "p.md")
    assert html.count(figure.strip()) == 1 and html.count("<svg") == 2, html
    assert body in html and "<em>word</em>" in html and "*not emphasis* a_b_c" in html, html
    assert "<p><figure" not in html, "a figure alone on its line is not a paragraph"
    assert fresh_hook.put_back("pitfallspage0x", "p.md") == "pitfallspage0x", "each page's tokens are put back once"


def test_theme_templates_are_compiled_once_per_process_and_again_when_their_source_changes(fresh_hook, monkeypatch):
    """MkDocs makes a Jinja2 environment for every build (each language, each make serve rebuild): the plugin's
    bytecode cache compiles a theme template once, and again only when its source changed."""
    import jinja2

    sources = {"main.html": "Hello {{ name }}"}
    compiled = []

    class Counting(jinja2.Environment):
        def compile(self, source, *args, **kwargs):
            compiled.append(source)
            return super().compile(source, *args, **kwargs)

    def build_environment():
        return fresh_hook.on_env(Counting(loader=jinja2.DictLoader(sources)), config=None, files=None)

    assert build_environment().get_template("main.html").render(name="a") == "Hello a"
    assert build_environment().get_template("main.html").render(name="b") == "Hello b"  # the next build
    assert compiled == ["Hello {{ name }}"]
    sources["main.html"] = "Bye {{ name }}"
    assert build_environment().get_template("main.html").render(name="c") == "Bye c"
    assert compiled == ["Hello {{ name }}", "Bye {{ name }}"]


def test_mkdocs_keeps_the_plugin_and_what_it_holds_from_one_serve_rebuild_to_the_next():
    """What outlives one build (the build count that makes a rebuild import the code afresh, the experiments
    already refreshed, the contradictions over every language) is the plugin's: ``mkdocs serve`` loads the
    configuration again for every rebuild, and MkDocs hands a plugin that has ``on_startup`` back as it was."""
    from mkdocs.config import load_config

    first = load_config(str(ROOT / "mkdocs.yml")).plugins["pitfalls"]
    assert isinstance(first, hook.Pitfalls), "mkdocs.yml names the site's plugin, found by its entry point"
    first.refreshed.add("loader.question_timing:abc")
    try:
        again = load_config(str(ROOT / "mkdocs.yml")).plugins["pitfalls"]
        assert again is first and "loader.question_timing:abc" in again.refreshed
    finally:  # the plugin is this process's from now on: another test that loads mkdocs.yml gets it as it was
        first.refreshed.discard("loader.question_timing:abc")
    fresh = hook.Pitfalls()
    assert (fresh.builds, fresh.refreshed, fresh.contradicted) == (0, set(), {}), "a new process starts with nothing"


def test_the_lab_quiets_torch_before_torch_s_extension_module_is_imported():
    """torch.utils.cpp_extension logs its note as it is imported, which loading the site's plugin does (through the
    lab's modules): the filter must be on its logger by then, so it is set before the lab imports anything."""
    probe = textwrap.dedent("""
        import importlib.abc, logging, sys
        seen = []
        class Spy(importlib.abc.MetaPathFinder):
            def find_spec(self, name, path=None, target=None):
                if name == "torch.utils.cpp_extension":
                    seen.append(bool(logging.getLogger(name).filters))
        sys.meta_path.insert(0, Spy())
        import snippets.lab.mkdocs_hook
        print(seen)
    """)
    done = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[True]", f"filter not in place when torch.utils.cpp_extension was imported: {done.stdout}"


def test_a_topic_named_on_a_page_gives_its_modules_and_nothing_private(fresh_hook):
    import importlib

    loader = fresh_hook._Topic("loader")
    assert loader.measure is importlib.import_module("snippets.experiments.loader.measure")
    assert loader.figures is importlib.import_module("snippets.experiments.loader.figures")
    for private in ("_name", "__path__", "_hidden"):
        with pytest.raises(AttributeError, match=private):
            object.__getattribute__(loader, "__getattr__")(private)
    with pytest.raises(ModuleNotFoundError, match="snippets.experiments.loader.nothing"):
        loader.nothing


@pytest.mark.parametrize(("html", "spaced"), [
    ("<p>中 文</p>", "<p>中文</p>"),  # two Chinese characters: no space
    ("<p>中\t文</p>", "<p>中文</p>"),
    ("<p>中 a 文</p>", "<p>中 a 文</p>"),  # Chinese beside Latin keeps its space
    ("<p>好。 下一句，  再一句</p>", "<p>好。下一句，再一句</p>"),  # none after a full-width mark
    ("<p>好。 a</p>", "<p>好。a</p>"),
    ("<p>a. b</p>", "<p>a. b</p>"),
    ("<p>中</span> <span>文</p>", "<p>中</span><span>文</p>"),  # a space alone between two tags
    ("<p>好。</span> <span>a</p>", "<p>好。</span><span>a</p>"),
    ("<p>好。</span> <span>“引”</p>", "<p>好。</span><span>“引”</p>"),
    ("<p>中</span> <span>“引”</p>", "<p>中</span><span>“引”</p>"),
    ("<p>中</span> <span>（注）</p>", "<p>中</span><span>（注）</p>"),
    ("<p>中</span> <span>a</p>", "<p>中</span> <span>a</p>"),
    ("<p>a</span> <span>文</p>", "<p>a</span> <span>文</p>"),
    ("<p>中</span><i></i> <i> </i><span>文</p>", "<p>中</span><i></i><i></i><span>文</p>"),  # blank pieces skipped
    ("<p> <b>文</b></p>", "<p> <b>文</b></p>"),  # nothing before it
    ("<p><b>中</b> 文</p>", "<p><b>中</b>文</p>"),  # a text's leading space after Chinese
    ("<p><b>好。</b> “文”</p>", "<p><b>好。</b>“文”</p>"),
    ("<p><b>中</b> a</p>", "<p><b>中</b> a</p>"),
    ("<p><b>a</b> 文</p>", "<p><b>a</b> 文</p>"),
    ("<p>中 <b>文</b></p>", "<p>中<b>文</b></p>"),  # a text's trailing space before Chinese
    ("<p>好。 <b>（文）</b></p>", "<p>好。<b>（文）</b></p>"),
    ("<p>中 <b>a</b></p>", "<p>中 <b>a</b></p>"),
    ("<p>a <b>文</b></p>", "<p>a <b>文</b></p>"),
    ("<p>耗时 10× (3–20，有噪声)</p>", "<p>耗时 10×（3–20，有噪声）</p>"),  # brackets around Chinese: full-width
    ("<p>函数 f (参数)</p>", "<p>函数 f（参数）</p>"),
    ("<p>函数 f(a, b)</p>", "<p>函数 f(a, b)</p>"),
    ("<p>占 92% (86–95)，是 8× (2–25)，约 3 (1.5–4.25)</p>", "<p>占 92%（86–95），是 8×（2–25），约 3（1.5–4.25）</p>"),
    ("<p>差 -3 (-4–-2)</p>", "<p>差 -3（-4–-2）</p>"),
    ("<p>x (1–2)</p>", "<p>x (1–2)</p>"),  # an interval after no number stays as it is
    ("<pre>中 文 (有)</pre><code>中 文</code>", "<pre>中 文 (有)</pre><code>中 文</code>"),  # code is not touched
    ("<script>a = '中 文'</script><style>b</style><textarea>中 文</textarea>",
     "<script>a = '中 文'</script><style>b</style><textarea>中 文</textarea>"),
    ("<p>中 文</p><code class=\"x\">中 文</code><p>中 文</p>", "<p>中文</p><code class=\"x\">中 文</code><p>中文</p>"),    ("<p>甲 <b> 乙</b></p>", "<p>甲<b>乙</b></p>"),  # spaces on both sides of a tag, each text's own
    ("<p><b>中</b>\t文</p>", "<p><b>中</b>文</p>"),
    ("<p>中\t<b>文</b></p>", "<p>中<b>文</b></p>"),
    ("<p>中 \n<b>文</b></p>", "<p>中 \n<b>文</b></p>"),  # a line break is Markdown's, not a space to close
    ("<p><b>中</b> \n文</p>", "<p><b>中</b>\n文</p>"),
    ("<p><b>好。</b>\n<b>在</b></p>", "<p><b>好。</b>\n<b>在</b></p>"),
    ("<p><b>甲</b>X<b>乙</b></p>", "<p><b>甲</b>X<b>乙</b></p>"),  # a Latin letter between tags is text
    ("<p><b>。</b> </p>", "<p><b>。</b> </p>"),  # a space with nothing after it
])
def test_chinese_text_is_spaced_as_chinese_with_code_and_latin_left_as_they_are(html, spaced):
    assert hook.close_cjk_spacing(html) == spaced


@pytest.mark.parametrize(("base", "searched"), [("..", "../zh/"), ("../", "../zh/"), ("../..", "../../zh/"),
                                                ("/", "./zh/"), (".", "./zh/"), ("", "./zh/")])
def test_a_translated_page_searches_its_own_languages_index(base, searched):
    config = '<script id="__config" type="application/json">{"annotate": null, "base": "%s", "features": []}</script>'
    assert hook._search_base("<p>a</p>" + config % base, "zh") == "<p>a</p>" + config % searched
    assert hook._search_base("<p>no configuration</p>", "zh") == "<p>no configuration</p>"


_IN_SHORT = '<div class="admonition abstract"><p>In short</p><div class="tabbed"><div>a</div></div></div>'


def _sections(count: int) -> str:
    return "".join(f'<h2 id="s{n}">Section {n}<a class="headerlink" href="#s{n}">¶</a></h2><p>x</p>'
                   for n in range(1, count + 1))


def test_under_the_in_short_a_line_of_links_leads_to_each_section_in_either_language():
    page = "<h1>T</h1>" + _IN_SHORT + _sections(3)
    links = '<a href="#s1">Section 1</a> · <a href="#s2">Section 2</a> · <a href="#s3">Section 3</a>'
    assert hook._jump_links(page) == (f'<nav class="pitfalls-jump" aria-label="On this page"><p>On this page: {links}'
                                      "</p></nav>\n")
    with context.using(context.Build(language="zh")):
        assert hook._jump_links(page) == (f'<nav class="pitfalls-jump" aria-label="本页内容"><p>本页内容：{links}'
                                          "</p></nav>\n")
    assert hook._jump_links("<h1>T</h1>" + _IN_SHORT + _sections(2)) == "", "two sections are on the first screen"
    assert hook._jump_links("<h1>T</h1>" + _sections(4)) == "", "a page without an In short has no such line"


@pytest.mark.parametrize(("html", "end"), [
    (_IN_SHORT + "<p>after</p>", len(_IN_SHORT)),  # at the very start
    ("<div>before</div>" + _IN_SHORT + "<p>after</p>", len("<div>before</div>" + _IN_SHORT)),
    ("<p>x</p>" + _IN_SHORT + _IN_SHORT, len("<p>x</p>" + _IN_SHORT)),  # the first
    ("<p>no box</p>", None),
    ('<div class="admonition abstract"><div>never closed', None),
])
def test_the_in_short_box_ends_where_its_own_div_closes(html, end):
    assert hook._end_of_in_short(html) == end


def test_a_closed_section_says_what_it_holds_counted_in_either_language():
    figure, table, claim = '<figure class="pitfalls-figure">', "<table>", '<span class="pitfalls-claim pitfalls-claim--holds">'
    assert hook._section_summary(figure + table * 2 + claim) == (
        '<span class="pitfalls-section__closed">Open the section: 1 figure, 2 tables, 1 checked claim</span>'
        '<span class="pitfalls-section__open">Close the section: 1 figure, 2 tables, 1 checked claim</span>')
    assert hook._section_summary(figure * 2 + table + '<span class="pitfalls-claim">' * 2) == (
        '<span class="pitfalls-section__closed">Open the section: 2 figures, 1 table, 2 checked claims</span>'
        '<span class="pitfalls-section__open">Close the section: 2 figures, 1 table, 2 checked claims</span>')
    assert hook._section_summary("<p>prose</p><tables>") == (
        '<span class="pitfalls-section__closed">Open the section</span>'
        '<span class="pitfalls-section__open">Close the section</span>')
    with context.using(context.Build(language="zh")):
        assert hook._section_summary(figure + table * 2 + claim * 3) == (
            '<span class="pitfalls-section__closed">展开本节：1 张图、2 张表、3 条已校验的结论</span>'
            '<span class="pitfalls-section__open">收起本节：1 张图、2 张表、3 条已校验的结论</span>')


def test_what_the_plugins_wrote_in_english_is_translated_and_the_keys_used_are_counted():
    page = ('<a title="Permanent link" aria-label="3">¶</a><a title="上一页: 首页">x</a>'
            '<span class="notice" hidden="">Copied!</span><div class="jp-InputPrompt jp-InputArea-prompt">In\xa0[12]:</div>'
            '<div class="jp-InputPrompt">In [ ]:</div>')
    with context.using(context.Build(language="zh")) as build:
        translated = hook.theirs_translated(page, "zh")
        assert "Permanent link" in build.used
    assert translated == ('<a title="永久链接" aria-label="3">¶</a><a title="上一页：首页">x</a>'
                          '<span class="notice" hidden="">已复制</span>'
                          '<div class="jp-InputPrompt jp-InputArea-prompt">输入 [12]：</div>'
                          '<div class="jp-InputPrompt">In [ ]:</div>')


def test_a_list_is_joined_as_each_language_joins_one_with_a_space_between_chinese_and_code():
    assert hook._and_list(["a", "b", "c"]) == "a, b, and c" and hook._and_list([1]) == "1"
    with context.using(context.Build(language="zh")):
        assert hook._and_list(["`A`", "B", "c"]) == "`A`、B 和 c"
        assert hook._and_list(["甲", "乙"]) == "甲和乙" and hook._and_list(["Z", "(x)"]) == "Z 和 (x)"
        assert hook._and_list(["x)", "乙"]) == "x) 和乙" and hook._and_list(["乙", "_x"]) == "乙和 _x"


@pytest.mark.parametrize(("repo_url", "site_url", "url"), [
    ("https://github.com/o/p", "https://o.github.io/p/", "https://github.com/o/p/"),  # the repository first
    (None, "https://o.github.io/p", "https://o.github.io/p/"), ("", "https://o.github.io/p//", "https://o.github.io/p/"),
    (None, None, None), (None, "http://127.0.0.1:8000/", None), (None, "http://localhost:8000/", None),
    ("https://localhost/x", None, None), ("https://example.org/X", None, "https://example.org/X/"),
])
def test_the_project_is_named_by_its_repository_or_its_sites_address_never_a_local_one(repo_url, site_url, url):
    assert hook._project_url({"repo_url": repo_url, "site_url": site_url}) == url
    recipe = "# Project: PyTorch pitfalls, measured\nx = 1\n# Project: PyTorch pitfalls, measured\n"
    published = hook.published_recipe(recipe, url)
    assert published == (recipe if url is None else recipe.replace("measured\n", f"measured — {url}\n", 1))


@pytest.mark.parametrize(("markdown", "original", "failure"), [
    ("{{ nope }}\n", None, "line 1 ({{ nope }}): UndefinedError: 'nope' is undefined"),  # the file's first line
    ("{{ nope }}\n{{ nope }}\n", None, "line 1 ({{ nope }}): UndefinedError: 'nope' is undefined"),  # the first
    ("a\n{{ 1 + }}\n", "---\nnames: true\n---\na\n{{ 1 + }}\n",
     "line 5 ({{ 1 + }}): TemplateSyntaxError: unexpected 'end of print statement'"),  # a syntax error, by Jinja's own line
    ("a\n\n{{ [1][3] }}\n", None, "line 3 ({{ [1][3] }}): UndefinedError: list object has no element 3"),
    ("{{ nope }}", "changed since", "its template: UndefinedError: 'nope' is undefined"),  # not found in the file
    ("{{ nope }}", "\n{{ nope }}", "line 2 ({{ nope }}): UndefinedError: 'nope' is undefined"),  # a blank first line
])
def test_a_named_pages_error_says_the_line_as_the_file_has_it(markdown, original, failure):
    with context.using() as build:
        assert hook.render_names(markdown, "a.md", {}, original) == ""
    assert build.failures == {"a.md": [failure]}


def test_an_error_before_the_page_renders_is_its_templates(monkeypatch):
    """What fails before Jinja reads a line (a topic module that fails to import) is named without a line."""
    def broken(meta):
        raise RuntimeError("the topic's module failed")

    monkeypatch.setattr(hook, "page_names", broken)
    with context.using() as build:
        assert hook.render_names("a\n{{ 1 }}\n", "a.md", {}, "a\n{{ 1 }}\n") == ""
    assert build.failures == {"a.md": ["its template: RuntimeError: the topic's module failed"]}


def _note_state(tmp_path, monkeypatch, state) -> None:
    """make serve's first builds (PITFALLS_DEFER) with ``state`` as what the measuring build wrote (None: nothing)."""
    progress = tmp_path / "measuring.json"
    if state is not None:
        progress.write_text(state if isinstance(state, str) else json.dumps(state), encoding="utf-8")
    monkeypatch.setenv("PITFALLS_DEFER", "1")
    monkeypatch.setattr(store, "progress_path", lambda: progress)
    monkeypatch.setattr(store, "primary_label", lambda: "epyc<2>")


_WAITING = ("Numbers marked as recorded on epyc&lt;2&gt; are that machine's, until this machine has measured them: "
            "make serve is measuring now, and the page reloads as results arrive.")


@pytest.mark.parametrize(("state", "body"), [
    (None, _WAITING),  # the measuring build has written nothing yet
    ("{not json", _WAITING),
    ({"done": 3, "total": 7, "left_s": 170}, _WAITING + " 3 of 7 experiments measured so far, about 3 min left."),
    ({"done": 0, "total": 7, "left_s": 20.5}, _WAITING + " 0 of 7 experiments measured so far, about 1 min left."),
    ({"done": 3, "total": 7, "left_s": 6000}, _WAITING + " 3 of 7 experiments measured so far, about 100 min left."),
    ({"done": "3", "total": 7, "left_s": 170}, _WAITING),  # a progress it cannot read is left out, not guessed
    ({"done": 3, "total": None, "left_s": 170}, _WAITING),
    ({"done": 3, "total": 7, "left_s": "soon"}, _WAITING),
    ({"failed": ["not", "a", "message"]}, _WAITING),
])
def test_make_serves_measuring_note_says_how_far_the_measuring_build_has_got(tmp_path, monkeypatch, state, body):
    _note_state(tmp_path, monkeypatch, state)
    page = "<h1>T</h1>\n<p>x</p><h1>again</h1>"
    assert hook.with_measuring_note(page, {"loader.x": 3.0}) == (
        '<h1>T</h1>\n<div class="admonition info pitfalls-measuring" role="status"><p class="admonition-title">'
        f"Recorded elsewhere, for now</p><p>{body}</p></div>\n\n<p>x</p><h1>again</h1>")


def test_make_serves_measuring_note_says_what_failed_escaped(tmp_path, monkeypatch):
    _note_state(tmp_path, monkeypatch, {"failed": "out of <memory>", "done": 3, "total": 7, "left_s": 170})
    assert hook.with_measuring_note("<p>no title</p>", {"loader.x": 3.0}) == (
        '<div class="admonition failure pitfalls-measuring" role="status"><p class="admonition-title">Measuring this '
        "machine failed</p><p>These numbers stay those recorded on epyc&lt;2&gt;. What failed: out of &lt;memory&gt;"
        "</p></div>\n<p>no title</p>")


def test_make_serves_measuring_note_is_in_the_pages_language(tmp_path, monkeypatch):
    _note_state(tmp_path, monkeypatch, {"done": 3, "total": 7, "left_s": 170})
    context.current().language = "zh"
    note = hook.with_measuring_note("<h1>T</h1>", {"loader.x": 3.0})
    assert '<p class="admonition-title">暂用其他机器的记录</p>' in note
    assert "目前已测完 3 个实验（共 7 个），大约还需 3 分钟。" in note and "epyc&lt;2&gt;" in note
    _note_state(tmp_path, monkeypatch, {"failed": "boom"})
    assert "本机测量失败" in hook.with_measuring_note("<h1>T</h1>", {"loader.x": 3.0})


def test_only_a_deferred_page_with_recorded_results_has_a_measuring_note(tmp_path, monkeypatch):
    _note_state(tmp_path, monkeypatch, {"done": 3, "total": 7, "left_s": 170})
    assert hook.with_measuring_note("<h1>T</h1>", {}) == "<h1>T</h1>"
    assert hook.with_measuring_note("<h1>T</h1>", None) == "<h1>T</h1>"
    monkeypatch.setenv("PITFALLS_DEFER", "0")  # a plain build: every result is this machine's
    assert hook.with_measuring_note("<h1>T</h1>", {"loader.x": 3.0}) == "<h1>T</h1>"


def test_a_measuring_note_without_a_named_recording_names_none(tmp_path, monkeypatch):
    _note_state(tmp_path, monkeypatch, {"failed": "boom"})
    monkeypatch.setattr(store, "primary_label", lambda: None)
    note = hook.with_measuring_note("</h1>x", {"loader.x": 3.0})  # a title at the very start: the note follows it
    assert note.startswith('</h1>\n<div class="admonition failure') and note.endswith("</div>\nx")
    assert "These numbers stay those recorded on . What failed: boom" in note


def test_a_page_without_an_in_short_gets_its_notation_before_its_first_section(build):
    claim = '<span class="pitfalls-claim">a</span><span class="pitfalls-claim pitfalls-claim--undecided">b</span>'
    page = f"<h1>T</h1><p>{claim} 10× (3–20)</p><h2>One</h2><p>1</p><h2>Two</h2><p>2</p>"
    shown = hook._with_legend(page)
    legend = ('<p class="pitfalls-legend">' + hook.LEGEND_CLAIMS + " " + hook.LEGEND_UNDECIDED + "<br>\n"
              + hook.LEGEND_INTERVALS + "</p>\n")
    assert shown == page.replace("<h2>One</h2>", legend + "<h2>One</h2>")
    assert hook._with_legend(f"<p>{claim}</p>") == f"<p>{claim}</p>" + legend.replace(
        "<br>\n" + hook.LEGEND_INTERVALS, ""), "no interval, no line on intervals; no section: at the end"
    assert hook._with_legend(f"<h2>One</h2><p>{claim}</p>").startswith('<p class="pitfalls-legend">'), \
        "a section at the very start: before it"
    build.language = "zh"
    zh = hook._with_legend(page)
    from snippets.lab import i18n

    assert (i18n.t(hook.LEGEND_CLAIMS) + i18n.t(hook.LEGEND_UNDECIDED) + "<br>\n") in zh, "Chinese joins them unspaced"


def test_set_aside_html_comes_back_in_place_of_its_token_and_an_unknown_token_stays(build):
    build.aside["p.md"] = {"pitfallspage0x": "<figure>f</figure>", "pitfallspage1x": "<pre>code</pre>"}
    html = "<p>pitfallspage0x</p>\n<p>pitfallspage9x</p>\n<div>pitfallspage1x and pitfallspage8x</div>"
    assert hook.put_back(html, "p.md") == (
        "<figure>f</figure>\n<p>pitfallspage9x</p>\n<div><pre>code</pre> and pitfallspage8x</div>")
    assert hook.put_back(html, "p.md") == html, "taken once: a rebuild sets its own aside"


def test_a_code_blocks_size_counts_its_lines_without_tags_and_its_widest_line_as_shown():
    def block(last):
        return ('<div class="language-python highlight"><pre><span></span><code>'
                '<span class="n">a</span><span class="o">bb</span>\n' + last + "\n</code></pre></div>")

    sized = hook.sized_code_blocks(block("x" * 29 + "   "))
    assert sized.startswith('<div class="language-python highlight" style="--pitfalls-lines: 2"><pre>')
    assert '<code tabindex="0">' in sized, "29 characters and three spaces: wider than a phone's 30"
    assert "tabindex" not in hook.sized_code_blocks(block("X" * 30)), "30 characters, and tags that are not shown"
    assert '<code tabindex="0">' in hook.sized_code_blocks(block("X" * 31))


def test_the_conditions_note_goes_where_the_first_value_asked_for_it_and_nowhere_else(monkeypatch):
    render = hook._lab("render")
    monkeypatch.setattr(render, "conditions_note", lambda entries: f"<div>NOTE {len(entries)}</div>")
    place = render.CONDITIONS_NOTE
    page = f"<p>{place}</p><p>a</p>{place}<p>b</p>{place}"
    assert hook.with_conditions_note(page, [1, 2]) == "<div>NOTE 2</div><p>a</p><p>b</p>"
    assert hook.with_conditions_note(page, None) == "<p>a</p><p>b</p>"


def test_a_topic_page_names_its_topics_modules_and_every_topic_by_its_own_name():
    names = hook.page_names({"topic": "loader"})
    assert names["checks"] is importlib.import_module("snippets.experiments.loader.checks")
    assert names["derive"] is importlib.import_module("snippets.experiments.loader.derive")
    assert names["seeding"]._name == "seeding" and names["loader"].measure is names["measure"]
    assert "checks" not in hook.page_names({}), "a page without a topic names the topics, not one's modules"


def test_a_list_in_chinese_keeps_a_space_between_code_or_latin_text_and_its_and(build):
    build.language = "zh"
    assert hook._and_list(["a", "b"]) == "a 和 b"
    assert hook._and_list(["`x`", "甲"]) == "`x` 和甲"
    assert hook._and_list(["甲", "B"]) == "甲和 B"


def test_a_page_on_one_line_is_parted_where_its_elements_start():
    html = '<h1 id="t">T</h1><p>first screen</p><h2 id="a">A</h2><p>one</p><p>two</p><h2 id="b">B</h2><p>three</p>'
    assert hook.in_parts(html) == (
        '<h1 id="t">T</h1><p>first screen</p><h2 id="a">A</h2><div class="pitfalls-part"><p>one</p><p>two</p></div>\n'
        '<h2 id="b">B</h2><div class="pitfalls-part"><p>three</p></div>\n')
