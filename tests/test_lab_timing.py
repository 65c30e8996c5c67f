"""The timing helper's logic, on a scripted clock: how many calls, how many blocks, which statistics.

No test here depends on how fast this machine is: ``torch.utils.benchmark.Timer`` and ``time.perf_counter`` are
replaced by fakes that return the durations a test scripts (one smoke test uses the real Timer and asserts
only counts and orderings).
"""

from __future__ import annotations

import math
from types import SimpleNamespace

import pytest
import torch

from snippets.lab import measure, timing


class Clock:
    """A ``perf_counter`` that only moves when a fake timer says time has passed."""

    def __init__(self) -> None:
        self.now = 0.0

    def perf_counter(self) -> float:
        return self.now


@pytest.fixture()
def fake(monkeypatch):
    """Replace the Timer and the clock; ``fake.per_call`` scripts the seconds per call of successive blocks."""
    clock = Clock()
    state = SimpleNamespace(per_call=[], numbers=[], timers=[], clock=clock, call_fn=True)

    class FakeTimer:
        def __init__(self, stmt, globals, num_threads):  # noqa: A002 - the real Timer's parameter names
            self.stmt, self.globals, self.num_threads = stmt, globals, num_threads
            state.timers.append(self)

        def _timeit(self, number: int) -> float:
            state.numbers.append(number)
            if state.call_fn:
                for _ in range(number):
                    self.globals["call"]()
            per_call = state.per_call.pop(0) if len(state.per_call) > 1 else state.per_call[0]
            clock.now += per_call * number
            return per_call * number

    monkeypatch.setattr(timing, "benchmark", SimpleNamespace(Timer=FakeTimer))
    monkeypatch.setattr(timing, "time", SimpleNamespace(perf_counter=clock.perf_counter))
    return state


def _statistics(stats: dict) -> dict:
    return {key: stats[key] for key in ("median", "iqr", "min", "max", "blocks", "runs")}


def test_statistics_over_the_blocks(fake):
    # A warm-up call of 1 ms sets blocks of 20 calls (block_time 20 ms); then seven blocks of 1..7 ms a call.
    fake.per_call = [1e-3, 3e-3, 1e-3, 7e-3, 2e-3, 5e-3, 4e-3, 6e-3]
    calls = []
    stats = measure(lambda: calls.append(1), repeats=7, min_run_time=0.0, block_time=0.02)
    assert fake.numbers == [1] + [20] * 7
    assert len(calls) == 1 + 7 * 20
    assert _statistics(stats) == pytest.approx({"median": 4e-3, "iqr": 4e-3, "min": 1e-3, "max": 7e-3,
                                                "blocks": 7, "runs": 140})
    assert stats["blocks"] == 7 and stats["runs"] == 140


def test_one_block_has_no_spread(fake):
    fake.per_call = [1e-3, 2e-3]
    stats = measure(lambda: None, repeats=1, min_run_time=0.0, block_time=0.004)
    assert fake.numbers == [1, 4]
    assert _statistics(stats) == {"median": 2e-3, "iqr": 0.0, "min": 2e-3, "max": 2e-3, "blocks": 1, "runs": 4}


def test_two_blocks_have_the_spread_of_their_quartiles(fake):
    fake.per_call = [1e-3, 1e-3, 3e-3]
    stats = measure(lambda: None, repeats=2, min_run_time=0.0, block_time=0.001)
    # statistics.quantiles([1, 3], n=4) ("exclusive" method): 0.5 and 3.5 ms
    assert stats["blocks"] == 2 and stats["iqr"] == pytest.approx(3e-3)


@pytest.mark.parametrize("first, block_time, number", [(1e-3, 0.02, 20), (0.05, 0.02, 1), (0.02, 0.02, 1),
                                                       (2**-10, 2**-6, 16), (0.0, 1e-5, 10_000)])  # a warm-up that took no time counts as 1 ns
