"""Claims and renderers (the timing helper is tested in test_lab_timing.py)."""

from __future__ import annotations

import re

import pytest

from snippets.lab import ClaimError, cache, render
from snippets.lab.cache import Result


def _result(value=None, timing=False) -> Result:
    return Result(value or {}, "demo.figure", {}, {"torch": "x", "device": "cpu", "device_name": "CPU (demo)",
                                                 "cpu": "demo", "threads": 2}, "2026-01-02T03:04:05+00:00", 0.1, timing)


def _figure(result):
    fig, ax = render.new_figure("wide")
    ax.plot([0, 1, 2], [3, 1, 2], label="a")
    ax.legend()
    return render.svg(fig, result, alt="demo <figure>")


def test_svg_is_byte_identical_and_dateless():
    first, second = _figure(_result()), _figure(_result())
    assert first == second
    assert "<dc:date>" not in first and "<?xml" not in first and "<!DOCTYPE" not in first
    assert 'data-timing="false"' in first and 'data-experiment="demo.figure"' in first
    assert 'aria-label="demo &lt;figure&gt;"' in first
    width = re.search(r'<svg[^>]* width="([\d.]+)pt"', first)
    assert width and float(width.group(1)) == pytest.approx(8.0 * 72)


def test_timing_figure_is_marked():
    assert 'data-timing="true"' in _figure(_result(timing=True))


def test_unknown_figure_size():
    with pytest.raises(ValueError, match="unknown figure size 'huge'"):
        render.new_figure("huge")


def test_table_shape_errors():
    assert render.table(["a", "b"], [[1, "x|y"]]) == "| a | b |\n| :--- | ---: |\n| 1 | x\\|y |\n"
    with pytest.raises(ValueError, match="has 1 cells for 2 columns"):
        render.table(["a", "b"], [[1]])


def test_seconds_units():
    assert [render.seconds(v) for v in (2.5, 0.0123, 4.5e-6, 3e-9)] == ["2.5 s", "12.3 ms", "4.5 µs", "3 ns"]


def test_cached_result_reuses_its_drawn_figure_and_a_fresh_one_redraws(private_cache):
    import dataclasses

    fresh = _result({"points": [1, 2]})
    first = _figure(fresh)
    [stored] = (private_cache.parent / "figures").glob("*.svg")
    stored.write_text(first.replace("demo", "DEMO"))  # mark the stored copy
    cached = dataclasses.replace(fresh, cached=True)
    assert _figure(cached) == first.replace("demo", "DEMO"), "a cached result must reuse the stored figure"
    assert _figure(fresh) == first, "a freshly computed result must be drawn anew"
    other = dataclasses.replace(cached, value={"points": [1, 3]})
    assert _figure(other) == first, "a different value is a different figure"
    assert len(list((private_cache.parent / "figures").glob("*.svg"))) == 2
