"""Uncertainty of timing ratios, from synthetic timings: intervals, noise, and claims noise cannot decide."""

from __future__ import annotations

import itertools
import math

import pytest

from snippets.lab import timing


def _rounds(values):
    return {"median": sorted(values)[len(values) // 2], "rounds": list(values)}


def test_paired_rounds_cancel_a_slowdown_that_hits_both_sides():
    # Round 3 ran while the machine was busy: both sides took 5x as long; the ratio is still 2.
    direct = _rounds([1.0, 1.0, 5.0, 1.0, 1.0, 1.0])
    loader = _rounds([2.0, 2.0, 10.0, 2.0, 2.0, 2.0])
    interval = timing.ratio(loader, direct)
    assert interval["paired"] and interval["value"] == 2.0
    assert interval["low"] == interval["high"] == 2.0
    assert not timing.is_noisy(interval)


def test_a_wide_spread_is_noisy_and_contains_the_value():
    direct = _rounds([1.0] * 8)
    loader = _rounds([0.5, 3.0, 1.0, 2.5, 0.6, 2.8, 1.1, 2.9])
    interval = timing.ratio(loader, direct)
    assert interval["low"] <= interval["value"] <= interval["high"]
    assert timing.relative_spread(interval) > timing.NOISE_TOLERANCE
    assert timing.is_noisy(interval)


def test_independent_blocks_are_bootstrapped_when_there_are_no_rounds():
    a = {"median": 2.0, "samples": [1.9, 2.0, 2.1, 2.0, 1.95, 2.05]}
    b = {"median": 1.0, "samples": [0.98, 1.0, 1.02, 1.0, 0.99, 1.01]}
    interval = timing.ratio(a, b)
    assert not interval["paired"] and interval["value"] == 2.0
    assert 1.85 < interval["low"] < 2.0 < interval["high"] < 2.15
    assert timing.ratio(a, b) == interval, "the interval must be the same on every rebuild"


@pytest.mark.parametrize("a, b", [({"median": 2.0, "samples": [2.0]}, {"median": 1.0, "samples": [1.0, 1.0, 1.0]}),
                                  (_rounds([2.0, 2.0]), _rounds([1.0, 1.0]))])
def test_too_few_blocks_give_no_interval_and_count_as_noisy(a, b):
    interval = timing.ratio(a, b)
    assert interval["low"] is None and interval["high"] is None
    assert timing.relative_spread(interval) == math.inf and timing.is_noisy(interval)
    assert timing.decide(interval, ">", 1.5) is None


@pytest.mark.parametrize("low, high, relation, threshold, expected", [
    (3.5, 4.0, ">", 3, True),     # the whole interval above
    (2.0, 2.9, ">", 3, False),    # the whole interval below
    (2.5, 3.5, ">", 3, None),     # straddles: undecided on this machine
    (0.9, 1.1, "<", 1.2, True),
    (1.3, 1.6, "<", 1.2, False),
    (1.1, 1.3, "<", 1.2, None),
])
def test_a_claim_holds_or_fails_only_when_the_whole_interval_says_so(low, high, relation, threshold, expected):
    assert timing.decide({"value": (low + high) / 2, "low": low, "high": high}, relation, threshold) is expected


def test_decide_rejects_unknown_relations():
    with pytest.raises(ValueError, match="relation"):
        timing.decide({"value": 1, "low": 1, "high": 1}, ">=", 1)


def _fake_measure(medians):
    stream = iter(medians)

    def measure(fn, **kwargs):
        value = next(stream)
        return {"median": value, "iqr": 0.0, "min": value, "max": value, "blocks": 3, "runs": 3,
                "samples": [value] * 3}
    return measure


def test_noisy_rounds_are_retried_up_to_the_limit(monkeypatch):
    # Baseline steady at 1; the other alternates wildly: never settles, so rounds are added up to max_rounds.
    wild = itertools.cycle([0.5, 3.0])
    medians = itertools.chain.from_iterable((1.0, next(wild)) for _ in itertools.count())
    monkeypatch.setattr(timing, "measure", _fake_measure(medians))
    result = timing.interleaved({"base": lambda: None, "other": lambda: None}, rounds=4, min_run_time=0.0,
                                baseline="base", budget_s=60.0, max_rounds=9)
    assert len(result["other"]["rounds"]) == 9 and result["other"]["extra_rounds"] == 5


def test_quiet_rounds_are_not_retried(monkeypatch):
    medians = itertools.chain.from_iterable((1.0, 2.0) for _ in itertools.count())
    monkeypatch.setattr(timing, "measure", _fake_measure(medians))
    result = timing.interleaved({"base": lambda: None, "other": lambda: None}, rounds=4, min_run_time=0.0,
                                baseline="base", budget_s=60.0)
    assert len(result["base"]["rounds"]) == 4 and result["base"]["extra_rounds"] == 0
    assert timing.ratio(result["other"], result["base"])["value"] == 2.0


def test_no_budget_means_no_retry(monkeypatch):
    wild = itertools.cycle([0.5, 3.0])
    medians = itertools.chain.from_iterable((1.0, next(wild)) for _ in itertools.count())
    monkeypatch.setattr(timing, "measure", _fake_measure(medians))
    result = timing.interleaved({"base": lambda: None, "other": lambda: None}, rounds=4, min_run_time=0.0,
                                baseline="base")
    assert len(result["other"]["rounds"]) == 4


def test_interleaved_rejects_an_unknown_baseline():
    with pytest.raises(ValueError, match="baseline 'nope'"):
        timing.interleaved({"a": lambda: None}, rounds=1, min_run_time=0.0, baseline="nope")