def test_calls_per_block_fill_the_block_time(fake, first, block_time, number):
    fake.per_call = [first, 1e-3]
    fake.call_fn = False
    measure(lambda: None, repeats=2, min_run_time=0.0, block_time=block_time)
    assert fake.numbers == [1, number, number]


def test_blocks_continue_until_min_run_time(fake):
    # Blocks of exactly 1/64 s (16 calls of 1/1024 s): 5/64 s of blocks take five of them, though two are asked.
    fake.per_call = [2**-10]
    fake.call_fn = False
    stats = measure(lambda: None, repeats=2, min_run_time=5 * 2**-6, block_time=2**-6)
    assert stats["blocks"] == 5 and fake.numbers == [1] + [16] * 5
    assert fake.clock.now == 2**-10 + 5 * 2**-6


def test_at_least_repeats_blocks_however_long_they_take(fake):
    fake.per_call = [1.0]
    fake.call_fn = False
    assert measure(lambda: None, repeats=3, min_run_time=0.5, block_time=0.01)["blocks"] == 3


def test_the_number_of_blocks_is_capped(fake):
    fake.per_call = [1e-3, 0.0]  # blocks that take no time never reach min_run_time
    fake.call_fn = False
    stats = measure(lambda: None, repeats=1, min_run_time=1.0, block_time=0.01)
    assert stats["blocks"] == 10_000 and stats["runs"] == 100_000


def test_defaults(fake):
    fake.per_call = [2**-10]
    fake.call_fn = False
    # 7 blocks when no minimum time is asked, blocks of int(0.02 * 1024) = 20 calls
    assert measure(lambda: None, min_run_time=0.0)["blocks"] == 7
    assert set(fake.numbers[1:]) == {20}
    # 0.2 s in all: 11 blocks of 20/1024 s
    fake.numbers.clear()
    assert measure(lambda: None)["blocks"] == 11
    assert fake.numbers == [1] + [20] * 11


def test_timer_runs_the_function_with_the_build_thread_count(fake):
    fake.per_call = [1e-3]
    measure(lambda: None, repeats=1, min_run_time=0.0)
    [timer] = fake.timers
    # benchmark.Timer would otherwise run the statement on one thread.
    assert timer.stmt == "call()" and timer.num_threads == torch.get_num_threads()
    assert set(timer.globals) == {"call"}


@pytest.mark.parametrize("repeats", [0, -3])
def test_repeats_must_be_positive(repeats):
    with pytest.raises(ValueError) as raised:
        measure(lambda: None, repeats=repeats)
    assert str(raised.value) == f"repeats must be >= 1, got {repeats}"


def test_cuda_calls_are_synchronised(fake, monkeypatch):
    """The CUDA path on a CPU machine: torch.cuda.synchronize is spied on, no GPU is touched."""
    synced, order = [], []
    monkeypatch.setattr(torch.cuda, "synchronize", lambda device=None: (synced.append(device), order.append("sync")))
    fake.per_call = [1e-3]
    device = torch.device("cuda", 1)
    stats = measure(lambda: order.append("call"), repeats=2, min_run_time=0.0, block_time=0.003, device=device)
    assert stats["runs"] == 6
    assert synced == [device] * 7  # the warm-up call and every timed call
    assert order == ["call", "sync"] * 7


@pytest.mark.parametrize("device", [None, torch.device("cpu"), torch.device("meta")])
def test_other_devices_are_not_synchronised(fake, monkeypatch, device):
    monkeypatch.setattr(torch.cuda, "synchronize", lambda device=None: pytest.fail("synchronised off CUDA"))
    fake.per_call = [1e-3]
    calls = []
    measure(lambda: calls.append(1), repeats=1, min_run_time=0.0, block_time=0.002, device=device)
    assert len(calls) == 3


def test_a_known_block_size_skips_the_warm_up():
    """Later rounds of ``interleaved`` pass the block size the first found: no warm-up call, blocks that size."""
    calls = []
    stats = measure(lambda: calls.append(1), repeats=4, min_run_time=0.0, number=3)
    assert len(calls) == stats["runs"] == 12 and stats["number"] == 3 and stats["blocks"] == 4


