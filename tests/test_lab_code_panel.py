"""The code panel's parts, on a throwaway page package (snippets.experiments.fakepage, in a temporary folder):
which helpers it lists, the provenance line, links, captions, and what it writes to the code cache."""

from __future__ import annotations

import dataclasses
import hashlib
import importlib
import inspect
import os
import re
import sys
import textwrap
import types

import pytest

import snippets.experiments
from snippets.lab import cache, code, provenance
from snippets.lab import store
from snippets.lab import context, render
from snippets.lab.cache import Result

MEASURE = '''
from snippets.lab import experiment
from snippets.seeding import same_parameters
from snippets.step_budget import steps_per_epoch
from snippets.tensor_loader import TensorLoader
from . import figures, tools

LIMIT = 3


def helper(x):
    return tools.deep(x)


def fresh_one():
    return 1


class Model:
    def forward(self):
        return helper(1)


@experiment()
def other(n: int = 1) -> dict:
    return {"n": tools.deep(n)}


@experiment()
def measured(n: int = 2) -> dict:
    Model().forward()
    helper(n)
    other.func
    measured.name
    figures.draw()
    same_parameters
    steps_per_epoch
    TensorLoader
    return {"n": n, "limit": LIMIT}


@experiment()
def third() -> dict:
    return {"x": tools.deep(fresh_one())}


@experiment()
def fresh_one_experiment() -> dict:
    return {"x": 1}
'''


@pytest.fixture()
def fakepage(tmp_path, monkeypatch):
    package = tmp_path / "fakepage"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "measure.py").write_text(MEASURE)
    (package / "figures.py").write_text("def draw():\n    return 'figure'\n")
    (package / "tools.py").write_text("def deep(x):\n    return x\n\n\ndef unused():\n    return 0\n")
    monkeypatch.setattr(snippets.experiments, "__path__", [*snippets.experiments.__path__, str(tmp_path)])
    monkeypatch.setattr(context.current(), "page", None)
    monkeypatch.setattr(context.current(), "shown", {})
    monkeypatch.setattr(context.current(), "printed", {})
    monkeypatch.delenv("REPO_URL", raising=False)
    monkeypatch.delenv("REPO_REF", raising=False)
    monkeypatch.delenv("REPO_BRANCH", raising=False)
    module = importlib.import_module("snippets.experiments.fakepage.measure")
    yield module
    for name in [n for n in sys.modules if n.startswith("snippets.experiments.fakepage")]:
        del sys.modules[name]


def _reached(func) -> list[str]:
    from snippets.lab import code

    return [piece.qualname for piece in code.reach(func).reached]


def test_a_panel_shows_what_the_experiment_reaches_each_once(fakepage):
    reached = _reached(fakepage.measured)
    # each once, in order of first reference, the experiments it calls included, itself not; its own module's
    # functions it never names (fresh_one, third) and the helper module's unused function are not
    assert reached[:4] == ["fakepage.measure.Model", "fakepage.measure.helper", "fakepage.measure.other",
                           "fakepage.figures.draw"]
    assert {"fakepage.tools.deep", "fakepage.measure.LIMIT", "tensor_loader.TensorLoader",
            "seeding.same_parameters", "step_budget.steps_per_epoch"} <= set(reached)
    assert not {"fakepage.measure.fresh_one", "fakepage.measure.third", "fakepage.tools.unused"} & set(reached)
    assert len(reached) == len(set(reached))


def test_a_class_reaches_what_its_methods_call(fakepage):
    assert _reached(fakepage.Model) == ["fakepage.measure.helper", "fakepage.tools.deep"]


@pytest.mark.parametrize("obj, name", [
    ("measure.helper", "fakepage.measure.helper"), ("measure.Model", "fakepage.measure.Model"),
])
def test_qualified_names_drop_the_package_prefix(fakepage, obj, name):
    assert code.reach(getattr(fakepage, obj.split(".")[1])).root.qualname == name


def test_qualified_names_of_lab_and_recipes():
    from snippets.lab import timing
    from snippets.seeding import same_parameters

    assert code.reach(timing.measure).root.qualname == "lab.timing.measure"
    assert code.reach(same_parameters).root.qualname == "seeding.same_parameters"


