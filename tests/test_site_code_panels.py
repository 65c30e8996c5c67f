"""The built site shows, on each page, the code of every experiment that page runs — as it is in its file."""

from __future__ import annotations

import html
import inspect
import re

import pytest

from conftest import ROOT, named_page, topic_pages

pytestmark = pytest.mark.site

PAGES = ["index", *topic_pages()]  # the home page runs experiments too


def _experiments_run(markdown: str) -> set[tuple[str, str]]:
    """(page package, function) for every ``run(measure.X`` in the page's exec blocks, or in its template (a page of
    named values: its topic's ``measure``)."""
    found = set()
    named = named_page(markdown)
    if named is not None:  # run(measure.x) of its topic, or run(loader.measure.x) of another
        found = {(package or named[0].get("topic"), function)
                 for package, function in re.findall(r"\brun\((?:(\w+)\.)?measure\.(\w+)", markdown)}
        markdown = "".join(re.findall(r"\{% raw %\}(.*?)\{% endraw %\}", markdown, flags=re.S))  # blocks left
    for block in re.findall(r'```python exec="1"[^\n]*\n(.*?)```', markdown, flags=re.S):
        packages = re.findall(r"from snippets\.experiments\.(\w+) import[^\n]*\bmeasure\b", block)
        for function in re.findall(r"run\(measure\.(\w+)", block):
            assert len(packages) == 1, f"cannot tell which page's measure module runs {function}"
            found.add((packages[0], function))
    return found


@pytest.mark.parametrize("page", PAGES)
def test_every_experiment_a_page_runs_has_its_code_on_that_page(built_site, page):
    import importlib

    markdown = (ROOT / "docs" / f"{page}.md").read_text(encoding="utf-8")
    built = (built_site / ("index.html" if page == "index" else f"{page}/index.html")).read_text(encoding="utf-8")
    expected = _experiments_run(markdown)
    assert expected or page == "index", f"{page}: no experiment found — has the page's convention changed?"
    # a section's one panel may show several experiments: data-experiment names each, space-separated
    shown = {name for names in re.findall(r'<details class="example pitfalls-code" data-experiment="([\w. ]+)" '
                                          r'data-search-exclude>', built) for name in names.split()}
    for package, function in sorted(expected):
        name = f"{package}.{function}"
        assert name in shown, f"{page}: runs {name} but shows no code panel for it"
        measure = importlib.import_module(f"snippets.experiments.{package}.measure")
        source = inspect.getsource(getattr(measure, function).func).strip()
        assert source in _panel_sources(built_site, page, built, name), (
            f"{page}: {name}'s source is not shown as it is in its file")


def _panel_sources(site, page: str, built: str, name: str) -> str:
    """The text of the sources ``name``'s panel on ``page`` loads (from the code folder), as a reader sees it."""
    panel = re.search(rf'<details class="example pitfalls-code" data-experiment="(?:[\w. ]+ )?{re.escape(name)}'
                      r'(?: [\w. ]+)?" data-search-exclude>.*?<div class="pitfalls-code__body" data-src="([^"]+)">',
                      built, re.S)
    assert panel, f"{page}: {name}'s panel does not link its sources"
    folder = site if page == "index" else site / page
    fragment = (folder / html.unescape(panel.group(1))).resolve()
    assert fragment.is_file(), f"{page}: {name}'s panel links {panel.group(1)}, which the build did not write"
    return html.unescape(re.sub(r"<[^>]+>", "", fragment.read_text(encoding="utf-8")))


@pytest.mark.parametrize("page", ["update-steps"])
def test_pages_stay_light_however_much_code_they_show(built_site, page):
    built = (built_site / page / "index.html").read_text(encoding="utf-8")
    panels = re.findall(r'data-src="([^"]+)"', built)
    assert len(panels) >= 10, f"{page}: only {len(panels)} deferred panels — has the convention changed?"
    assert 'data-key="' not in built and "<!--/pitfalls-code" not in built, "a panel kept its sources in the page"
    shown = sum((built_site / page / html.unescape(p)).stat().st_size for p in set(panels))
    assert shown > len(built) // 2, "the panels' sources are in the code folder, not in the page"
    # the longest page is about 400 kB with its panels deferred (a noisy build adds warnings, this stop's two new
    # sections 4 kB); its panels' sources are 880 kB more, so a page holding them again is far past this bound
    assert len(built) < 480_000, f"{page} is {len(built):,} bytes: the panels' sources are back in the page?"


@pytest.mark.parametrize("page", ["loader-overhead", "zh/loader-overhead"])
def test_the_whole_recipe_listing_loads_from_the_code_folder_as_it_is_in_its_file(built_site, page):
    built = (built_site / page / "index.html").read_text(encoding="utf-8")
    listing = re.search(r'<details class="example pitfalls-code pitfalls-listing" data-search-exclude>'
                        r'<summary>snippets/tensor_loader.py</summary>\n'
                        r'<div class="pitfalls-code__body" data-src="([^"]+)">', built)
    assert listing, f"{page}: the recipe's listing is not a panel that loads its code"
    assert "class TensorLoader" not in built.split(listing.group(0))[1].split("</details>")[0]
    fragment = built_site / page / html.unescape(listing.group(1))
    shown = html.unescape(re.sub(r"<[^>]+>", "", fragment.read_text(encoding="utf-8")))
    assert (ROOT / "snippets" / "tensor_loader.py").read_text(encoding="utf-8").strip() in shown


def test_repo_url_links_header_edit_buttons_and_code_panels(tmp_path, built_site):
    import os
    import subprocess
    import sys

    from conftest import project_copy

    copy = project_copy(tmp_path / "project", caches=True)
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1", "PITFALLS_CACHE_DIR": str(copy / ".cache" / "results"),
           "REPO_URL": "https://github.com/example/pitfalls", "REPO_BRANCH": "trunk", "REPO_REF": "abc123"}
    env.pop("REFRESH", None)
    process = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "-d", str(copy / "site")],
                             cwd=copy, env=env, capture_output=True, text=True, timeout=1800)
    assert process.returncode == 0, process.stderr[-4000:]
    assert "pitfalls: running" not in process.stderr
    page = (copy / "site" / "loader-overhead" / "index.html").read_text(encoding="utf-8")
    assert 'href="https://github.com/example/pitfalls"' in page, "the header does not link the repository"
    assert 'href="https://github.com/example/pitfalls/edit/trunk/docs/loader-overhead.md"' in page
    assert '<a href="https://github.com/example/pitfalls/issues/new">Report a problem</a>' in page, "the footer"
    assert '<a href="https://github.com/example/pitfalls">PyTorch pitfalls, measured</a>' in page
    # the sources' links are in the panels' files, which the page links
    page += "".join((copy / "site" / "loader-overhead" / html.unescape(src)).read_text(encoding="utf-8")
                    for src in set(re.findall(r'data-src="([^"]+)"', page)))
    links = re.findall(r'href="https://github.com/example/pitfalls/blob/abc123/([^"#]+)#L(\d+)-L(\d+)"', page)
    files = {path for path, _, _ in links}
    assert "snippets/experiments/loader/measure.py" in files and "snippets/lab/timing.py" in files
    for path, first, last in links:
        lines = (copy / path).read_text(encoding="utf-8").splitlines()
        assert 1 <= int(first) <= int(last) <= len(lines), f"{path}#L{first}-L{last} is outside the file"
        assert re.match(r"(def |class |@|[A-Za-z_]\w* *[:=])", lines[int(first) - 1].lstrip()), \
            f"{path}#L{first} is not a definition or an assignment"