@pytest.mark.parametrize("number", [0, -2])
def test_a_block_size_below_one_is_refused(number):
    with pytest.raises(ValueError, match=rf"number must be >= 1, got {number}"):
        measure(lambda: None, number=number)


def test_real_timer_counts_calls():
    """With the real Timer: every block's calls are counted, plus one warm-up call; no time is asserted."""
    calls = []
    stats = measure(lambda: calls.append(1), repeats=5, min_run_time=0.0, block_time=0.0)
    assert stats["blocks"] >= 5 and stats["runs"] == stats["blocks"]
    assert len(calls) == stats["runs"] + 1
    assert stats["min"] <= stats["median"] <= stats["max"] and stats["iqr"] >= 0


# ---- intervals: samples, quantiles, ratios, decisions -----------------------------------------------------------


def test_samples_are_the_blocks_times_thinned_evenly():
    assert timing._thin([1.0, 2.0, 3.0]) == [1.0, 2.0, 3.0]
    assert timing._thin(list(range(10)), limit=4) == [0, 2, 5, 7]
    assert len(timing._thin(list(range(1000)))) == timing.MAX_SAMPLES == 64
    assert timing._thin(list(range(1000)))[:3] == [0, 15, 31]


def test_measure_keeps_the_blocks_times_as_samples(fake):
    fake.per_call = [1e-3, 3e-3, 1e-3, 2e-3]
    stats = measure(lambda: None, repeats=3, min_run_time=0.0, block_time=0.001)
    assert stats["samples"] == pytest.approx([3e-3, 1e-3, 2e-3])


@pytest.mark.parametrize("q, value", [(0.0, 1.0), (0.25, 2.0), (0.3, 2.2), (0.5, 3.0), (0.9, 4.6), (1.0, 5.0)])
def test_quantiles_interpolate_between_sorted_values(q, value):
    assert timing._quantile([1.0, 2.0, 3.0, 4.0, 5.0], q) == pytest.approx(value)


def test_quantile_of_two_values():
    assert timing._quantile([10.0, 20.0], 0.5) == 15.0 and timing._quantile([7.0], 0.9) == 7.0


PAIRED_A = {"rounds": [2.0, 3.0, 4.0, 5.0], "median": 3.5}
PAIRED_B = {"rounds": [1.0, 1.0, 1.0, 1.0], "median": 1.0}


def test_a_paired_ratio_is_the_median_of_the_rounds_ratios_with_a_fixed_bootstrap():
    assert timing.ratio(PAIRED_A, PAIRED_B) == {"value": 3.5, "low": 2.0, "high": 5.0, "paired": True, "n": 4, "contention": None}
    assert timing.ratio(PAIRED_A, PAIRED_B, confidence=0.5, resamples=50) == \
        {"value": 3.5, "low": 3.0, "high": 4.0, "paired": True, "n": 4, "contention": None}


def test_an_unpaired_ratio_resamples_each_side():
    result = timing.ratio({"median": 2.0, "samples": [1.9, 2.0, 2.1, 2.2]},
                          {"median": 1.0, "samples": [0.9, 1.0, 1.1]})
    assert result == pytest.approx({"value": 2.0, "low": 1.7727272727, "high": 2.3888888889, "paired": False,
                                    "n": 3, "contention": None})


@pytest.mark.parametrize("a, b, expected", [
    ({"rounds": [2.0, 4.0], "median": 3.0}, {"rounds": [1.0, 1.0], "median": 1.0},
     {"value": 3.0, "low": None, "high": None, "paired": True, "n": 2, "contention": None}),
    ({"median": 2.0, "samples": [1.0, 2.0]}, {"median": 1.0, "samples": [1.0, 1.0, 1.0]},
     {"value": 2.0, "low": None, "high": None, "paired": False, "n": 2, "contention": None}),
    ({"median": 2.0}, {"median": 1.0}, {"value": 2.0, "low": None, "high": None, "paired": False, "n": 0, "contention": None}),
    ({"rounds": [2.0, 4.0, 6.0], "median": 4.0}, {"rounds": [1.0, 1.0], "median": 1.0, "samples": [1.0]},
     {"value": 4.0, "low": None, "high": None, "paired": False, "n": 0, "contention": None}),
])
def test_too_few_rounds_or_blocks_give_no_interval(a, b, expected):
    assert timing.ratio(a, b) == expected