def test_paths_are_relative_to_the_project_or_just_the_file_name(tmp_path):
    assert provenance._relative(str(store.PROJECT_ROOT / "snippets" / "seeding.py")) == "snippets/seeding.py"
    assert provenance._relative(str(tmp_path / "elsewhere.py")) == "elsewhere.py"


def test_links_need_a_repository_and_name_the_ref(monkeypatch):
    assert provenance._link("snippets/seeding.py", 3, 9) is None
    monkeypatch.setenv("REPO_URL", "https://example.org/o/REPOX/")
    assert provenance._link("a.py") == "https://example.org/o/REPOX/blob/main/a.py"
    monkeypatch.setenv("REPO_URL", "https://example.org/o/r//")
    assert provenance._link("snippets/seeding.py", 3, 9) == "https://example.org/o/r/blob/main/snippets/seeding.py#L3-L9"
    assert provenance._link("snippets/seeding.py") == "https://example.org/o/r/blob/main/snippets/seeding.py"
    monkeypatch.setenv("REPO_BRANCH", "dev")
    assert provenance._link("a.py").startswith("https://example.org/o/r/blob/dev/")
    monkeypatch.setenv("REPO_REF", "v1.0")
    assert provenance._link("a.py") == "https://example.org/o/r/blob/v1.0/a.py"


def test_highlighted_code_is_kept_on_disk_by_content(private_cache):
    first = provenance._highlighted("x = 1\n")
    [stored] = (private_cache.parent / "code").glob("*.html")
    assert len(stored.stem) == 32 and stored.read_text(encoding="utf-8") == first
    assert '<span class="n">x</span>' in first
    stored.write_text("cached copy", encoding="utf-8")
    assert provenance._highlighted("x = 1\n") == "cached copy"
    provenance._highlighted("y = 2\n")
    assert len(list((private_cache.parent / "code").glob("*.html"))) == 2


def test_a_source_block_has_one_caption_with_file_and_lines(fakepage, private_cache, monkeypatch):
    block = provenance.source_block(fakepage.helper)
    lines, first = inspect.getsourcelines(fakepage.helper)
    caption = f"measure.py, lines {first}–{first + len(lines) - 1}"  # outside the project: the file's name
    assert block.count('<span class="filename">') == 1
    assert f'<span class="filename">{caption}</span><pre>' in block
    monkeypatch.setenv("REPO_URL", "https://example.org/o/r")
    linked = provenance.source_block(fakepage.measured)
    assert '<span class="filename"><a href="https://example.org/o/r/blob/main/measure.py#L' in linked


def test_details_are_notes_unless_told(fakepage):
    assert provenance._details("S", "B") == '<details class="note pitfalls-code"><summary>S</summary>\nB\n</details>'
    assert provenance._details("S", "B", kind="example", experiment='a"b') == (
        '<details class="example pitfalls-code" data-experiment="a&quot;b" data-search-exclude><summary>S</summary>'
        "\nB\n</details>")


def _result(fakepage, *, cached=False, computed_at="2026-03-04T05:06:07+00:00", params=None) -> Result:
    return Result({"n": 2}, "fakepage.measured", {"n": 2} if params is None else params,
                  {"torch": "x", "device": "cpu", "device_name": "CPU (demo)", "cpu": "demo", "threads": 2},
                  computed_at, 1.25, False, cached=cached, exp=fakepage.measured)


def test_the_provenance_line_of_a_fresh_result(fakepage):
    assert provenance.provenance_line(_result(fakepage, params={"n": 2, "name": "<x>"})) == (
        '<p class="pitfalls-provenance"><code>fakepage.measured(n=2, name=&#x27;&lt;x&gt;&#x27;)</code> — took 1.2 s '
        "to compute, computed by this build. Measured with torch x · CPU (demo) · 2 threads · 2026-03-04.</p>")


