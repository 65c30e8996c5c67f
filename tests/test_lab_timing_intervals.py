"""Uncertainty of timing ratios, from synthetic timings: intervals, noise, and claims noise cannot decide."""

from __future__ import annotations

import math

from collections import namedtuple

import pytest

from snippets.lab import timing
from snippets.lab.timing import measure


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


@pytest.fixture(autouse=True)
def _steady_reference(monkeypatch):
    """The reference workload reads the same every round here (drift is tested in test_lab_timing.py)."""
    monkeypatch.setattr(timing, "time_reference", lambda work, number=None, timer=None: (1e-3, 1))


def _fake_measure(medians):
    """``measure`` scripted: ``medians`` lists each round's (base, other) in turn; each function (which returns
    its name) gets its own, whatever order a round runs them in."""
    values = list(medians)
    streams = {"base": iter(values[0::2]), "other": iter(values[1::2])}

    def measure(fn, **kwargs):
        value = next(streams[fn()])
        return {"median": value, "mean": value, "iqr": 0.0, "min": value, "max": value, "blocks": 3, "runs": 3,
                "samples": [value] * 3}
    return measure


# ---- contention: other programs holding the machine while something is timed ---------------------------------


def _snapshots(seconds: float, machine_cores: float, own_cores: float, other_cores: float) -> tuple[tuple, tuple]:
    """Two cpu_snapshot()s ``seconds`` apart on a machine of ``machine_cores``, this work using ``own_cores`` and
    other programs ``other_cores`` meanwhile."""
    return (0.0, 0.0, 0.0, 0.0), (seconds, (own_cores + other_cores) * seconds, machine_cores * seconds,
                                  own_cores * seconds)


@pytest.mark.parametrize("machine, own, others, taken", [
    (2, 1.0, 0.0, 0.0),          # quiet
    (2, 1.0, 1.0, 0.0),          # one busy program: the other core is free, one-thread work loses nothing
    (2, 2 / 3, 4 / 3, 1 / 3),    # two busy programs: three threads on two cores, a third of its core taken
    (1, 0.5, 0.5, 0.5),          # one core, shared half and half
    (2, 1.5, 0.5, 0.25),         # work on two cores: half a core of its two taken
    (4, 1.0, 3.0, 0.0),          # three busy programs on four cores leave its core alone
    (2, 0.0, 2.0, 1.0),          # nothing of its own ran: its core was wholly taken
])
def test_contention_is_the_share_of_its_cores_other_programs_took(machine, own, others, taken):
    assert timing.contention(*_snapshots(2.0, machine, own, others)) == pytest.approx(taken, abs=0.01)


def test_contention_stays_between_none_and_all():
    assert timing.contention((0.0, 0, 0, 0), (1.0, 0.1, 1.0, 0.5)) == 0.0, "never below zero (tick rounding)"
    assert timing.contention((0.0, 0, 0, 0), (1.0, 3.0, 1.0, 0.0)) == 1.0, "never above all"


@pytest.mark.parametrize("before, after", [(None, (1.0, 1, 1, 1)), ((0.0, 1, 1, 1), None),
                                           ((0.0, 0, 0, 0), (0.2, 50, 100, 0)),  # too short to tell
                                           ((0.0, 5, 100, 0), (1.0, 5, 100, 0))])  # no ticks counted
def test_contention_is_unknown_without_snapshots_a_long_enough_window_or_ticks(before, after):
    assert timing.contention(before, after) is None