def test_three_rounds_are_enough_for_an_interval():
    result = timing.ratio({"rounds": [2.0, 3.0, 4.0], "median": 3.0}, {"rounds": [1.0, 1.0, 1.0], "median": 1.0})
    assert result["low"] is not None and result["low"] <= 3.0 <= result["high"] and result["n"] == 3


def test_rounds_on_one_side_only_are_not_paired():
    result = timing.ratio({"rounds": [2.0, 3.0, 4.0], "median": 3.0, "samples": [3.0, 3.0, 3.0]},
                          {"median": 1.0, "samples": [1.0, 1.0, 1.0]})
    assert result == {"value": 3.0, "low": 3.0, "high": 3.0, "paired": False, "n": 3, "contention": None}


@pytest.mark.parametrize("confidence", [0.0, 1.0, 1.5, -0.1])
def test_confidence_is_a_fraction(confidence):
    with pytest.raises(ValueError) as raised:
        timing.ratio(PAIRED_A, PAIRED_B, confidence=confidence)
    assert str(raised.value) == f"confidence must be between 0 and 1, got {confidence}"


@pytest.mark.parametrize("interval, spread", [
    ({"value": 2.0, "low": 1.0, "high": 3.0}, 0.5), ({"value": -2.0, "low": -3.0, "high": -1.0}, 0.5),
    ({"value": 2.0, "low": None, "high": 3.0}, math.inf), ({"value": 2.0, "low": 1.0, "high": None}, math.inf),
    ({"value": 0.0, "low": -1.0, "high": 1.0}, math.inf), ({"value": 2.0}, math.inf),
])
def test_relative_spread_is_half_the_width_over_the_value(interval, spread):
    assert timing.relative_spread(interval) == spread


@pytest.mark.parametrize("low, high, noisy", [(0.8, 1.2, False), (0.74, 1.26, True), (None, None, True)])
def test_noisy_is_wider_than_a_quarter_either_way(low, high, noisy):
    assert timing.is_noisy({"value": 1.0, "low": low, "high": high}) is noisy


def test_noisy_is_strictly_wider_than_the_tolerance():
    interval = {"value": 4.0, "low": 3.5, "high": 4.5}  # exactly ±12.5 %
    assert timing.is_noisy(interval, tolerance=0.125) is False and timing.is_noisy(interval, tolerance=0.124) is True


@pytest.mark.parametrize("relation, low, high, decided", [
    (">", 3.1, 4.0, True), (">", 3.0, 4.0, None), (">", 2.0, 3.0, False), (">", 2.0, 2.9, False), (">", 2.9, 3.1, None),
    ("<", 2.0, 2.9, True), ("<", 2.0, 3.0, None), ("<", 3.0, 4.0, False), ("<", 3.1, 4.0, False), ("<", 2.9, 3.1, None),
    (">", None, 4.0, None), ("<", 2.0, None, None),
])
def test_a_claim_is_decided_only_by_the_whole_interval(relation, low, high, decided):
    assert timing.decide({"value": 3.5, "low": low, "high": high}, relation, 3.0) is decided


def test_decide_knows_two_relations():
    with pytest.raises(ValueError) as raised:
        timing.decide({"value": 1.0, "low": 0.5, "high": 1.5}, ">=", 1.0)
    assert str(raised.value) == "relation must be '>' or '<', got '>='"


# ---- interleaved rounds --------------------------------------------------------------------------------------


