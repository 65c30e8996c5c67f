"""Progress lines in the build log, on a scripted clock."""

from __future__ import annotations

import importlib
import logging
from types import SimpleNamespace

import pytest

from snippets.lab.progress import progress

progress_module = importlib.import_module("snippets.lab.progress")  # the package's ``progress`` is the function


@pytest.fixture()
def clock(monkeypatch):
    """``perf_counter`` returns the scripted times in order (the last one again when they run out)."""
    times: list[float] = []

    def perf_counter() -> float:
        return times.pop(0) if len(times) > 1 else times[0]

    monkeypatch.setattr(progress_module, "time", SimpleNamespace(perf_counter=perf_counter))
    return times


def _lines(caplog) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == "mkdocs.plugins.pitfalls"]


def test_lines_every_few_seconds_and_a_closing_line(clock, caplog):
    # start, after each of the 4 items, at the end (perf_counter starts anywhere: times are differences)
    clock[:] = [100, 101, 106, 107, 113, 114]
    with caplog.at_level(logging.INFO, logger="mkdocs.plugins.pitfalls"):
        assert list(progress(["a", "b", "c", "d"], "loader epochs")) == ["a", "b", "c", "d"]
    assert _lines(caplog) == ["pitfalls: loader epochs: 2/4 (50%), 6 s elapsed",
                              "pitfalls: loader epochs: 4/4 (100%), 13 s elapsed",
                              "pitfalls: loader epochs: finished 4 in 14 s"]


def test_the_interval_is_measured_from_the_last_line(clock, caplog):
    clock[:] = [0, 5, 9, 10, 10]
    with caplog.at_level(logging.INFO, logger="mkdocs.plugins.pitfalls"):
        list(progress(range(3), "x", every_s=5.0))
    assert _lines(caplog) == ["pitfalls: x: 1/3 (33%), 5 s elapsed", "pitfalls: x: 3/3 (100%), 10 s elapsed",
                              "pitfalls: x: finished 3 in 10 s"]


def test_default_interval_is_five_seconds(clock, caplog):
    clock[:] = [0, 5, 5]
    with caplog.at_level(logging.INFO, logger="mkdocs.plugins.pitfalls"):
        list(progress([1], "y"))
    assert _lines(caplog) == ["pitfalls: y: 1/1 (100%), 5 s elapsed", "pitfalls: y: finished 1 in 5 s"]


def test_a_quick_loop_logs_nothing(clock, caplog):
    clock[:] = [0, 1, 2, 4.9]
    with caplog.at_level(logging.INFO, logger="mkdocs.plugins.pitfalls"):
        list(progress([1, 2], "quick"))
    assert _lines(caplog) == []


def test_unknown_length_has_no_share(clock, caplog):
    clock[:] = [0, 6, 7]
    with caplog.at_level(logging.INFO, logger="mkdocs.plugins.pitfalls"):
        list(progress((i for i in range(2)), "stream"))
    assert _lines(caplog) == ["pitfalls: stream: 1/?, 6 s elapsed", "pitfalls: stream: finished 2 in 7 s"]


def test_a_given_total_is_used(clock, caplog):
    clock[:] = [0, 6, 7]
    with caplog.at_level(logging.INFO, logger="mkdocs.plugins.pitfalls"):
        list(progress((i for i in range(2)), "stream", total=8))
    assert _lines(caplog)[0] == "pitfalls: stream: 1/8 (12%), 6 s elapsed"


def test_an_empty_loop(clock, caplog):
    clock[:] = [0, 6]
    with caplog.at_level(logging.INFO, logger="mkdocs.plugins.pitfalls"):
        assert list(progress([], "nothing")) == []
    assert _lines(caplog) == ["pitfalls: nothing: finished 0 in 6 s"]


def test_items_are_passed_on_lazily(clock):
    clock[:] = [0]
    seen = []

    def items():
        for i in range(3):
            seen.append(i)
            yield i

    iterator = progress(items(), "lazy")
    assert next(iterator) == 0 and seen == [0]