class _FakePsutil:
    """psutil as it reads a Linux machine: its CPU times, this process's, and two children, one of which ends
    before it is read."""

    Error = type("Error", (Exception,), {})

    def __init__(self, *, fail: Exception | None = None) -> None:
        self.fail = fail

    def cpu_times(self):
        if self.fail is not None:
            raise self.fail
        fields = "user nice system idle iowait irq softirq steal guest guest_nice"
        return namedtuple("scputimes", fields)(100.0, 10.0, 50.0, 1000.0, 40.0, 5.0, 5.0, 7.0, 99.0, 99.0)

    def Process(self):  # noqa: N802 - psutil's name
        fake = self

        class Child:
            def __init__(self, times):
                self.times = times

            def cpu_times(self):
                if self.times is None:
                    raise fake.Error("it ended")
                return self.times

        class Me:
            def cpu_times(self):
                return (11.0, 12.0, 13.0, 14.0, 0.0)  # user, system, children's user and system, iowait

            def children(self, recursive=False):
                assert recursive, "a worker's own children count too"
                return [Child(None), Child((30.0, 3.0, 0.0, 0.0))]

        return Me()


def test_a_snapshot_counts_the_machine_and_this_process_with_its_workers(monkeypatch):
    monkeypatch.setattr(timing, "psutil", _FakePsutil())
    moment, busy, total, own = timing.cpu_snapshot()
    assert total == 100 + 10 + 50 + 1000 + 40 + 5 + 5 + 7, "guest time is already in user time: not counted twice"
    assert busy == total - 1000 - 40, "idle and iowait are not busy"
    assert own == 11 + 12 + 13 + 14 + 30 + 3, "this process, its waited children, its running worker"
    assert moment > 0


def test_no_snapshot_where_the_machine_cannot_be_read_or_the_clock_is_a_threads(monkeypatch):
    import time

    assert timing.cpu_snapshot(time.thread_time) is None, "other programs cannot lengthen a thread's CPU time"
    fake = _FakePsutil()
    monkeypatch.setattr(timing, "psutil", fake)
    assert timing.cpu_snapshot() is not None
    for failure in (PermissionError("no /proc/stat"), fake.Error("access denied")):
        fake.fail = failure
        assert timing.cpu_snapshot() is None


def test_a_real_snapshot_sees_this_process_work():
    before = timing.cpu_snapshot()
    assert before is not None, "psutil reads the CPU times of every platform the site builds on"
    import time

    end = time.process_time() + 0.3  # this process's own CPU time: however busy the machine is
    while time.process_time() < end:
        pass
    after = timing.cpu_snapshot()
    assert after[3] - before[3] >= 0.3 - 0.02, "0.3 s of this process's CPU time (the kernel counts in 10 ms ticks)"
    assert after[2] > before[2] and after[1] >= before[1]


def test_ratio_carries_the_larger_contention_and_a_contended_ratio_is_widened_not_vetoed():
    """A busy machine widens the interval by the slowdown it could cause one side alone, 1/(1 − c); a claim is
    decided on the widened interval: past its bound it holds (or fails), across it it is undecided."""
    quiet = {**_rounds([1.0] * 6), "contention": 0.01}
    busy = {**_rounds([3.0] * 6), "contention": 0.4}
    interval = timing.ratio(busy, quiet)
    assert interval["contention"] == 0.4 and interval["value"] == 3.0
    assert interval["low_quiet"] == interval["high_quiet"] == 3.0
    assert interval["low"] == pytest.approx(3.0 * 0.6) and interval["high"] == pytest.approx(3.0 / 0.6)
    assert timing.is_noisy(interval), "tight, but measured on a busy machine"
    # past the bound after widening: decided, both ways
    assert timing.decide(interval, ">", 1.5) is True and timing.decide(interval, "<", 1.5) is False
    assert timing.decide(interval, "<", 6.0) is True and timing.decide(interval, ">", 6.0) is False
    # across the bound once widened: undecided
    assert timing.decide(interval, ">", 2.0) is None and timing.decide(interval, "<", 4.0) is None
    calm = timing.ratio({**busy, "contention": 0.05}, quiet)
    assert calm["contention"] == 0.05 and not timing.is_noisy(calm) and timing.decide(calm, ">", 2.0) is True
    assert calm["low"] == calm["high"] == 3.0, "a quiet machine's interval is not widened"
    assert timing.ratio(_rounds([3.0] * 6), _rounds([1.0] * 6))["contention"] is None


