"""The real site: one strict build, then what a reader gets — figures, tables, stamps, claims, notebooks."""

from __future__ import annotations

import ast
import os
import re
import subprocess
import sys
import textwrap
import threading
from pathlib import Path

import pytest

from conftest import ROOT, build_log, named_page

pytestmark = pytest.mark.site

# Every page of the site, and its twin under zh/ (the Chinese edition): each built page against its Markdown source
# (every say() there is one checked claim, every figure a drawing function is called or handed for, one figure).
PAGES = {("index.html" if path.stem == "index" else f"{path.stem}/index.html"): path.name
         for path in sorted((ROOT / "docs").glob("*.md"))}
PAGES.update({f"zh/{page}": f"zh/{source}" for page, source in list(PAGES.items())})
NOTEBOOKS = ["notebooks/question_seeding/index.html", "notebooks/question_steps/index.html"]
NOTEBOOKS += [f"zh/{notebook}" for notebook in NOTEBOOKS]


def _figures(html: str) -> list[str]:
    return re.findall(r'<figure class="pitfalls-figure"[^>]*>.*?</figure>', html, flags=re.S)


def _drawing_functions() -> dict[tuple[str, str], bool]:
    """(topic, function) for every function of a topic's ``figures.py`` that draws a figure (calls ``svg``), and
    whether it may draw nothing (``return ""``: the releases figure, where this machine recorded fewer than two)."""
    found = {}
    for path in (ROOT / "snippets" / "experiments").glob("*/figures.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.FunctionDef) and any(
                    isinstance(call, ast.Call) and getattr(call.func, "id", getattr(call.func, "attr", None)) == "svg"
                    for call in ast.walk(node)):
                found[path.parent.name, node.name] = any(
                    isinstance(ret, ast.Return) and isinstance(ret.value, ast.Constant) and ret.value.value == ""
                    for ret in ast.walk(node))
    return found


class _Tally:
    """Counts over syntax trees: what ``counts`` finds in each call, made on every machine (``always``), only on some
    (``only_if``: under a condition, or left out by the call itself), or once per item of a loop (``looped``)."""

    def __init__(self) -> None:
        self.always = self.only_if = 0
        self.looped = False

    def visit(self, node, where: str, *, loop, condition, call, children) -> None:  # noqa: ANN001
        if isinstance(node, loop):
            where = "loop"
        elif isinstance(node, condition) and where != "loop":
            where = "if"
        sure, maybe = call(node)
        if where == "loop":
            self.looped = self.looped or bool(sure or maybe)
        elif where == "if":
            self.only_if += sure + maybe
        else:
            self.always, self.only_if = self.always + sure, self.only_if + maybe
        for child in children(node):
            self.visit(child, where, loop=loop, condition=condition, call=call, children=children)

    def result(self) -> tuple[int, int | None]:
        return self.always, None if self.looped else self.only_if


def _counted(markdown: str, counts) -> tuple[int, int | None]:  # noqa: ANN001 - counts(call, modules) -> (int, int)
    """How many of what ``counts`` counts in each call (those made whenever the call is, and those the call itself
    may leave out), the page's exec blocks make on every machine, and how many only on some: under an ``if``
    (claims about a GPU, or about torch.compile where it runs: otherwise the page says why there is none), or left
    out by the call; None for the latter when one sits in a loop (one per item: no upper bound)."""
    tally = _Tally()
    # a block ends at the fence as indented as its opening one (the fences inside its strings are indented more)
    for _, block in re.findall(r'^( *)```python exec="1"[^\n]*\n(.*?)^\1```[ \t]*$', markdown, flags=re.S | re.M):
        tree = ast.parse(textwrap.dedent(block))
        # (topic, module) of each module a block imports: "from snippets.experiments.steps import figures"
        modules = {alias.asname or alias.name: (node.module.rsplit(".", 1)[1], alias.name) for node in ast.walk(tree)
                   if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("snippets.experiments.")
                   for alias in node.names}
        tally.visit(tree, "always", loop=(ast.For, ast.While, ast.comprehension),
                    condition=(ast.If, ast.IfExp, ast.ExceptHandler), children=ast.iter_child_nodes,
                    call=lambda node: counts(node, modules) if isinstance(node, ast.Call) else (0, 0))
    return tally.result()