@pytest.fixture()
def scripted_measure(monkeypatch):
    """``measure`` replaced: each call returns the next scripted median for that function; calls recorded."""
    script: dict = {}
    calls: list = []
    clock = Clock()

    def fake_measure(fn, *, repeats, min_run_time, block_time, device, number=None):
        name = fn()
        calls.append((name, repeats, min_run_time, block_time, device))
        numbers.append((name, number))
        median = script[name].pop(0)
        clock.now += 1.0
        return {"median": median, "iqr": median / 10, "min": median * 0.9, "max": median * 1.1, "blocks": 3,
                "runs": 30, "number": 10 if name == "a" else 7}

    numbers: list = []

    monkeypatch.setattr(timing, "measure", fake_measure)
    monkeypatch.setattr(timing, "time", SimpleNamespace(perf_counter=clock.perf_counter))
    monkeypatch.setattr(timing, "cpu_snapshot", lambda: None)  # contention unknown (tested with its own fakes)
    return SimpleNamespace(script=script, calls=calls, numbers=numbers)


def test_interleaved_alternates_and_summarises_the_rounds(scripted_measure):
    scripted_measure.script.update(a=[1.0, 3.0, 2.0], b=[10.0, 30.0, 20.0])
    result = timing.interleaved({"a": lambda: "a", "b": lambda: "b"}, rounds=3, min_run_time=0.6, block_time=0.01,
                                repeats=2, device="dev")
    assert [c[0] for c in scripted_measure.calls] == ["a", "b"] * 3
    assert all(c[1:] == (2, pytest.approx(0.2), 0.01, "dev") for c in scripted_measure.calls)
    # warmed up and sized in the first round only: later rounds reuse each function's own block size
    assert scripted_measure.numbers == [("a", None), ("b", None), ("a", 10), ("b", 7), ("a", 10), ("b", 7)]
    rounds = result["a"].pop("rounds")
    assert rounds == [1.0, 3.0, 2.0]
    assert result["a"].pop("contention") is None and result["a"].pop("busy_rounds_left_out") == 0
    assert result["a"] == pytest.approx({"median": 2.0, "iqr": 0.2, "min": 0.9, "max": 3.3, "blocks": 9, "runs": 90,
                                         "extra_rounds": 0})
    assert result["b"]["rounds"] == [10.0, 30.0, 20.0] and result["b"]["extra_rounds"] == 0


def test_interleaved_defaults(scripted_measure):
    scripted_measure.script.update(a=[1.0])
    timing.interleaved({"a": lambda: "a"}, rounds=1, min_run_time=0.5)
    assert scripted_measure.calls == [("a", 3, 0.5, 0.02, None)]


def test_a_noisy_ratio_gets_more_rounds_within_the_budget(scripted_measure):
    scripted_measure.script.update(base=[1.0] * 9, slow=[2.0, 4.0, 2.0, 4.0, 2.0, 4.0, 2.0, 4.0, 2.0])
    result = timing.interleaved({"base": lambda: "base", "slow": lambda: "slow"}, rounds=3, min_run_time=0.3,
                                baseline="base", budget_s=5.0, max_rounds=8)
    # each round takes 2 s on the scripted clock: two more rounds fit in 5 s
    assert result["base"]["extra_rounds"] == result["slow"]["extra_rounds"] == 2
    assert len(result["slow"]["rounds"]) == 5


def test_a_ratio_noisy_only_upside_down_gets_more_rounds_too(scripted_measure):
    # slow ÷ base is 1.2 (0.9–1.3), ±20 %; base ÷ slow, as a page printing a share of the baseline shows it, ±31 %
    scripted_measure.script.update(base=[1.0] * 8, slow=[0.7, 1.2, 1.3, 1.3, 0.9, 1.3, 1.2, 1.2])
    result = timing.interleaved({"base": lambda: "base", "slow": lambda: "slow"}, rounds=6, min_run_time=0.3,
                                baseline="base", budget_s=100.0, max_rounds=8)
    assert result["slow"]["extra_rounds"] == 1, "one more round settles it either way up"


