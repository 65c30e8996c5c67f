"""The real site: one strict build, then what a reader gets — figures, tables, stamps, claims, notebooks."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import ROOT, build_site

pytestmark = pytest.mark.site

PAGES = {
    "index.html": {"claims": 0, "svg": 0},
    "seeding-order/index.html": {"claims": 10, "svg": 2},
    "loader-overhead/index.html": {"claims": 10, "svg": 2},
    "update-steps/index.html": {"claims": 25, "svg": 7},
    "environment/index.html": {"claims": 0, "svg": 0},
}
NOTEBOOKS = ["notebooks/question_seeding/index.html", "notebooks/question_steps/index.html"]


def _figures(html: str, *, timing: bool | None = None) -> list[str]:
    figures = re.findall(r'<figure class="pitfalls-figure"[^>]*>.*?</figure>', html, flags=re.S)
    if timing is None:
        return figures
    return [f for f in figures if f'data-timing="{str(timing).lower()}"' in f]


@pytest.mark.parametrize("page", sorted(PAGES))
def test_page_has_its_figures_claims_and_tables(built_site, page):
    html = (built_site / page).read_text(encoding="utf-8")
    expected = PAGES[page]
    assert len(_figures(html)) >= expected["svg"], f"{page}: too few inline SVG figures"
    assert all("<svg" in f for f in _figures(html))
    assert html.count('class="pitfalls-claim"') >= expected["claims"], f"{page}: too few checked claims"
    assert "Traceback" not in html and "exited with" not in html
    if page != "index.html":
        assert "<table>" in html, f"{page}: no table"


def test_every_timing_table_carries_the_environment_stamp(built_site):
    for page in PAGES:
        html = (built_site / page).read_text(encoding="utf-8")
        for table in re.findall(r"<table>.*?</table>", html, flags=re.S):
            if "× baseline" in table:
                after = html[html.index(table) + len(table):][:2000]
                assert 'class="pitfalls-stamp"' in after, f"{page}: a timing table has no stamp"
                assert "torch " in after and "threads" in after


def test_environment_page_names_the_machine(built_site):
    import torch

    html = (built_site / "environment" / "index.html").read_text(encoding="utf-8")
    assert torch.__version__ in html and f"{torch.get_num_threads()}" in html and "Built at (UTC)" in html


@pytest.mark.parametrize("notebook", NOTEBOOKS)
def test_notebooks_are_executed_and_downloadable(built_site, notebook):
    html = (built_site / notebook).read_text(encoding="utf-8")
    assert "jp-OutputArea" in html and "data:image/png;base64" in html
    source = Path(notebook).parent.name + ".py"
    assert (built_site / Path(notebook).parent / source).is_file()
    assert f'href="{source}"' in html or f"{source}\"" in html


def test_question_notebook_prints_what_the_original_script_prints(built_site, tmp_path):
    """Run the notebook's code as a plain script: its printed losses equal the built page's."""
    html = (built_site / "notebooks/question_seeding/index.html").read_text(encoding="utf-8")
    page_losses = re.findall(r"(Direct: loss is|Loader: Loss is) ([-\d.e]+)", html)
    assert len(page_losses) == 2, page_losses
    code = "\n".join(line for line in (ROOT / "docs/notebooks/question_seeding.py").read_text().splitlines()
                     if not line.startswith("# "))
    script = tmp_path / "question.py"
    script.write_text(code)
    out = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=600,
                         env={**os.environ, "MPLBACKEND": "Agg"}, cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    script_losses = re.findall(r"(Direct: loss is|Loader: Loss is) ([-\d.e]+)", out.stdout)
    assert script_losses == page_losses


def test_non_timing_figures_are_byte_identical_across_builds(built_site, tmp_path):
    """A second build that recomputes every non-timing experiment draws the same SVG bytes."""
    second = tmp_path / "second"
    process = build_site(second, env_extra={"REFRESH": "nontiming"})
    assert process.returncode == 0, process.stderr[-4000:]
    compared = 0
    for page in PAGES:
        first_figures = _figures((built_site / page).read_text(encoding="utf-8"), timing=False)
        second_figures = _figures((second / page).read_text(encoding="utf-8"), timing=False)
        assert first_figures == second_figures, f"{page}: a non-timing figure changed between builds"
        compared += len(first_figures)
    assert compared >= 3
