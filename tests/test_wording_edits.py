"""Evidence that survives an edit, on a throwaway copy of the project (with a copy of the caches and of the
recordings in ``results/``): an experiment's result is keyed by the code it runs (``code.reach``), so

* editing presentation — labels in ``describe()``, ``stamp()``, ``decide()``, renderers, checks, the lab's
  drawing and claim code, a catalogue, the prose —, or a comment or docstring inside an experiment re-runs nothing
  and leaves every recorded result current (a frozen build, how the site is published, still builds); an
  experiment added beside the others, and shown on a page, runs alone;
* a changed line inside one experiment, or inside a helper only one experiment calls, re-runs exactly those
  experiments, and a frozen build stops naming one of them;
* a helper in ``derive.py`` that a figure draws with redraws that figure.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import project_copy

pytestmark = pytest.mark.site

STALE = """
from snippets.lab import cache, machines
for rec in machines.recordings():
    for name, sources in sorted(rec.manifest["experiments"].items()):
        exp = cache.find_experiment(name)
        recorded = sources if isinstance(sources, list) else [sources]
        if exp is None or cache.source_digest(exp.func) not in recorded:
            print(rec.label, name)
"""


def _env(copy: Path, **extra: str) -> dict:
    # English alone (PITFALLS_LANGUAGE): what re-runs does not depend on the number of languages
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1", "PITFALLS_CACHE_DIR": str(copy / ".cache" / "results"),
           "PITFALLS_LANGUAGE": "en", "PITFALLS_RESULTS_DIR": str(copy / "results"), **extra}
    env.pop("REFRESH", None)
    if not extra.get("FROZEN"):
        env.pop("FROZEN", None)
    return env


def _build(copy: Path, **extra: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "-d", str(copy / "site")],
                          cwd=copy, env=_env(copy, **extra), capture_output=True, text=True, timeout=1800)


def _reruns(process: subprocess.CompletedProcess) -> set[str]:
    return set(re.findall(r"pitfalls: running ([\w.]+)\(", process.stderr))


def _stale(copy: Path) -> list[str]:
    """``label experiment`` for every recorded result that today's code in ``copy`` would not use."""
    process = subprocess.run([sys.executable, "-c", STALE], cwd=copy, env=_env(copy), capture_output=True,
                             text=True, timeout=600)
    assert process.returncode == 0, process.stderr[-3000:]
    return process.stdout.split("\n")[:-1]


def _edit(path: Path, old: str, new: str) -> None:
    text = path.read_text(encoding="utf-8")
    assert text.count(old) == 1, f"{path.name}: {old!r} found {text.count(old)} times"
    path.write_text(text.replace(old, new), encoding="utf-8")


@pytest.fixture(scope="module")
def pristine(tmp_path_factory, built_site) -> Path:
    """The project, its caches warm (the session's built site filled them) and its recordings, in a folder of its
    own, built once: that build runs nothing, and every recording in it is current."""
    project = project_copy(tmp_path_factory.mktemp("pristine") / "project", caches=True)
    first = _build(project)
    assert first.returncode == 0, first.stderr[-4000:]
    assert not _reruns(first), "the copy's caches were not warm"
    assert _stale(project) == [], "the recordings in results/ are stale: re-record them (make record)"
    return project


@pytest.fixture()
def copy(tmp_path, pristine) -> Path:
    """A copy of the pristine project, for one test to edit (its caches as its build left them)."""
    return Path(shutil.copytree(pristine, tmp_path / "project", symlinks=True, copy_function=shutil.copy2))