def test_the_provenance_line_of_a_cached_result_says_when_in_utc(fakepage):
    line = provenance.provenance_line(_result(fakepage, cached=True, params={}))
    assert "<code>fakepage.measured(no parameters)</code>" in line
    assert "read from this machine's result cache (computed 2026-03-04 05:06:07 UTC)." in line
    other = provenance.provenance_line(_result(fakepage, cached=True, computed_at="2026-03-04T05:06:07+02:00"))
    assert "(computed 2026-03-04 05:06:07+02:00)." in other


def test_a_panel_lists_what_it_calls_the_recipes_drawing_and_checks(fakepage, private_cache):
    from snippets.experiments.fakepage import figures

    panel = provenance.code_panel(_result(fakepage), drawn_by=figures.draw)
    drawing = provenance.defer(panel, "")[1].popitem()[1].split("Drawing code: ")[1]
    assert "</code></pre></div>\n\n</details>" in drawing, "a drawing without helpers of its page: its source alone"
    assert panel.startswith('<details class="example pitfalls-code" data-experiment="fakepage.measured" '
                            'data-search-exclude><summary>Code that measured this: <code>fakepage.measured</code>'
                            "</summary>\n")
    assert panel.endswith("\n</details>\n")
    helpers = [q for q in _reached(fakepage.measured) if not q.startswith(("tensor_loader", "seeding", "step_budget"))]
    recipes = [q for q in _reached(fakepage.measured) if q.startswith(("tensor_loader", "seeding", "step_budget"))]
    assert ("<summary>What it calls: " + ", ".join(f"<code>{q}</code>" for q in helpers) + "</summary>") in panel
    assert ("<summary>Recipe code it uses: " + ", ".join(f"<code>{q}</code>" for q in recipes) + "</summary>") in panel
    assert "<summary>Drawing code: <code>fakepage.figures.draw</code></summary>" in panel
    # the experiment, everything it reaches, the drawing code
    assert panel.count('<span class="filename">') == 1 + len(helpers) + len(recipes) + 1
    assert "what this result is keyed by" in panel
    assert re.search(r'2026-03-04\.</p>\n<div class="pitfalls-code__body" data-key="[0-9a-f]{16}">\n'
                     r'<div class="language-python highlight">', panel), "the provenance, then the sources"
    assert re.search(r'</details>\n<p>To measure it again on your machine: <code>REFRESH=timing make build</code>[^<]*'
                     r'<code>REFRESH=1 make build</code>[^<]*</p>\n</div><!--/pitfalls-code [0-9a-f]{16}-->\n</details>\n$',
                     panel), "the sources, then how to measure them again, last in the panel"
    [body] = provenance.defer(panel, "")[1].values()
    assert body.startswith('<div class="language-python highlight">')
    shown = __import__("html").unescape(re.sub(r"<[^>]+>", "", body))
    assert "LIMIT = 3" in shown and "def deep(x):" in shown and "class TensorLoader" in shown


def _panel_with(body: str) -> str:
    return f'<details><summary>s</summary><p>line</p>\n{render.deferrable(body)}\n</details>'


def test_deferred_sources_leave_the_page_and_the_panel_links_them():
    body = '<div class="language-python highlight"><pre>def f(): ...</pre></div>\n<details><summary>x</summary>\n' \
           "nested</details>"
    key = hashlib.sha256(body.encode()).hexdigest()[:16]
    page = f"<h1>t</h1>{_panel_with(body)}<p>after</p>{_panel_with('second')}"
    deferred, bodies = provenance.defer(page, "../code/")
    assert bodies == {key: body, hashlib.sha256(b"second").hexdigest()[:16]: "second"}
    assert "def f()" not in deferred and "nested" not in deferred and "second" not in deferred
    assert deferred.startswith("<h1>t</h1><details><summary>s</summary><p>line</p>\n")
    assert (f'<div class="pitfalls-code__body" data-src="../code/{key}.html"><p class="pitfalls-code__fallback">'
            f'This loads here when the panel opens. <a href="../code/{key}.html">Open it on its own '
            f"page</a>.</p></div>\n</details><p>after</p>") in deferred
    assert deferred.count("<details>") == 2 and deferred.count("</details>") == 2, "the panels stay whole"


