"""Editing presentation re-runs no measurement: every renderer, check, lab presentation module and page is edited
on a throwaway copy of the project (with a copy of the caches), and the rebuild runs no experiment."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import project_copy

pytestmark = pytest.mark.site

PRESENTATION = ["snippets/lab/render.py", "snippets/lab/claims.py", "snippets/lab/provenance.py",
                "snippets/lab/progress.py"]


def _build(copy: Path) -> subprocess.CompletedProcess:
    # English alone (PITFALLS_LANGUAGE): what re-runs does not depend on the number of languages
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1", "PITFALLS_CACHE_DIR": str(copy / ".cache" / "results"),
           "PITFALLS_LANGUAGE": "en"}
    env.pop("REFRESH", None)
    return subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "-d", str(copy / "site")],
                          cwd=copy, env=env, capture_output=True, text=True, timeout=1800)


def test_editing_words_renderers_and_checks_reruns_nothing(tmp_path, built_site):
    copy = project_copy(tmp_path / "project", caches=True)
    first = _build(copy)
    assert first.returncode == 0, first.stderr[-4000:]
    assert "pitfalls: running" not in first.stderr, "the copy's caches were not warm"

    edited = [copy / path for path in PRESENTATION]
    for package in sorted((copy / "snippets" / "experiments").iterdir()):
        edited += [package / name for name in ("figures.py", "checks.py") if (package / name).exists()]
    assert len(edited) >= len(PRESENTATION) + 6, f"expected figures and checks of three pages, got {edited}"
    for module in edited:
        module.write_text(module.read_text().replace('"""', '"""Edited wording. ', 1))
    pages = sorted((copy / "docs").glob("*.md"))
    for page in pages:
        page.write_text(page.read_text() + f"\n\nEdited-wording-{page.stem}.\n")

    second = _build(copy)
    assert second.returncode == 0, second.stderr[-4000:]
    reruns = [line for line in second.stderr.splitlines() if "pitfalls: running" in line]
    assert not reruns, f"editing presentation re-ran experiments: {reruns}"
    for page in pages:
        html = copy / "site" / ("index.html" if page.stem == "index" else f"{page.stem}/index.html")
        assert f"Edited-wording-{page.stem}" in html.read_text(), f"{page.name}: the edit was not built"


def test_editing_a_measuring_module_reruns_its_experiments(tmp_path, built_site):
    """The control: the same procedure with a measuring module edited does re-run (the test above can fail)."""
    copy = project_copy(tmp_path / "project", caches=True)
    module = copy / "snippets" / "experiments" / "seeding" / "measure.py"
    module.write_text(module.read_text() + "\n# an edit of the measuring code\n")
    build = _build(copy)
    assert build.returncode == 0, build.stderr[-4000:]
    assert "pitfalls: running seeding.creation_order" in build.stderr
    assert "pitfalls: running loader." not in build.stderr, "an edit of the seeding page re-ran the loader page"