def test_a_drifted_ratio_is_widened_and_still_decided():
    a, b = {**_rounds([10.0] * 6), "drifted": True}, _rounds([1.0] * 6)
    interval = timing.ratio(a, b)
    factor = 1 + 2 * timing.DRIFT_LIMIT
    assert interval["low"] == pytest.approx(10 / factor) and interval["high"] == pytest.approx(10 * factor)
    assert timing.decide(interval, ">", 3.0) is True and timing.decide(interval, ">", 9.0) is None


def test_a_busy_share_is_widened_and_decided_on_its_widened_interval():
    part = {**_rounds([1.0, 1.1, 0.9, 1.0, 1.05, 0.95]), "contention": 0.5}
    whole = _rounds([2.0, 2.2, 1.8, 2.0, 2.1, 1.9])
    shared = timing.share([(part, whole)])

    def odds(p: float) -> float:
        return p / (1 - p)

    # half the machine held by others: a part slowed up to 2× (the rest not) doubles the share's odds
    assert odds(shared["low"]) == pytest.approx(odds(shared["low_quiet"]) / 2)
    assert odds(shared["high"]) == pytest.approx(odds(shared["high_quiet"]) * 2)
    assert 0 < shared["low"] < shared["high"] < 1, "a share's widened interval stays a share"
    assert timing.decide(shared, ">", 0.2) is True and timing.decide(shared, ">", 0.4) is None


def _fake_contention(monkeypatch, shares):
    stream = iter(shares)
    monkeypatch.setattr(timing, "contention", lambda before, after: next(stream))


def test_busy_rounds_are_left_out_when_enough_quiet_ones_remain(monkeypatch):
    # Rounds 2 and 4 ran beside another program: the ratio there was 5, not 2.
    medians = [1.0, 2.0, 1.0, 5.0, 1.0, 2.0, 1.0, 5.0, 1.0, 2.0, 1.0, 2.0]
    monkeypatch.setattr(timing, "measure", _fake_measure(iter(medians)))
    _fake_contention(monkeypatch, [0.0, 0.6, 0.02, 0.5, 0.0, 0.01])
    result = timing.interleaved({"base": lambda: "base", "other": lambda: "other"}, rounds=6, min_run_time=0.0, kind="wall")
    assert result["other"]["rounds"] == [2.0, 2.0, 2.0, 2.0] and result["other"]["busy_rounds_left_out"] == 2
    assert result["other"]["contention"] == pytest.approx(0.03 / 4)
    interval = timing.ratio(result["other"], result["base"])
    assert interval["value"] == 2.0 and not timing.is_noisy(interval)


def test_a_machine_busy_throughout_keeps_every_round_and_says_so(monkeypatch):
    medians = [1.0, 5.0] * 3 + [1.0, 2.0] * 3
    monkeypatch.setattr(timing, "measure", _fake_measure(iter(medians)))
    _fake_contention(monkeypatch, [0.5, 0.6, 0.4, 0.0, 0.0, 0.0])
    result = timing.interleaved({"base": lambda: "base", "other": lambda: "other"}, rounds=6, min_run_time=0.0, kind="wall")
    # three quiet rounds are enough (min(rounds, 3)): the busy half is left out
    assert result["other"]["rounds"] == [2.0, 2.0, 2.0] and result["other"]["contention"] == 0.0
    medians = [1.0, 5.0] * 4
    monkeypatch.setattr(timing, "measure", _fake_measure(iter(medians)))
    _fake_contention(monkeypatch, [0.5, 0.6, 0.0, 0.4])
    result = timing.interleaved({"base": lambda: "base", "other": lambda: "other"}, rounds=4, min_run_time=0.0, kind="wall")
    assert len(result["other"]["rounds"]) == 4 and result["other"]["busy_rounds_left_out"] == 0
    assert result["other"]["contention"] == pytest.approx(0.375)
    interval = timing.ratio(result["other"], result["base"])
    # 5× measured, widened by 1/(1 − 0.375) for the busy machine: still past 1×, so decided; not past 4×
    assert timing.is_noisy(interval) and timing.decide(interval, ">", 1.0) is True
    assert timing.decide(interval, ">", 4.0) is None