def test_more_rounds_stop_at_max_rounds(scripted_measure):
    scripted_measure.script.update(base=[1.0] * 9, slow=[2.0, 4.0] * 5)
    result = timing.interleaved({"base": lambda: "base", "slow": lambda: "slow"}, rounds=2, min_run_time=0.3,
                                baseline="base", budget_s=100.0, max_rounds=4)
    assert result["base"]["extra_rounds"] == 2


def test_max_rounds_defaults_to_three_times_the_rounds(scripted_measure):
    scripted_measure.script.update(base=[1.0] * 9, slow=[2.0, 4.0] * 5)
    result = timing.interleaved({"base": lambda: "base", "slow": lambda: "slow"}, rounds=2, min_run_time=0.3,
                                baseline="base", budget_s=100.0)
    assert result["base"]["extra_rounds"] == 4


def test_no_budget_no_extra_rounds(scripted_measure):
    scripted_measure.script.update(base=[1.0] * 3, slow=[2.0, 4.0, 2.0])
    result = timing.interleaved({"base": lambda: "base", "slow": lambda: "slow"}, rounds=3, min_run_time=0.3,
                                baseline="base")
    assert result["slow"]["extra_rounds"] == 0


def test_a_steady_ratio_needs_no_extra_rounds(scripted_measure):
    scripted_measure.script.update(base=[1.0] * 3, slow=[2.0] * 3)
    result = timing.interleaved({"base": lambda: "base", "slow": lambda: "slow"}, rounds=3, min_run_time=0.3,
                                baseline="base", budget_s=100.0)
    assert result["slow"]["extra_rounds"] == 0


def test_interleaved_checks_its_arguments():
    with pytest.raises(ValueError) as raised:
        timing.interleaved({"a": lambda: None}, rounds=0, min_run_time=0.1)
    assert str(raised.value) == "rounds must be >= 1, got 0"
    with pytest.raises(ValueError) as raised:
        timing.interleaved({"a": lambda: None, "b": lambda: None}, rounds=1, min_run_time=0.1, baseline="c")
    assert str(raised.value) == "baseline 'c' is not one of the timed functions: a, b"


def test_the_bootstrap_is_seeded_the_same_interval_on_every_rebuild():
    """With few resamples the interval depends on the draws: they must be the same draws every time."""
    unpaired = timing.ratio({"median": 2.0, "samples": [1.9, 2.0, 2.1, 2.2, 2.6]},
                            {"median": 2.0, "samples": [1.8, 2.0, 2.1]}, resamples=5)
    assert unpaired == pytest.approx({"value": 1.0, "low": 1.0, "high": 1.2192857142857143, "paired": False, "n": 3, "contention": None})
    paired = timing.ratio({"rounds": [2.0, 3.0, 4.0, 5.0, 9.0], "median": 4.0},
                          {"rounds": [1.0] * 5, "median": 1.0}, resamples=5)
    assert paired == pytest.approx({"value": 4.0, "low": 4.0, "high": 8.6, "paired": True, "n": 5, "contention": None})


def test_an_unpaired_ratio_divides_the_medians():
    assert timing.ratio({"median": 6.0}, {"median": 2.0})["value"] == 3.0


@pytest.mark.parametrize("budget, extra", [(4.0, 2), (3.9, 1), (0.5, 1), (0.0, 0)])
def test_extra_rounds_fit_the_budget_exactly(scripted_measure, budget, extra):
    """Rounds take 2 s of the scripted clock; a round runs while the time spent plus one more fits the budget."""
    scripted_measure.script.update(base=[1.0] * 9, slow=[2.0, 4.0] * 5)
    result = timing.interleaved({"base": lambda: "base", "slow": lambda: "slow"}, rounds=2, min_run_time=0.3,
                                baseline="base", budget_s=budget, max_rounds=9)
    assert result["base"]["extra_rounds"] == extra