def _named_counted(markdown: str, counts) -> tuple[int, int | None] | None:  # noqa: ANN001 - counts(call, topic)
    """``_counted`` for a page of prose with named values: the same count over its template's calls (``{% if %}``
    and ``x if c else y`` make a call machine-dependent, ``{% for %}`` unbounded); None for a page of exec blocks."""
    from jinja2 import nodes

    named = named_page(markdown)
    if named is None:
        return None
    meta, tree = named
    tally = _Tally()
    tally.visit(tree, "always", loop=nodes.For, condition=(nodes.If, nodes.CondExpr),
                children=lambda node: node.iter_child_nodes(),
                call=lambda node: counts(node, meta.get("topic")) if isinstance(node, nodes.Call) else (0, 0))
    return tally.result()


def _both(named: tuple[int, int | None] | None, blocks: tuple[int, int | None]) -> tuple[int, int | None]:
    """A page's count: its template's (a page of named values) and its exec blocks' (any left, as a figure inside a
    tab, whose raw HTML only markdown-exec keeps whole)."""
    if named is None:
        return blocks
    only_if = None if named[1] is None or blocks[1] is None else named[1] + blocks[1]
    return named[0] + blocks[0], only_if


def _says(markdown: str) -> tuple[int, int | None]:
    return _both(_named_counted(markdown, lambda call, _: (int(getattr(call.node, "name", None) == "say"), 0)),
                 _counted(markdown, lambda call, _: (int(getattr(call.func, "id", None) == "say"), 0)))


def _draws(markdown: str) -> tuple[int, int | None]:
    """Figures: a drawing function called (``figures.fit(result)``) or handed over positionally
    (``present(result, figures.fit)``); one named as ``drawn_by=`` only shows its code."""
    drawing = _drawing_functions()

    def draws(call: ast.Call, modules: dict[str, tuple[str, str]]) -> tuple[int, int]:
        sure = maybe = 0
        for node in (call.func, *call.args):
            if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
                topic, module = modules.get(node.value.id, (None, None))
                if module == "figures" and (topic, node.attr) in drawing:
                    sure, maybe = (sure, maybe + 1) if drawing[topic, node.attr] else (sure + 1, maybe)
        return sure, maybe

    def named_draws(call, topic: str | None) -> tuple[int, int]:  # noqa: ANN001 - a jinja2.nodes.Call
        from jinja2 import nodes

        sure = maybe = 0
        for node in (call.node, *call.args):
            if (isinstance(node, nodes.Getattr) and getattr(node.node, "name", None) == "figures"
                    and (topic, node.attr) in drawing):
                sure, maybe = (sure, maybe + 1) if drawing[topic, node.attr] else (sure + 1, maybe)
        return sure, maybe

    return _both(_named_counted(markdown, named_draws), _counted(markdown, draws))


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


def test_the_claim_and_figure_counts_read_a_page_of_named_values():
    page = ('---\ntopic: steps\nnames: true\n---\n{% set result = run(measure.curves) %}\n'
            '{{ figures.curves(result, "shuffled") }} and {{ present(result, figures.fit) }}\n'
            '{{ say(a, "x") }} {{ say(b, "y") if cuda else "no GPU" }}\n{{ code_panel(result, drawn_by=[figures.curves]) }}\n'
            '{% if cuda %}{{ figures.noise(result) }}{{ say(c, "z") }}{% endif %}\n')
    assert _says(page) == (1, 2), "one claim always, two on some machines"
    assert _draws(page) == (2, 1), "curves and fit drawn, noise only where there is CUDA, drawn_by only shows code"
    assert _says(page.replace("{% if cuda %}", "{% for row in rows %}").replace("{% endif %}", "{% endfor %}")) == (1, None)
    assert _draws(page.replace("topic: steps", "topic: seeding")) == (0, 0), "no such drawings in the seeding topic"
    assert _says(page.replace("names: true\n", "")) == (0, 0), "without names: true, the page is not a template"
    inside_a_tab = ('{% raw %}\n=== "Tab"\n\n    ```python exec="1" html="1"\n    from snippets.experiments.steps import '
                    'figures, measure\n    print(figures.curves(run(measure.curves), "shuffled"))\n    ```\n{% endraw %}\n')
    assert _draws(page + inside_a_tab) == (3, 1), "an exec block left on the page is counted too"