def test_a_page_without_panels_is_unchanged_and_a_marker_must_match_its_key():
    assert provenance.defer("<p>x</p>", "code/") == ("<p>x</p>", {})
    forged = '<div class="pitfalls-code__body" data-key="aaaa">\nx\n</div><!--/pitfalls-code bbbb-->'
    assert provenance.defer(forged, "code/") == (forged, {})


def test_the_folder_is_escaped_in_the_links():
    deferred, _ = provenance.defer(_panel_with("b"), 'a"b/')
    assert 'data-src="a&quot;b/' in deferred and '"a"b' not in deferred


LISTING = ('<details class="example pitfalls-listing">\n<summary>snippets/recipe.py</summary>\n'
           '<div class="language-python highlight"><pre><code>def recipe(): ...</code></pre></div>\n</details>')


def test_a_collapsed_listing_becomes_a_code_panel_whose_code_leaves_the_page():
    body = '<div class="language-python highlight"><pre><code>def recipe(): ...</code></pre></div>'
    key = hashlib.sha256(body.encode()).hexdigest()[:16]
    page = f"<p>before</p>\n{LISTING}\n<details class=\"note\"><summary>other</summary>\n<p>kept</p>\n</details>"
    panels = provenance.listings(page)
    assert panels == (f'<p>before</p>\n<details class="example pitfalls-code pitfalls-listing" data-search-exclude>'
                      f'<summary>snippets/recipe.py</summary>\n{render.deferrable(body)}\n</details>\n'
                      '<details class="note"><summary>other</summary>\n<p>kept</p>\n</details>')
    deferred, bodies = provenance.defer(panels, "../code/")
    assert bodies == {key: body} and "def recipe" not in deferred and "<p>kept</p>" in deferred
    assert f'data-src="../code/{key}.html"' in deferred


def test_listings_keep_their_kind_each_one_separately_and_never_swallow_a_nested_panel():
    two = provenance.listings(LISTING.replace("example", "abstract") + "\n<p>between</p>\n" + LISTING)
    assert two.count("pitfalls-code pitfalls-listing") == 2 and "<p>between</p>" in two
    assert two.startswith('<details class="abstract pitfalls-code pitfalls-listing" data-search-exclude>')
    assert provenance.listings("<p>no listing</p>") == "<p>no listing</p>"
    nested = ('<details class="example pitfalls-listing"><summary>outer</summary>\n'
              '<details class="note"><summary>inner</summary><p>x</p></details>\n</details>')
    with pytest.raises(ValueError, match="pitfalls-listing panel holds another panel: <summary>outer</summary>"):
        provenance.listings(nested)


def test_a_deferred_panels_page_is_a_styled_document_with_its_sources():
    document = provenance.fragment_document("<pre>code &amp; more</pre>", title="Code <behind>",
                                            stylesheets=["../a.css", '../b"c.css'])
    assert document.startswith('<!doctype html>\n<html lang="en"><head><meta charset="utf-8">')
    assert "<title>Code &lt;behind&gt;</title>" in document and "<h1>Code &lt;behind&gt;</h1>" in document
    assert '<link rel="stylesheet" href="../a.css"><link rel="stylesheet" href="../b&quot;c.css">' in document
    assert '<meta name="robots" content="noindex">' in document
    assert '<article class="md-content__inner md-typeset"><h1>Code &lt;behind&gt;</h1>\n<pre>code &amp; more</pre>\n' \
           "</article></main></body></html>\n" in document


def test_a_panel_without_recipes_helpers_or_drawings_is_just_the_source(fakepage, private_cache):
    result = dataclasses.replace(_result(fakepage), exp=fakepage.fresh_one_experiment)
    panel = provenance.code_panel(result)
    assert "Recipe code" not in panel and "What it calls" not in panel and "Drawing code" not in panel
    assert panel.count("<details") == 1 and panel.count('<span class="filename">') == 1
    assert provenance.present(result).startswith("\n<details")
    assert "REFRESH=timing make build" in panel, "how to measure it again: in the panel, not the page's text"