def test_presentation_edits_rerun_nothing_and_keep_every_recording_current(copy):
    lab = copy / "snippets" / "lab"
    _edit(lab / "environment.py", '("CPU model", Verbatim(cpu_model()))', '("CPU model name", Verbatim(cpu_model()))')
    _edit(lab / "environment.py", """parts = [f"torch {fp['torch']}",""", """parts = [f"PyTorch {fp['torch']}",""")
    _edit(lab / "timing.py", "def decide(interval: dict, relation: str, threshold: float) -> bool | None:",
          "def decide(interval: dict, relation: str, threshold: float, *, edited: bool = True) -> bool | None:")
    edited = [lab / name for name in ("render.py", "claims.py", "provenance.py", "machines.py", "i18n.py")]
    for package in sorted((copy / "snippets" / "experiments").iterdir()):
        edited += [package / name for name in ("figures.py", "checks.py", "derive.py") if (package / name).exists()]
    assert len(edited) >= 5 + 8, f"expected figures, checks and derive modules of three pages, got {edited}"
    for module in edited:  # a docstring and a new function: code, but none that an experiment reaches
        module.write_text(module.read_text().replace('"""', '"""Edited wording. ', 1)
                          + "\n\ndef _an_edit_of_presentation():\n    return 'edited'\n")
    _edit(lab / "zh.po", 'msgid "CPU model"\nmsgstr "CPU 型号"', 'msgid "CPU model"\nmsgstr "处理器型号"')
    measure = copy / "snippets" / "experiments" / "loader" / "measure.py"
    before_added = measure.read_text()
    measure.write_text(before_added + "\n\n@experiment()\ndef added_beside_the_others() -> dict:\n"
                       "    return {'added': True}\n")
    shown = copy / "docs" / "loader-overhead.md"  # a page shows it: the build measures no experiment for nothing
    page_before = shown.read_text()
    shown.write_text(page_before + '\n```python exec="1" id="probe-added"\nfrom snippets.lab import run, code_panel\n'
                     "from snippets.experiments.loader import measure\n\n"
                     "print(code_panel(run(measure.added_beside_the_others)))\n```\n")
    seeding = copy / "snippets" / "experiments" / "seeding" / "measure.py"
    _edit(seeding, '    """A DataLoader with its own generator leaves the global stream alone and repeats its order."""\n'
                   "    dataset = TensorDataset(torch.arange(n_samples))\n",
          '    """Edited: the docstring of an experiment."""\n'
          "    # a comment inside the experiment\n    dataset = TensorDataset(torch.arange(n_samples))  # and here\n")
    pages = sorted((copy / "docs").glob("*.md"))
    for page in pages:
        page.write_text(page.read_text() + f"\n\nEdited-wording-{page.stem}.\n")

    second = _build(copy)
    assert second.returncode == 0, second.stderr[-4000:]
    assert _reruns(second) == {"loader.added_beside_the_others"}, "editing presentation re-ran experiments"
    for page in pages:
        html = copy / "site" / ("index.html" if page.stem == "index" else f"{page.stem}/index.html")
        assert f"Edited-wording-{page.stem}" in html.read_text(), f"{page.name}: the edit was not built"
    assert "CPU model name" in (copy / "site" / "environment" / "index.html").read_text(), "describe() was drawn"
    assert "PyTorch 2." in (copy / "site" / "loader-overhead" / "index.html").read_text(), "stamp() was drawn"
    assert _stale(copy) == [], "a presentation edit made recorded results stale"
    measure.write_text(before_added)  # no machine recorded it: without it, the site builds from the recordings
    shown.write_text(page_before + f"\n\nEdited-wording-{shown.stem}.\n")
    frozen = _build(copy, FROZEN="1")
    assert frozen.returncode == 0, frozen.stderr[-4000:]
    assert _reruns(frozen) == set()


def test_a_changed_line_reruns_exactly_its_experiment_and_stales_only_it(copy):
    seeding = copy / "snippets" / "experiments" / "seeding" / "measure.py"
    # inside one experiment
    _edit(seeding, "        global_untouched = torch.equal(before, torch.get_rng_state())\n",
          "        global_untouched = bool(torch.equal(before, torch.get_rng_state()))\n")
    # inside a helper that only one experiment (creation_order) calls
    _edit(seeding, '"equal": torch.equal(pa, pb),', '"equal": bool(torch.equal(pa, pb)),')
    build = _build(copy)
    assert build.returncode == 0, build.stderr[-4000:]
    assert _reruns(build) == {"seeding.generator_isolation", "seeding.creation_order"}
    labels = sorted({line.split()[0] for line in _stale(copy)})
    assert labels, "no recording in results/"
    assert _stale(copy) == [f"{label} {name}" for label in labels
                            for name in ("seeding.creation_order", "seeding.generator_isolation")]
    frozen = _build(copy, FROZEN="1")
    assert frozen.returncode != 0
    assert re.search(r"FROZEN=1: page docs/[\w-]+\.md: experiment seeding\.(creation_order|generator_isolation)\(",
                     frozen.stderr), frozen.stderr[-3000:]


def _figure(html: str, experiment: str) -> str:
    found = re.search(rf'<figure class="pitfalls-figure" tabindex="0" data-experiment="{re.escape(experiment)}".*?</figure>',
                      html, flags=re.S)
    assert found, f"no figure of {experiment}"
    return found.group(0)


def test_a_derive_helper_edit_redraws_the_figure_it_feeds_and_reruns_nothing(copy):
    page = copy / "site" / "loader-overhead" / "index.html"
    before = _figure(page.read_text(), "loader.size_scaling")
    _edit(copy / "snippets" / "experiments" / "loader" / "derive.py",
          'return [p[key] for p in chosen], [p["median"] for p in chosen]',
          'return [p[key] for p in chosen], [p["median"] * 2 for p in chosen]')
    build = _build(copy)
    assert build.returncode == 0, build.stderr[-4000:]
    assert _reruns(build) == set(), "a drawing helper keys no result"
    assert _figure(page.read_text(), "loader.size_scaling") != before, "the old figure came back"