def test_the_figure_count_knows_a_drawing_called_from_one_handed_over_and_one_only_shown():
    block = ('```python exec="1"\nfrom snippets.experiments.steps import figures, measure\n'
             'print(figures.curves(run(measure.curves), "shuffled"))\nprint(present(result, figures.fit))\n'
             'print(figures.arithmetic(result))\nprint(code_panel(result, drawn_by=[figures.curves]))\n'
             'if cuda:\n    print(figures.noise(result))\n```\n')
    assert _draws(block) == (2, 1), "curves and fit drawn; arithmetic draws nothing; drawn_by only shows code"
    releases = '```python exec="1"\nfrom snippets.experiments.loader import figures\nprint(figures.across_releases(r))\n```\n'
    assert _draws(releases) == (0, 1), "a figure of releases is drawn only where two or more were recorded"
    other = block.replace("experiments.steps", "experiments.seeding")
    assert _draws(other) == (0, 0), "the seeding topic has no drawing called curves, fit or noise"


@pytest.mark.parametrize("page", sorted(PAGES))
def test_page_has_its_figures_claims_and_tables(built_site, page):
    html = (built_site / page).read_text(encoding="utf-8")
    source = (ROOT / "docs" / PAGES[page]).read_text(encoding="utf-8")
    for what, found, (always, only_if) in [("inline SVG figures", _figures(html), _draws(source)),
                                           # a timing claim noise cannot decide here is shown as undecided
                                           ("checked claims", re.findall(r'class="pitfalls-claim(?: pitfalls-claim'
                                                                         r'--undecided)?"', html), _says(source))]:
        assert always <= len(found) <= always + (only_if if only_if is not None else len(found)), (
            f"{page}: {len(found)} {what} for {always} made on every machine and {only_if} only on some")
    assert all("<svg" in f for f in _figures(html))
    claims = re.findall(r'class="pitfalls-claim(?: pitfalls-claim--undecided)?"', html)
    assert "Traceback" not in html and "exited with" not in html
    if page not in ("index.html", "zh/index.html"):
        assert "<table>" in html, f"{page}: no table"
    twin = page.removeprefix("zh/")
    if twin != page:  # the Chinese page: as many figures, tables and claims as its English twin, in Chinese
        english = (built_site / twin).read_text(encoding="utf-8")
        assert len(_figures(html)) == len(_figures(english)), f"{page}: not as many figures as /{twin}"
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


# What each notebook prints, how many such lines it prints, and how many of them the test waits for: the steps
# notebook's lines are one run's loss every 50 epochs, each following from the one before, and its first two come
# after a quarter of its running time
PRINTED = {
    "question_seeding": (r"(Direct: loss is|Loader: Loss is) ([-\d.e]+)", 2, 2),
    "question_steps": (r"Batch Size (\d+), Epoch (\d+), Loss: ([-\d.e]+)", 8, 2),
}


@pytest.mark.parametrize("notebook", sorted(PRINTED))
def test_notebook_prints_what_the_original_script_prints(built_site, tmp_path, notebook):
    """Run the notebook's code as a plain script, with the one intra-op thread the build executes it with: what it
    prints equals what the built page shows, line for line, as far as the test waits."""
    pattern, lines, awaited = PRINTED[notebook]
    html = (built_site / "notebooks" / notebook / "index.html").read_text(encoding="utf-8")
    page_values = re.findall(pattern, html)
    assert len(page_values) == lines, page_values
    code = "\n".join(line for line in (ROOT / "docs" / "notebooks" / f"{notebook}.py").read_text().splitlines()
                     if not line.startswith("# "))
    script = tmp_path / f"{notebook}.py"
    script.write_text(code)
    printed = []
    with subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                          env={**os.environ, "MPLBACKEND": "Agg", "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1",
                               "PYTHONUNBUFFERED": "1"}, cwd=tmp_path) as process:
        timer = threading.Timer(900, process.kill)  # a script that hangs fails the test, after 15 minutes
        timer.start()
        try:
            for line in process.stdout:
                printed += re.findall(pattern, line)
                if len(printed) == awaited:
                    break
        finally:
            timer.cancel()
            process.kill()
        stderr = process.stderr.read()
    assert printed == page_values[:awaited], stderr[-2000:]


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
    import torch

    # this build's release, and those recorded on this machine's hardware (results/ also holds other machines')
    recorded = sorted({machines.short_release(torch.__version__)}
                      | {machines.short_release(rec.fingerprint["torch"]) for rec in machines.releases()})
    shown = [re.sub(r"<br>.*", "", header) for header in headers[1:-1]]
    assert set(recorded) == set(shown), f"releases {recorded}, columns {shown}"
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