def test_helpers_shown_earlier_on_the_page_are_named_not_repeated(fakepage, private_cache, monkeypatch):
    everything = 1 + len(_reached(fakepage.measured))
    monkeypatch.setattr(context.current(), "page", "fake.md")
    first = provenance.code_panel(_result(fakepage))
    second = provenance.code_panel(_result(fakepage))
    assert first.count('<span class="filename">') == everything and second.count('<span class="filename">') == 1
    assert ("<p>Shown in an earlier panel on this page: <code>fakepage.measure.Model</code>, "
            "<code>fakepage.measure.helper</code>, <code>fakepage.measure.other</code>, ") in second
    third = provenance.code_panel(dataclasses.replace(_result(fakepage), exp=fakepage.third))
    assert third.count('<span class="filename">') == 2, "the new helper is shown, the one shown before is named"
    assert "def fresh_one" in __import__("html").unescape(re.sub(r"<[^>]+>", "", third))
    assert "<p>Shown in an earlier panel on this page: <code>fakepage.tools.deep</code>.</p>" in third
    assert context.current().shown == {"fake.md": {"fakepage.measured", "fakepage.third"}}
    monkeypatch.setattr(context.current(), "page", "other.md")
    assert provenance.code_panel(_result(fakepage)).count('<span class="filename">') == everything


def test_outside_a_page_every_panel_shows_its_helpers(fakepage, private_cache):
    everything = 1 + len(_reached(fakepage.measured))
    provenance.code_panel(_result(fakepage))
    assert provenance.code_panel(_result(fakepage)).count('<span class="filename">') == everything
    assert context.current().printed == {} and context.current().shown == {}


def test_a_section_shows_the_code_of_several_results_in_one_panel(fakepage, private_cache, monkeypatch):
    monkeypatch.setattr(context.current(), "page", "fake.md")
    first, other = _result(fakepage), dataclasses.replace(_result(fakepage), exp=fakepage.third,
                                                          experiment="fakepage.third")
    panel = provenance.code_panel(first, other, first)
    assert panel.count('<details class="example pitfalls-code"') == 1
    assert ('data-experiment="fakepage.measured fakepage.third"' in panel
            and "<code>fakepage.measured</code>, <code>fakepage.third</code>" in panel)
    assert panel.count('class="pitfalls-provenance"') == 2, "each result says where and when it was measured"
    text = __import__("html").unescape(re.sub(r"<[^>]+>", "", panel))
    assert "def measured" in text and "def third" in text
    assert context.current().shown == {"fake.md": {"fakepage.measured", "fakepage.third"}}
    with pytest.raises(TypeError, match="at least one Result"):
        provenance.code_panel()


@pytest.mark.parametrize("bad, name", [({"value": 1}, "dict"), (None, "NoneType")])
def test_only_results_of_run_have_panels(bad, name):
    with pytest.raises(TypeError) as raised:
        provenance.code_panel(bad)
    assert str(raised.value) == f"code_panel() needs a Result returned by run(), got {name}"


def test_a_result_without_its_experiment_has_no_panel(fakepage):
    result = _result(fakepage)
    result.exp = None
    with pytest.raises(TypeError, match="got Result$"):
        provenance.code_panel(result)


def test_present_puts_the_rendering_before_the_panel(fakepage, private_cache):
    shown = provenance.present(_result(fakepage), lambda result: "<table>")
    assert shown.startswith("<table>\n<details")
    assert "Drawing code: <code>test_lab_code_panel.test_present_puts_the_rendering_before_the_panel." in shown


def test_checks_are_shown_by_name_with_their_source(fakepage, private_cache, monkeypatch):
    from snippets.lab import claims

    @claims.check("n is two")
    def n_is_two(result):
        return result["n"] == 2, {"n": result["n"]}

    def plain_check(result):
        return True

    panel = provenance.code_panel(_result(fakepage), checks=[n_is_two, plain_check])
    checks_part = panel[panel.index("Checks behind the claims"):]
    assert checks_part.count('</div>\n\n<div class="language-python highlight">') == 1, "one block after the other"
    assert ("<summary>Checks behind the claims: <code>test_lab_code_panel.n_is_two</code>, <code>plain_check</code>"
            "</summary>" in panel)
    assert textwrap.dedent(inspect.getsource(inspect.unwrap(n_is_two))).splitlines()[0] in \
        __import__("html").unescape(__import__("re").sub(r"<[^>]+>", "", panel))


