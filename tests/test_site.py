"""The real site: one strict build, then what a reader gets — figures, tables, stamps, claims, notebooks."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import ROOT, build_log

pytestmark = pytest.mark.site

# Each page's built HTML against its Markdown source: every say() there is one checked claim here, and the
# number of figures is the page's (a page that loses or gains a figure must say so here).
PAGES = {
    "index.html": {"source": "index.md", "svg": 0},
    "seeding-order/index.html": {"source": "seeding-order.md", "svg": 2},
    "loader-overhead/index.html": {"source": "loader-overhead.md", "svg": 2},
    "update-steps/index.html": {"source": "update-steps.md", "svg": 7},
    "environment/index.html": {"source": "environment.md", "svg": 0},
    # the question's loop by torch release: drawn when this machine has other releases recorded (results/)
    "versions/index.html": {"source": "versions.md", "svg": 1},
}
# The Chinese edition: every page's twin under zh/, with the same figures, tables and claims.
PAGES.update({f"zh/{page}": {**expected, "source": f"zh/{expected['source']}"} for page, expected in list(PAGES.items())})
NOTEBOOKS = ["notebooks/question_seeding/index.html", "notebooks/question_steps/index.html"]
NOTEBOOKS += [f"zh/{notebook}" for notebook in NOTEBOOKS]


def _figures(html: str) -> list[str]:
    return re.findall(r'<figure class="pitfalls-figure"[^>]*>.*?</figure>', html, flags=re.S)


def _says(markdown: str) -> tuple[int, int]:
    """How many ``say(`` calls a page's exec blocks make on every machine, and how many only under an ``if``
    (claims about a GPU, or about torch.compile where it runs: otherwise the page says why there is none); None
    for the latter when a ``say(`` sits in a loop (one claim per item: no upper bound)."""
    always = only_if = looped = 0
    for block in re.findall(r'```python exec="1"[^\n]*\n(.*?)```', markdown, flags=re.S):
        lines = block.splitlines()
        for number, line in enumerate(lines):
            if "say(" not in line:
                continue
            # the lines it sits under: each the nearest line above it that is indented less than the last
            owners, depth = [], len(line) - len(line.lstrip())
            for i in range(number - 1, -1, -1):
                indent = len(lines[i]) - len(lines[i].lstrip())
                if lines[i].strip() and indent < depth:
                    owners.append(lines[i].lstrip())
                    depth = indent
            if any(owner.startswith(("for ", "while ")) for owner in owners):
                looped += line.count("say(")
            elif any(owner.startswith(("if ", "elif ", "else")) for owner in owners):
                only_if += line.count("say(")
            else:
                always += line.count("say(")
    return always, only_if if not looped else None


# Lines a reader takes for an alarm that is none: torch's CUDA probes and profiler markers on a CPU machine, NumPy's
# import warning, the notebook kernel's transport warning, any ERROR or traceback.
# (a stack's frame line, '  File "…", line N': a warning printed with its stack reads as a crash)
# what reads as an alarm in a build's log: the same lines the newcomer's benchmark counts (benchmarks/first_page.py)
sys.path.insert(0, str(ROOT / "benchmarks"))
from first_page import ALARMS  # noqa: E402


def test_the_build_log_holds_no_line_that_reads_as_an_alarm(built_site):
    log = build_log(built_site)
    assert log.is_file(), f"no build log beside {built_site} (make test and the built_site fixture write {log.name})"
    alarms = [line for line in log.read_text(encoding="utf-8").splitlines() if ALARMS.search(line)]
    assert not alarms, "\n".join(alarms[:20])


def test_the_claim_count_knows_which_claims_run_only_on_some_machines():
    block = ('```python exec="1"\nprint(say(a, "x"),\n      say(b, "y"))\nif cuda:\n    print(say(c, "z"),\n'
             '          say(d, "w"))\nelse:\n    print("no GPU")\n```\n')
    assert _says(block) == (2, 2), "continuation lines belong to their statement"
    looped = block.replace("if cuda:", "for row in rows:")
    assert _says(looped) == (2, None), "a claim per row: as many as there are rows"


@pytest.mark.parametrize("page", sorted(PAGES))
def test_page_has_its_figures_claims_and_tables(built_site, page):
    html = (built_site / page).read_text(encoding="utf-8")
    expected = PAGES[page]
    assert len(_figures(html)) == expected["svg"], f"{page}: not the page's number of inline SVG figures"
    assert all("<svg" in f for f in _figures(html))
    always, only_if = _says((ROOT / "docs" / expected["source"]).read_text(encoding="utf-8"))
    # A timing claim that noise cannot decide on this machine is shown as undecided, still one per say().
    claims = re.findall(r'class="pitfalls-claim(?: pitfalls-claim--undecided)?"', html)
    assert always <= len(claims) <= always + (only_if if only_if is not None else len(claims)), (
        f"{page}: {len(claims)} claims for {always} say() always run and {only_if} run only on some machines")
    assert "Traceback" not in html and "exited with" not in html
    if page not in ("index.html", "zh/index.html"):
        assert "<table>" in html, f"{page}: no table"
    twin = page.removeprefix("zh/")
    if twin != page:  # the Chinese page: as many tables and claims as its English twin, in Chinese
        english = (built_site / twin).read_text(encoding="utf-8")
        assert html.count("<table>") == english.count("<table>"), f"{page}: not as many tables as /{twin}"
        assert len(claims) == len(re.findall(r'class="pitfalls-claim(?: pitfalls-claim--undecided)?"', english)), (
            f"{page}: not as many checked claims as /{twin}")
        assert '<html lang="zh"' in html, f"{page}: not marked as Chinese"


def test_every_timing_table_carries_the_environment_stamp(built_site):
    """Below the table, or once for the page in its In short when the table was measured there."""
    for page in PAGES:
        html = (built_site / page).read_text(encoding="utf-8")
        said = re.search(r"(?:Numbers on this page measured with|本页数字的测量环境：)\s*([^<]*?)[.。]\s*<", html)
        for table in re.findall(r"<table>.*?</table>", html, flags=re.S):
            if "× baseline" in table:
                after = html[html.index(table) + len(table):][:2000]
                stamped = 'class="pitfalls-stamp"' in after and "torch " in after and "threads" in after
                assert stamped or said, f"{page}: a timing table has no stamp, and its page names none"


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
    assert f'href="{source}"' in html, "no download link to the notebook's source"


@pytest.mark.parametrize("notebook", ["question_seeding", "question_steps"])
def test_the_chinese_notebook_shows_the_english_notebooks_one_run(built_site, notebook):
    """Executed once: the Chinese page's outputs are the English page's, value for value."""
    pattern = PRINTED[notebook][0]
    english = (built_site / "notebooks" / notebook / "index.html").read_text(encoding="utf-8")
    chinese = (built_site / "zh" / "notebooks" / notebook / "index.html").read_text(encoding="utf-8")
    assert re.findall(pattern, chinese) == re.findall(pattern, english) != []
    assert re.findall(r"data:image/png;base64,([^\"']{64})", chinese) == re.findall(
        r"data:image/png;base64,([^\"']{64})", english), "not the same figures"
    assert '<html lang="zh"' in chinese and "No description has been provided" not in chinese


# What each notebook prints, and how many such lines it prints.
PRINTED = {
    "question_seeding": (r"(Direct: loss is|Loader: Loss is) ([-\d.e]+)", 2),
    "question_steps": (r"Batch Size (\d+), Epoch (\d+), Loss: ([-\d.e]+)", 8),
}


@pytest.mark.parametrize("notebook", sorted(PRINTED))
def test_notebook_prints_what_the_original_script_prints(built_site, tmp_path, notebook):
    """Run the notebook's code as a plain script, with the one intra-op thread the build executes it with: what it
    prints equals what the built page shows."""
    pattern, lines = PRINTED[notebook]
    html = (built_site / "notebooks" / notebook / "index.html").read_text(encoding="utf-8")
    page_values = re.findall(pattern, html)
    assert len(page_values) == lines, page_values
    code = "\n".join(line for line in (ROOT / "docs" / "notebooks" / f"{notebook}.py").read_text().splitlines()
                     if not line.startswith("# "))
    script = tmp_path / f"{notebook}.py"
    script.write_text(code)
    out = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=900,
                         env={**os.environ, "MPLBACKEND": "Agg", "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"},
                         cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    assert re.findall(pattern, out.stdout) == page_values


def _visible_text(html: str) -> str:
    """A page's text as a reader sees it: no tags, no claim tips, whitespace collapsed."""
    import html as html_module

    html = re.sub(r'<span class="pitfalls-claim__tip"[^>]*>.*?</span>', " ", html, flags=re.S)
    html = re.sub(r"<(script|style)\b.*?</\1>", " ", html, flags=re.S)
    return " ".join(html_module.unescape(re.sub(r"<[^>]+>", " ", html)).split())


def test_a_quantity_quoted_in_several_places_reads_the_same_everywhere(built_site):
    """The question's loader ratios and the per-sample share are quoted on the home page, in the loader page's
    In short, in its table, its claims and its summary: each reads the same, to the digit, wherever it is."""
    from snippets.experiments.loader import derive, figures, measure
    from snippets.lab import run
    from snippets.lab import render
    from snippets.lab.render import ratio_interval

    # the home page's answers; its notation section prints examples of the notation, not measurements
    home = _visible_text((built_site / "index.html").read_text(encoding="utf-8")).rsplit("How to read the figures", 1)[0]
    # the page's note on a busy machine lists other quantities too (each as its own table prints it)
    loader = _visible_text(re.sub(r'<details class="warning pitfalls-conditions">.*?</details>', "",
                                  (built_site / "loader-overhead" / "index.html").read_text(encoding="utf-8"),
                                  flags=re.S))
    in_short, rest = loader.split("In short", 1)[1].split("The loss half of the question", 1)
    summary = rest.split("Summary", 1)[1]
    ratios = derive.question_ratios(run(measure.question_timing))
    per_sample = figures.percent(derive.breakdown_shares(run(measure.breakdown))["per_sample"])
    problems = []
    names = ("DataLoader", "DataLoader + BatchedTensorDataset", "TensorLoader")
    for name in names:
        shown = ratio_interval(ratios[name])
        for where, text in (("home page", home), ("loader page, In short", in_short),
                            ("loader page, Summary", summary), ("loader page, question's table", rest)):
            if shown not in text:
                problems.append(f"{name} ÷ direct is {shown} but the {where} does not say so")
        value = shown.split(" (")[0]
        # the value on its own, not the tail of another number ("13×" inside "1.13×")
        # (another of the three ratios may round to the same value: its own interval is no second reading of this one)
        others = set(re.findall(r"(?<![\d.,])" + re.escape(value) + r" \([^)]*\)", " ".join((home, in_short, summary)))) - {
            ratio_interval(ratios[other]) for other in names}
        if others:
            problems.append(f"{name} ÷ direct is {shown}, also printed as {sorted(others)}")
    stage_table = rest.split("Stage, timed inside DataLoader epochs", 1)[1].split("Timed on its own", 1)[0]
    shares = derive.breakdown_shares(run(measure.breakdown))
    in_a_cell = render.percent_interval(shares["per_sample"], flag=True)
    for where, text, shown in (("loader page, In short", in_short, per_sample),
                               ("loader page, the answer's explanations", rest, per_sample),
                               ("loader page, the stage table", stage_table, in_a_cell)):
        if shown not in text:
            problems.append(f"the per-sample share is {shown} but the {where} does not say so")
    for key in ("indexing", "collate"):
        # a sentence prints the number; a table's cell may say instead that it was not measured reliably here
        for where, text, shown in (("home page", home, figures.percent(shares[key])),
                                   ("loader page, the stage table", stage_table,
                                    render.percent_interval(shares[key], flag=True))):
            if shown not in text:
                problems.append(f"the {key} share is {shown} but the {where} does not say so")
    # the Chinese edition prints the same numbers, in the same places
    zh_home = _visible_text((built_site / "zh" / "index.html").read_text(encoding="utf-8")).rsplit("如何阅读图表", 1)[0]
    zh_loader = _visible_text((built_site / "zh" / "loader-overhead" / "index.html").read_text(encoding="utf-8"))
    from snippets.lab.mkdocs_hook import close_cjk_spacing

    def in_chinese(text: str) -> str:  # its words translated, its brackets full-width around them, as the build does
        return close_cjk_spacing(text.replace("not measured reliably here", "此处未能可靠测得"))

    for name in ("DataLoader", "DataLoader + BatchedTensorDataset", "TensorLoader"):
        shown = in_chinese(ratio_interval(ratios[name]))
        for where, text in (("zh home page", zh_home), ("zh loader page", zh_loader)):
            if shown not in text:
                problems.append(f"{name} ÷ direct is {shown} but the {where} does not say so")
    for shown in (per_sample, figures.percent(shares["indexing"]), figures.percent(shares["collate"])):
        plain = in_chinese(shown)
        if plain not in zh_loader:
            problems.append(f"the zh loader page does not print the share {plain}")
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("page, name, words", [
    ("index.html", "PyTorch pitfalls, measured", "by its authors; its code is under the MIT licence"),
    ("zh/index.html", "PyTorch 常见陷阱实测", "由项目作者们编写，代码采用 MIT 许可证")])
def test_the_footer_names_the_project_and_its_licence_in_the_pages_language(built_site, page, name, words):
    import re

    footer = re.search(r'<div class="pitfalls-footer">(.*?)</div>', (built_site / page).read_text(encoding="utf-8"), re.S)
    assert footer, f"{page}: no footer line"
    text = re.sub(r"\s+", " ", footer.group(1)).strip()
    assert text == f"{name} · {words}", "without REPO_URL: no link, and no report link"


@pytest.mark.parametrize("page", sorted(PAGES))
def test_no_checked_sentence_is_also_marked_not_a_finding(built_site, page):
    """A ✓ sentence states the bound it checked and the value it measured: never "not measured reliably here"."""
    html = (built_site / page).read_text(encoding="utf-8")
    checked = re.findall(r'<span class="pitfalls-claim" [^>]*>(.*?)</span><span class="pitfalls-claim__tip"', html,
                         flags=re.S)
    marked = [re.sub(r"<[^>]+>", "", text) for text in checked
              if "not measured reliably here" in text or "此处未能可靠测得" in text]
    assert not marked, f"{page}: checked sentences that print no value: {marked}"


@pytest.mark.parametrize("page", ["loader-overhead/index.html", "zh/loader-overhead/index.html"])
def test_each_timing_claim_states_its_bound_beside_its_value(built_site, page):
    html = (built_site / page).read_text(encoding="utf-8")
    claims = re.findall(r'<span class="pitfalls-claim[^"]*" [^>]*data-check="loader\.[^"]+"[^>]*>(.*?)</span>'
                        r'<span class="pitfalls-claim__tip"', html, flags=re.S)
    timed = [re.sub(r"<[^>]+>", "", c) for c in claims if "×" in c or "%" in c]
    stated = [c for c in timed if re.search(r"(checked: (more|less) than|校验：)[^)）]*?[\d.,]+[×%]", c)]
    assert timed and len(stated) >= 10, f"{page}: {len(stated)} of {len(timed)} timing claims state their bound"


def test_no_recorded_machine_is_shown_as_a_recording_that_cannot_be_drawn(built_site):
    """The committed recordings are current and valid: every panel that redraws them draws them, in both
    languages (a derivation or a two-argument drawer listed in a panel once printed an AttributeError here)."""
    said = set()
    for page in built_site.rglob("*.html"):
        html = page.read_text(encoding="utf-8")
        # the words first, then the text around them: a pattern that starts with [^<>]* is quadratic on long texts
        for found in re.finditer("cannot be drawn|无法绘制", html):
            start = max(html.rfind("<", 0, found.start()), html.rfind(">", 0, found.start())) + 1
            ends = [i for i in (html.find("<", found.end()), html.find(">", found.end())) if i != -1]
            said.add(f"{page.relative_to(built_site)}: {html[start:min(ends, default=len(html))]}")
    assert not said, sorted(said)


@pytest.mark.parametrize("prefix", ["", "zh/"])
def test_the_versions_page_shows_every_claim_of_the_site_on_every_recorded_release(built_site, prefix):
    from snippets.lab import machines

    html = (built_site / prefix / "versions" / "index.html").read_text(encoding="utf-8")
    assert "data-pending" not in html, "the matrix took the marker's place"
    table = re.search(r'<div class="pitfalls-version-matrix"><table>(.*?)</table>', html, re.S).group(1)
    headers = re.findall(r'<th scope="col">(.*?)</th>', table)
    recorded = sorted({machines.short_release(json.loads(path.read_text())["fingerprint"]["torch"])
                       for path in (ROOT / "results").glob("*/manifest.json")})
    shown = [re.sub(r"<br>.*", "", header) for header in headers[1:-1]]
    assert set(recorded) <= set(shown), f"releases {recorded}, columns {shown}"
    root = built_site / prefix
    pages = [root / "index.html", *(path for path in root.glob("*/index.html")
                                    if path.parent.name not in ("versions", "zh"))]
    said = set()
    for page in pages:
        said |= set(re.findall(r'class="pitfalls-claim[^"]*"[^>]*data-check="([^"]+)"', page.read_text()))
    rows = set(re.findall(r'<tr data-check="([^"]+)">', table))
    assert said and rows == said, f"claims not in the matrix: {sorted(said - rows)}; rows for none: {sorted(rows - said)}"
    cells = re.findall(r'<td class="pitfalls-version-matrix__(\w+)"', table)
    assert cells and len(cells) == len(re.findall(r"<tr data-check=", table)) * len(shown)


def test_every_relative_link_in_a_page_leads_to_a_built_page_or_file(built_site):
    """Links written in a page's markdown are rewritten by MkDocs, but those printed by the code a page runs are
    not: a printed ``update-steps.md`` once led nowhere (caught then only by the browser's link test)."""
    broken = set()
    for page in built_site.rglob("*.html"):
        html = page.read_text(encoding="utf-8")
        for href in re.findall(r'<a\s[^>]*?href="([^"]*)"', html):
            if re.match(r"[a-z][a-z0-9+.-]*:|#|//", href) or not href:
                continue  # another site, a mail address, this page's own anchor
            path = href.split("#")[0].split("?")[0]
            target = (built_site / path.lstrip("/") if path.startswith("/") else page.parent / path).resolve()
            if path.endswith("/") or target.is_dir():
                target = target / "index.html"
            if path.endswith(".md") or not target.is_file():
                broken.add(f"{page.relative_to(built_site)}: {href}")
    assert not broken, sorted(broken)