def test_rounds_too_short_to_judge_are_judged_together(monkeypatch):
    monkeypatch.setattr(timing, "measure", _fake_measure(iter([1.0, 2.0] * 3)))
    _fake_contention(monkeypatch, [None, None, None, 0.3])  # three rounds, then the whole run
    result = timing.interleaved({"base": lambda: "base", "other": lambda: "other"}, rounds=3, min_run_time=0.0, kind="wall")
    assert result["base"]["contention"] == 0.3 and result["base"]["busy_rounds_left_out"] == 0


def test_the_home_page_states_the_noise_rules_the_lab_applies():
    from conftest import ROOT

    page = " ".join((ROOT / "docs" / "index.md").read_text(encoding="utf-8").split())
    from snippets.lab import render

    points = f"{render.UNRELIABLE_SHARE_SPAN * 100:g} percentage points"
    assert f"spans more than a factor of {render.UNRELIABLE_SPAN:g} (a share: more than {points})" in page
    assert f"took more than {timing.CONTENTION_LIMIT:.0%} of the cores it kept busy" in page
    assert f"by a further {1 + 2 * timing.DRIFT_LIMIT:g}×" in page
    assert f"moved by more than {timing.DRIFT_LIMIT:.0%}" in page
    from snippets.lab import replicas

    words = {5: "five", 3: "three", 4: "four", 6: "six", 8: "eight", 10: "ten"}
    assert f"separate Python processes ({words[replicas.DEFAULT_PROCESSES]} by default," in page


def test_contention_boundaries():
    # a window of exactly MIN_WINDOW_S is long enough; the window is a difference of times, not a sum
    assert timing.contention(*_snapshots(timing.MIN_WINDOW_S, 1, 0.5, 0.5)) == pytest.approx(0.5, abs=0.05)
    later = tuple((100.0 + a, *rest) for a, *rest in _snapshots(0.1, 1, 0.5, 0.5))
    assert timing.contention(*later) is None
    # a core used a quarter of the time or less is not one the work needed
    assert timing.contention(*_snapshots(2.0, 2, 1.25, 0.75)) == 0.0
    assert timing.contention(*_snapshots(2.0, 2, 1.3, 0.7)) == pytest.approx(0.35, abs=0.01)


class _Snapshots:
    """``cpu_snapshot`` scripted: each call a second later on a one-core machine, ``busy`` percent of each second
    used by others."""

    def __init__(self, busy: list[int]):
        self.busy, self.calls, self.now, self.seconds, self.others = list(busy), 0, 0.0, 0.0, 0.0

    def __call__(self, timer=None):
        if self.calls:
            self.now += 1.0
            self.seconds += 1.0
            self.others += (self.busy.pop(0) if self.busy else 0) / 100
        self.calls += 1
        return self.now, self.others, self.seconds, 0.0


def test_measure_reports_the_contention_of_its_own_window(monkeypatch):
    monkeypatch.setattr(timing, "cpu_snapshot", _Snapshots([30]))
    stats = measure(lambda: None, repeats=2, min_run_time=0.0, block_time=0.0, kind="wall")
    assert stats["contention"] == pytest.approx(0.30)


def test_measure_accepts_a_block_of_one_call():
    calls = []
    stats = measure(lambda: calls.append(1), repeats=3, min_run_time=0.0, number=1)
    assert stats["number"] == 1 and stats["runs"] == len(calls) == 3


def test_interleaved_measures_each_rounds_contention_and_keeps_the_quiet_ones(monkeypatch):
    # snapshots: the whole run's first, then before and after each measure and each round (scripted busy shares)
    snapshots = _Snapshots([0] * 100)
    monkeypatch.setattr(timing, "cpu_snapshot", snapshots)
    result = timing.interleaved({"a": lambda: None}, rounds=3, min_run_time=0.0, block_time=0.0, repeats=1, kind="wall")
    assert result["a"]["contention"] == 0.0 and result["a"]["busy_rounds_left_out"] == 0
    # four snapshots a round (before it, around its measure, after it): the first round busy, the rest quiet
    monkeypatch.setattr(timing, "cpu_snapshot", _Snapshots([0, 50, 50, 50] + [0] * 100))
    result = timing.interleaved({"a": lambda: None}, rounds=4, min_run_time=0.0, block_time=0.0, repeats=1, kind="wall")
    assert result["a"]["busy_rounds_left_out"] == 1 and result["a"]["contention"] == 0.0
    assert len(result["a"]["rounds"]) == 3