KEYED = ("<p>This code and the code it uses, listed below, are what this result is keyed by: changing any of it "
         "measures the result again at the next build; changing a comment, a docstring or any other code does not.</p>")


def test_a_panel_says_what_keys_the_result_after_its_code_and_shows_a_drawings_own_helpers(fakepage, private_cache,
                                                                                           monkeypatch):
    from snippets.lab import machines

    monkeypatch.setattr(machines, "compare", lambda result, drawers: f"<p>ELSEWHERE {len(drawers)}</p>")
    panel = provenance.code_panel(_result(fakepage), drawn_by=fakepage.helper)
    [body] = provenance.defer(panel, "")[1].values()
    first_source = body.index("</table></div>\n") if "</table></div>\n" in body else body.index("</code></pre></div>")
    assert body.index(KEYED) > first_source and body.index(KEYED) < body.index("<summary>What it calls: ")
    assert body.count(KEYED) == 1
    drawing = body[body.index("<summary>Drawing code: <code>fakepage.measure.helper</code></summary>"):]
    text = __import__("html").unescape(re.sub(r"<[^>]+>", "", drawing))
    assert "def helper(x):" in text and "def deep(x):" in text, "the page's own helpers the drawing reaches"
    assert "\n<p>ELSEWHERE 1</p>\n<p>To measure it again on your machine:" in body
    monkeypatch.setattr(machines, "compare", lambda result, drawers: "")
    assert "ELSEWHERE" not in provenance.code_panel(_result(fakepage))


def test_a_panel_of_nothing_is_refused_with_what_it_needs():
    with pytest.raises(TypeError) as refused:
        provenance.code_panel()
    assert str(refused.value) == "code_panel() needs at least one Result returned by run()"


def test_the_provenance_line_of_a_result_recorded_elsewhere_names_that_machine(fakepage):
    recorded = dataclasses.replace(_result(fakepage, cached=True), recorded_on="epyc<2>")
    assert provenance.provenance_line(recorded) == (
        '<p class="pitfalls-provenance"><code>fakepage.measured(n=2)</code> — took 1.2 s to compute, recorded on '
        "epyc&lt;2&gt; (computed 2026-03-04 05:06:07 UTC), not yet measured on this machine. Measured with torch x · "
        "CPU (demo) · 2 threads · 2026-03-04.</p>")


def test_a_source_is_captioned_with_its_file_and_its_line_or_lines_once(fakepage, private_cache, monkeypatch):
    from snippets.lab import code

    piece = code.reach(fakepage.fresh_one).root
    one = dataclasses.replace(piece, last=piece.first)
    monkeypatch.setattr(provenance, "_highlighted", lambda source: "<div><pre>a</pre><pre>b</pre></div>")
    assert provenance.piece_block(one) == (
        f'<div><span class="filename">{provenance._relative(piece.path)}, line {piece.first}</span><pre>a</pre>'
        "<pre>b</pre></div>")
    assert f", lines {piece.first}–{piece.last}</span>" in provenance.piece_block(piece)


def test_a_panels_provenance_lines_stand_one_per_line_and_it_ends_with_how_to_measure_again(fakepage, private_cache):
    first = _result(fakepage)
    other = dataclasses.replace(_result(fakepage), exp=fakepage.third, experiment="fakepage.third")
    panel = provenance.code_panel(first, other, drawn_by=fakepage.helper)
    assert re.search(r'</p>\n<p class="pitfalls-provenance"><code>fakepage\.third', panel), "one line each"
    [body] = provenance.defer(panel, "")[1].values()
    assert body.endswith("<p>To measure it again on your machine: <code>REFRESH=timing make build</code> (timings) "
                         "or <code>REFRESH=1 make build</code> (everything), in a clone of the repository.</p>")
    drawing = body.split("<summary>Drawing code: ", 1)[1]
    assert re.search(r"</pre></div>\n\n<div class=\"language-python highlight\">", drawing), \
        "the drawing's own helper follows it on a line of its own"
