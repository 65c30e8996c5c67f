"""``FROZEN=1``: the whole site from the recorded machines in ``results/`` alone, on a clean checkout.

Nothing runs: no experiment, no notebook. A recording made with older code stops the build with one line naming
the page, the experiment and the machine.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys

import pytest

from conftest import ROOT, project_copy

pytestmark = pytest.mark.site


def _frozen_build(copy, site):
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1", "FROZEN": "1",
           "PITFALLS_CACHE_DIR": str(copy / ".cache" / "results")}
    env.pop("REFRESH", None)
    env.pop("PITFALLS_RESULTS_DIR", None)
    return subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "-d", str(site)], cwd=copy, env=env,
                          capture_output=True, text=True, timeout=1800)


@pytest.fixture(scope="module")
def lead() -> str:
    primary = ROOT / "results" / "primary"
    assert primary.is_file(), "results/primary is missing: record a machine (make record MACHINE=…) and name it there"
    return primary.read_text(encoding="utf-8").strip()


def test_a_frozen_build_from_a_clean_checkout_runs_nothing(tmp_path, lead):
    copy = project_copy(tmp_path / "project")  # no .cache: a clean checkout
    assert not (copy / ".cache").exists()
    process = _frozen_build(copy, tmp_path / "site")
    assert process.returncode == 0, process.stderr[-6000:]
    assert "pitfalls: running" not in process.stderr, "a frozen build ran an experiment"
    assert "executing notebook" not in process.stderr, "a frozen build executed a notebook"
    assert not (copy / ".cache" / "results").exists() or not any((copy / ".cache" / "results").rglob("*.json"))
    environment = (tmp_path / "site" / "environment" / "index.html").read_text(encoding="utf-8")
    assert f"its results were recorded on <code>{lead}</code>" in environment
    loader = (tmp_path / "site" / "loader-overhead" / "index.html").read_text(encoding="utf-8")
    from snippets.lab.machines import hardware  # another machine, not a torch release of this one

    def fingerprint(name: str) -> dict:
        return json.loads((ROOT / "results" / name / "manifest.json").read_text(encoding="utf-8"))["fingerprint"]

    others = [p.name for p in (ROOT / "results").iterdir() if p.is_dir() and p.name != lead
              and not p.name.startswith(".") and hardware(fingerprint(p.name)) != hardware(fingerprint(lead))]
    if others:
        panels = " ".join(f.read_text(encoding="utf-8") for f in (tmp_path / "site" / "code").glob("*.html"))
        assert "The same measured on other machines" in panels, "inside the code panels, loaded when opened"
        assert "Recorded machines:" in loader and "The same measured on other machines" not in loader, "tips"
    else:  # only this machine and its torch releases: no box of other machines anywhere
        assert "The same measured on other machines" not in loader
    for notebook in ("question_seeding", "question_steps"):  # the source's cells, the recording's outputs
        def code_cells(path):
            cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
            return [(cell["source"], cell["outputs"]) for cell in cells if cell["cell_type"] == "code"]

        published = tmp_path / "site" / "notebooks" / notebook / f"{notebook}.ipynb"
        recorded = ROOT / "results" / lead / "notebooks" / f"{notebook}.ipynb"
        assert code_cells(published) == code_cells(recorded) and code_cells(published)


def test_a_stale_recording_stops_a_frozen_build_naming_page_experiment_and_machine(tmp_path, lead):
    copy = project_copy(tmp_path / "project")
    measure = copy / "snippets" / "experiments" / "loader" / "measure.py"
    text = measure.read_text(encoding="utf-8")
    line = '"""Iterate over one epoch and drop every batch: the loader\'s own cost."""\n    for _ in loader:\n        pass\n'
    assert text.count(line) == 1
    # a changed line of code the loader's experiments run (a comment would change nothing)
    measure.write_text(text.replace(line, line.replace("pass", "continue")), encoding="utf-8")
    process = _frozen_build(copy, tmp_path / "site")
    assert process.returncode != 0
    assert re.search(r"FROZEN=1: page docs/[\w-]+\.md: experiment loader\.\w+\(", process.stderr), process.stderr[-3000:]
    assert f"is recorded on {lead} with an older version of this experiment" in process.stderr
    assert "pitfalls: running" not in process.stderr