def test_interleaved_judges_rounds_too_short_to_tell_by_the_whole_run(monkeypatch):
    state = {"now": 0.0, "seconds": 0.0, "others": 0.0}

    def snapshot(timer=None):  # each call 0.05 s later: every round is too short, the whole run is not
        state["now"] += 0.05  # two cores (0.1 CPU seconds in 0.05 s), other programs on 1.2 of them: 0.2 of this one
        state["seconds"] += 0.1
        state["others"] += 0.06
        return state["now"], state["others"], state["seconds"], 0.0

    monkeypatch.setattr(timing, "cpu_snapshot", snapshot)
    result = timing.interleaved({"a": lambda: None}, rounds=3, min_run_time=0.0, block_time=0.0, repeats=1, kind="wall")
    assert result["a"]["contention"] == pytest.approx(0.2)


def test_an_interval_is_bootstrapped_once_per_input_and_handed_out_as_a_copy(monkeypatch):
    """Every language of a build, and every rebuild under make serve, prints the same intervals: each is resampled
    once per input in a process, and a caller that edits its copy changes nothing for the next."""
    from pathlib import Path

    calls = []

    def bootstrap(numerator, denominator, *, confidence, resamples):
        calls.append((numerator["n"], denominator["n"], confidence, resamples))
        return {"ratio": numerator["n"] / denominator["n"], "confidence": confidence}

    monkeypatch.setattr(timing, "_resampled_ratio", bootstrap)
    monkeypatch.setattr(timing, "_RATIOS", {})
    first = timing._ratio({"n": 2}, {"n": 4}, confidence=0.95, resamples=10)
    assert first == {"ratio": 0.5, "confidence": 0.95}
    first["ratio"] = "changed by a caller"
    assert timing._ratio({"n": 2}, {"n": 4}, confidence=0.95, resamples=10) == {"ratio": 0.5, "confidence": 0.95}
    assert calls == [(2, 4, 0.95, 10)]
    timing._ratio({"n": 2}, {"n": 4}, confidence=0.9, resamples=10)
    timing._ratio({"n": 2}, {"n": 4}, confidence=0.95, resamples=20)
    timing._ratio({"n": 4}, {"n": 2}, confidence=0.95, resamples=10)
    assert calls == [(2, 4, 0.95, 10), (2, 4, 0.9, 10), (2, 4, 0.95, 20), (4, 2, 0.95, 10)]
    assert len(timing._RATIOS) == 4
    timing._ratio({"n": 2, "unit": "s"}, {"n": 4}, confidence=0.95, resamples=10)
    timing._ratio({"unit": "s", "n": 2}, {"n": 4}, confidence=0.95, resamples=10)
    assert len(calls) == 5, "the same timings, whatever the order of their fields, are bootstrapped once"
    timing._ratio({"n": 2, "at": {Path("a")}}, {"n": 4}, confidence=0.95, resamples=10)
    assert len(calls) == 6, "a value JSON cannot hold is keyed by its repr"


def test_a_platform_without_some_cpu_time_fields_counts_them_as_zero(monkeypatch):
    """macOS has no iowait, irq, softirq or steal: the machine's busy and total time are read from what it has."""
    from types import SimpleNamespace

    monkeypatch.setattr(timing.psutil, "cpu_times", lambda: SimpleNamespace(user=3.0, nice=1.0, system=2.0, idle=10.0))
    _, busy, total, _ = timing.cpu_snapshot()
    assert (busy, total) == (6.0, 16.0)
