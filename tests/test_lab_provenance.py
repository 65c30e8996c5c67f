"""The code panel: the source that ran, the helpers that decide what is measured, provenance and links."""

from __future__ import annotations

import inspect
import re

import pytest

from snippets.experiments.seeding import checks, figures, measure
from snippets.lab import cache, code_panel, present, run
from snippets.lab import context
from snippets.lab import provenance


def _text(panel: str) -> str:
    """The panel's code as plain text (highlighting spans removed, entities decoded)."""
    import html
    return html.unescape(re.sub(r"<[^>]+>", "", panel))


def test_panel_shows_the_experiment_source_exactly_as_in_its_file(private_cache):
    result = run(measure.generator_isolation, n_samples=20, batch_size=5)
    panel = code_panel(result)
    source = inspect.getsource(measure.generator_isolation.func)
    assert source.strip() in _text(panel)
    lines, first = inspect.getsourcelines(measure.generator_isolation.func)
    assert f"snippets/experiments/seeding/measure.py, lines {first}–{first + len(lines) - 1}" in panel
    assert panel.lstrip().startswith('<details class="example pitfalls-code" data-experiment="seeding.generator_isolation" data-search-exclude>'), \
        "the panel must start collapsed and name its experiment"
    assert "seeding.generator_isolation(n_samples=20, batch_size=5)" in panel
    assert "computed by this build" in panel and result.stamp in _text(panel)
    cached = run(measure.generator_isolation, n_samples=20, batch_size=5)
    assert "read from this machine's result cache" in code_panel(cached)


def test_what_a_real_experiment_reaches_is_its_code_not_drawing_or_checks():
    from snippets.lab import code

    pieces = code.reach(measure.creation_order).reached
    assert {"_parameter_rows", "SimpleLinearModel"} <= {p.name for p in pieces}
    assert not any(p.module.endswith((".figures", ".checks")) for p in pieces)
    assert [p.name for p in pieces if p.recipe] == ["same_parameters", "_bits"]
    # Transitive: training_equivalence -> _question_run -> train_loader -> ...
    names = {p.name for p in code.reach(measure.training_equivalence).reached}
    assert {"_question_run", "train_direct", "train_loader", "make_data"} <= names


def test_drawing_code_and_checks_are_one_click_further(private_cache):
    result = run(measure.creation_order)
    panel = present(result, figures.creation_order, checks=[checks.equal_starts_identical])
    assert panel.index("| `fc1.weight`") < panel.index("<details"), "the table comes before its code"
    assert "Drawing code: <code>seeding.figures.creation_order</code>" in panel
    assert "Checks behind the claims: <code>seeding.equal_starts_identical</code>" in panel
    assert inspect.getsource(inspect.unwrap(checks.equal_starts_identical)).strip() in _text(panel)
    assert panel.count("<details") == 5  # the panel, what it calls, the recipe code, drawing code, checks


def test_repo_url_links_each_source_to_its_lines(private_cache, monkeypatch):
    result = run(measure.creation_order)
    assert "href=" not in code_panel(result)
    monkeypatch.setenv("REPO_URL", "https://example.org/owner/repo/")
    monkeypatch.setenv("REPO_REF", "v1")
    lines, first = inspect.getsourcelines(measure.creation_order.func)
    expected = (f'https://example.org/owner/repo/blob/v1/snippets/experiments/seeding/measure.py'
                f'#L{first}-L{first + len(lines) - 1}')
    assert f'href="{expected}"' in code_panel(result)


def test_a_panel_records_what_the_page_showed(private_cache, monkeypatch):
    monkeypatch.setattr(context.current(), "page", "probe.md")
    monkeypatch.setattr(context.current(), "ran", {})
    monkeypatch.setattr(context.current(), "shown", {})
    result = run(measure.loader_between_models)
    assert context.current().ran == {"probe.md": {"seeding.loader_between_models"}}
    assert context.current().shown == {}
    code_panel(result)
    assert context.current().shown == {"probe.md": {"seeding.loader_between_models"}}


def test_only_results_of_run_have_panels():
    with pytest.raises(TypeError, match="Result returned by run"):
        code_panel({"value": 1})
