"""The built site shows, on each page, the code of every experiment that page runs — as it is in its file."""

from __future__ import annotations

import html
import inspect
import re

import pytest

from conftest import ROOT

pytestmark = pytest.mark.site

PAGES = ["index", "seeding-order", "loader-overhead", "update-steps"]


def _experiments_run(markdown: str) -> set[tuple[str, str]]:
    """(page package, function) for every ``run(measure.X`` in the page's exec blocks."""
    found = set()
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
    shown = set(re.findall(r'<details class="example pitfalls-code" data-experiment="([\w.]+)" data-search-exclude>', built))
    for package, function in sorted(expected):
        name = f"{package}.{function}"
        assert name in shown, f"{page}: runs {name} but shows no code panel for it"
        measure = importlib.import_module(f"snippets.experiments.{package}.measure")
        source = inspect.getsource(getattr(measure, function).func).strip()
        code = html.unescape(re.sub(r"<[^>]+>", "", built))
        assert source in code, f"{page}: {name}'s source is not shown as it is in its file"
