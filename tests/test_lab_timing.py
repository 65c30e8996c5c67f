"""The timing helper's logic, on a scripted clock: how many calls, how many blocks, which statistics.

No test here depends on how fast this machine is: ``torch.utils.benchmark.Timer`` and ``time.perf_counter`` are
replaced by fakes that return the durations a test scripts (one smoke test uses the real Timer and asserts
only counts and orderings).
"""

from __future__ import annotations

import gc
import math
import statistics
import time
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
        def __init__(self, stmt, globals, num_threads, setup="pass", timer=None):  # noqa: A002 - the real Timer's names
            self.stmt, self.globals, self.num_threads, self.setup = stmt, globals, num_threads, setup
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
    monkeypatch.setattr(timing, "time", SimpleNamespace(perf_counter=clock.perf_counter, thread_time=clock.perf_counter,
                                                      get_clock_info=time.get_clock_info))
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
    assert set(timer.globals) == {"call", "gc"} and timer.setup == "gc.enable()"


def test_the_garbage_collector_is_on_while_the_real_timer_times():
    """timeit turns the collector off for the timed calls; a training loop runs with it on, and so does measure."""
    seen = []
    stats = measure(lambda: seen.append(gc.isenabled()), repeats=3, min_run_time=0.0, block_time=0.0)
    assert seen and all(seen), "a timed call ran with the garbage collector off"
    assert len(seen) == stats["runs"] + 1


def test_the_mean_is_kept_beside_the_median(fake):
    # blocks of 1, 1 and 7 ms a call: the median says 1 ms, a total over many calls needs the mean, 3 ms
    fake.per_call = [1e-3, 1e-3, 1e-3, 7e-3]
    stats = measure(lambda: None, repeats=3, min_run_time=0.0, block_time=0.001)
    assert stats["median"] == pytest.approx(1e-3) and stats["mean"] == pytest.approx(3e-3)


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


PAIRED_A = {"rounds": [2.0, 3.0, 4.0, 5.0], "median": 3.5}
PAIRED_B = {"rounds": [1.0, 1.0, 1.0, 1.0], "median": 1.0}


def test_a_paired_ratio_is_the_median_of_the_rounds_ratios_with_a_fixed_bootstrap():
    """The per-round ratios 2, 3, 4, 5: their median, and a percentile interval of resampled medians that lies
    within them, narrows at a lower confidence and comes out the same on every call (a rebuild)."""
    wide = timing.ratio(PAIRED_A, PAIRED_B)
    assert {k: v for k, v in wide.items() if k not in ("low", "high")} == \
        {"value": 3.5, "paired": True, "n": 4, "contention": None, "processes": 1, "drifted": False}
    assert 2.0 <= wide["low"] < 3.0 and 4.0 < wide["high"] <= 5.0
    narrow = timing.ratio(PAIRED_A, PAIRED_B, confidence=0.5, resamples=50)
    assert wide["low"] <= narrow["low"] <= 3.5 <= narrow["high"] <= wide["high"]
    assert (narrow["low"], narrow["high"]) != (wide["low"], wide["high"])
    spread = {"rounds": [1.0 + 0.37 * (i * 7 % 13) for i in range(15)], "median": 0.0}
    few, again, full = (timing._resampled_ratio(spread, {"rounds": [1.0] * 15}, confidence=0.95, resamples=n)
                        for n in (3, 3, 9999))
    assert (again["low"], again["high"]) == (few["low"], few["high"]), "the bootstrap is seeded: a rebuild agrees"
    assert full["low"] < few["low"] < few["high"] < full["high"], "three resampled medians span less than 9,999"


def test_a_bootstrap_that_cannot_give_a_finite_interval_says_why():
    """A resample of blocks timed at 0 s divides by 0 (as the ratio itself would): said, never an infinite or NaN
    bound that a claim would be decided on; and an interval needs at least two resamples."""
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")  # said by the lab, not warned about by NumPy on the way
        with pytest.raises(ValueError, match="came out .*: a round or block was timed at 0 s"):
            timing._resampled_ratio({"median": 2.0, "samples": [1.0, 2.0, 3.0]},
                                    {"median": 1.0, "samples": [0.0, 1.0, 0.0]}, confidence=0.95, resamples=50)
        with pytest.raises(ValueError, match="came out .*: a round or block was timed at 0 s"):
            timing.share([({"rounds": [1.0, 1.0, 1.0]}, {"rounds": [0.0, 2.0, 2.0]})], resamples=50)
    with pytest.raises(ValueError, match="at least 2 resamples, got 1"):
        timing._resampled_ratio(PAIRED_A, PAIRED_B, confidence=0.95, resamples=1)
    two = timing._resampled_ratio(PAIRED_A, PAIRED_B, confidence=0.95, resamples=2)
    assert 2.0 <= two["low"] <= two["high"] <= 5.0, "two resamples are enough"


def test_an_unpaired_ratio_resamples_each_side():
    a, b = [3.8, 4.0, 4.2, 4.4], [1.8, 2.0, 2.2]
    result = timing.ratio({"median": 4.0, "samples": a}, {"median": 2.0, "samples": b})
    assert {k: v for k, v in result.items() if k not in ("low", "high")} == \
        {"value": 2.0, "paired": False, "n": 3, "contention": None, "processes": 1, "drifted": False}
    # medians of resampled blocks, each side on its own: between the extreme ratios, around the value
    assert min(a) / max(b) <= result["low"] < 2.0 < result["high"] <= max(a) / min(b)
    # each side's blocks are resampled: a spread numerator over a steady denominator, and the other way round
    for top, bottom in (([1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0], [1.0] * 3), ([4.0] * 3, [1.0, 2.0, 3.0, 4.0, 5.0])):
        one_sided = timing.ratio({"median": statistics.median(top), "samples": top},
                                 {"median": statistics.median(bottom), "samples": bottom})
        assert one_sided["low"] < one_sided["value"] < one_sided["high"]


@pytest.mark.parametrize("a, b, expected", [
    ({"rounds": [2.0, 4.0], "median": 3.0}, {"rounds": [1.0, 1.0], "median": 1.0},
     {"value": 3.0, "low": None, "high": None, "paired": True, "n": 2, "contention": None, "processes": 1, "drifted": False}),
    ({"median": 2.0, "samples": [1.0, 2.0]}, {"median": 1.0, "samples": [1.0, 1.0, 1.0]},
     {"value": 2.0, "low": None, "high": None, "paired": False, "n": 2, "contention": None, "processes": 1, "drifted": False}),
    ({"median": 2.0}, {"median": 1.0}, {"value": 2.0, "low": None, "high": None, "paired": False, "n": 0, "contention": None, "processes": 1, "drifted": False}),
    ({"rounds": [2.0, 4.0, 6.0], "median": 4.0}, {"rounds": [1.0, 1.0], "median": 1.0, "samples": [1.0]},
     {"value": 4.0, "low": None, "high": None, "paired": False, "n": 0, "contention": None, "processes": 1, "drifted": False}),
])
def test_too_few_rounds_or_blocks_give_no_interval(a, b, expected):
    assert timing.ratio(a, b) == expected


def test_three_rounds_are_enough_for_an_interval():
    result = timing.ratio({"rounds": [2.0, 3.0, 4.0], "median": 3.0}, {"rounds": [1.0, 1.0, 1.0], "median": 1.0})
    assert result["low"] is not None and result["low"] <= 3.0 <= result["high"] and result["n"] == 3


def test_rounds_on_one_side_only_are_not_paired():
    result = timing.ratio({"rounds": [2.0, 3.0, 4.0], "median": 3.0, "samples": [3.0, 3.0, 3.0]},
                          {"median": 1.0, "samples": [1.0, 1.0, 1.0]})
    assert result == {"value": 3.0, "low": 3.0, "high": 3.0, "paired": False, "n": 3, "contention": None, "processes": 1, "drifted": False}


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
    """``measure`` replaced: each call returns the next scripted median for that function (the reference workload
    is ``"ref"``, 1.0 unless scripted); calls recorded."""
    script: dict = {}
    calls: list = []
    clock = Clock()

    def fake_reference(work, number=None, timer=None):
        references.append((work(), number, timer))
        return (script["ref"].pop(0) if script.get("ref") else 1.0), 5

    def fake_measure(fn, *, repeats, min_run_time, block_time, device, number=None, kind="cpu"):
        name = fn()
        calls.append((name, repeats, min_run_time, block_time, device))
        numbers.append((name, number))
        kinds.append(kind)
        median = script[name].pop(0)
        clock.now += 1.0
        timed = {"median": median, "mean": median * 1.5, "iqr": median / 10, "min": median * 0.9,
                 "max": median * 1.1, "blocks": 3, "runs": 30, "number": 10 if name == "a" else 7}
        return {key: value for key, value in timed.items() if not (key == "mean" and name.startswith("no_mean"))}

    numbers: list = []
    references: list = []
    kinds: list = []
    snapshots: list = []

    def thread_time():  # the calling thread's CPU time, as the clock of CPU work (``timing.clock``)
        return clock.now

    monkeypatch.setattr(timing, "measure", fake_measure)
    monkeypatch.setattr(timing, "time_reference", fake_reference)
    monkeypatch.setattr(timing, "reference_workload", lambda: lambda: "the reference workload")
    monkeypatch.setattr(timing, "time", SimpleNamespace(perf_counter=clock.perf_counter, thread_time=thread_time,
                                                      get_clock_info=time.get_clock_info))
    # contention unknown (tested with its own fakes); the clock it was asked for, recorded
    monkeypatch.setattr(timing, "cpu_snapshot", lambda timer=None: snapshots.append(timer))
    return SimpleNamespace(script=script, calls=calls, numbers=numbers, references=references, kinds=kinds,
                           snapshots=snapshots, thread_time=thread_time, wall=clock.perf_counter)


@pytest.mark.parametrize(("device", "kind", "clock"), [
    (None, "cpu", "thread_time"), (SimpleNamespace(type="cuda"), "cpu", "wall"), (None, "wall", "wall")])
def test_interleaved_times_its_reference_and_the_machine_on_the_clock_of_its_work(scripted_measure, device, kind,
                                                                                  clock):
    """The reference workload is timed at both ends of each round, reusing the block size its first timing chose,
    on the clock the functions are timed on; the machine's accounting is read on that clock too."""
    if not time.get_clock_info("thread_time").resolution <= 1e-6 and clock == "thread_time":
        pytest.skip("this machine's thread clock is coarse: timing.clock takes the wall clock for CPU work")
    scripted_measure.script.update(a=[1.0, 2.0], no_mean=[4.0, 6.0])
    result = timing.interleaved({"a": lambda: "a", "no_mean": lambda: "no_mean"}, rounds=2, min_run_time=0.1,
                                device=device, kind=kind)
    timer = scripted_measure.thread_time if clock == "thread_time" else scripted_measure.wall
    assert scripted_measure.references == [("the reference workload", None, timer)] + [
        ("the reference workload", 5, timer)] * 3
    assert scripted_measure.kinds == [kind] * 4
    # the run's start, each round's start and end, and (no round could be judged alone) the run's end
    assert scripted_measure.snapshots == [timer] * 6
    assert result["no_mean"]["mean"] == 5.0, "a timing without a mean: the mean of its rounds' medians"
    assert result["a"]["mean"] == 2.25


def test_interleaved_alternates_and_summarises_the_rounds(scripted_measure):
    scripted_measure.script.update(a=[1.0, 3.0, 2.0], b=[10.0, 30.0, 20.0])
    result = timing.interleaved({"a": lambda: "a", "b": lambda: "b"}, rounds=3, min_run_time=0.6, block_time=0.01,
                                repeats=2, device="dev")
    # the order rotates each round: no function always runs right after the same other one
    assert [c[0] for c in scripted_measure.calls] == ["a", "b", "b", "a", "a", "b"]
    assert all(c[1:] == (2, pytest.approx(0.2), 0.01, "dev") for c in scripted_measure.calls)
    # warmed up and sized in the first round only: later rounds reuse each function's own block size
    assert scripted_measure.numbers == [("a", None), ("b", None), ("b", 7), ("a", 10), ("a", 10), ("b", 7)]
    rounds = result["a"].pop("rounds")
    assert rounds == [1.0, 3.0, 2.0]
    assert result["a"].pop("contention") is None and result["a"].pop("busy_rounds_left_out") == 0
    assert result["a"].pop("reference") == [[1.0, 1.0]] * 3
    assert result["a"] == pytest.approx({"median": 2.0, "mean": 3.0, "iqr": 0.2, "min": 0.9, "max": 3.3, "blocks": 9,
                                         "runs": 90, "drift_rounds_left_out": 0, "drifted": False})
    assert result["b"]["rounds"] == [10.0, 30.0, 20.0]


def test_interleaved_defaults(scripted_measure):
    scripted_measure.script.update(a=[1.0])
    timing.interleaved({"a": lambda: "a"}, rounds=1, min_run_time=0.5)
    assert scripted_measure.calls == [("a", 3, 0.5, 0.02, None)]


def test_the_number_of_rounds_never_depends_on_what_was_measured(scripted_measure):
    """No optional stopping: a ratio that stays noisy gets no more rounds than a steady one."""
    scripted_measure.script.update(base=[1.0] * 4, slow=[2.0, 4.0, 2.0, 4.0])
    wild = timing.interleaved({"base": lambda: "base", "slow": lambda: "slow"}, rounds=4, min_run_time=0.3)
    assert len(wild["slow"]["rounds"]) == 4
    assert timing.is_noisy(timing.ratio(wild["slow"], wild["base"]))


def test_interleaved_checks_its_arguments():
    with pytest.raises(ValueError) as raised:
        timing.interleaved({"a": lambda: None}, rounds=0, min_run_time=0.1)
    assert str(raised.value) == "rounds must be >= 1, got 0"


# ---- drift: the reference workload ---------------------------------------------------------------------------


def test_a_round_whose_reference_drifted_is_left_out(scripted_measure):
    # six rounds; in round 3 the machine ran 1.8x slower, the reference says so at both ends of the round
    scripted_measure.script.update(ref=[1.0, 1.0, 1.0, 1.0, 1.8, 1.8, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0],
                                   a=[1.0, 1.0, 1.8, 1.0, 1.0, 1.0], b=[2.0, 2.0, 9.0, 2.0, 2.0, 2.0])
    result = timing.interleaved({"a": lambda: "a", "b": lambda: "b"}, rounds=6, min_run_time=0.1)
    assert result["a"]["rounds"] == [1.0, 1.0, 1.0, 1.0, 1.0] and result["b"]["rounds"] == [2.0] * 5
    assert result["a"]["drift_rounds_left_out"] == 1 and not result["a"]["drifted"]
    assert timing.ratio(result["b"], result["a"])["value"] == 2.0


def test_a_speed_shift_inside_a_round_is_caught_by_its_two_references(scripted_measure):
    # the reference at the round's start reads 1.0, at its end 1.8: the round drifted, though its start looked fine
    scripted_measure.script.update(ref=[1.0, 1.0, 1.0, 1.8, 1.0, 1.0, 1.0, 1.0], a=[1.0] * 4, b=[2.0, 3.6, 2.0, 2.0])
    result = timing.interleaved({"a": lambda: "a", "b": lambda: "b"}, rounds=4, min_run_time=0.1)
    assert result["b"]["rounds"] == [2.0, 2.0, 2.0] and result["b"]["drift_rounds_left_out"] == 1


def test_a_machine_drifting_in_most_rounds_is_flagged_and_its_interval_widened(scripted_measure):
    scripted_measure.script.update(ref=[1.0, 1.8, 1.0, 1.8, 1.0, 1.8, 1.0, 1.0], a=[1.0] * 4, b=[5.0] * 4)
    result = timing.interleaved({"a": lambda: "a", "b": lambda: "b"}, rounds=4, min_run_time=0.1)
    assert result["b"]["drifted"] and len(result["b"]["rounds"]) == 4 and result["b"]["drift_rounds_left_out"] == 0
    interval = timing.ratio(result["b"], result["a"])
    assert interval["drifted"] and timing.is_noisy(interval)
    # widened by 1 + 2 × DRIFT_LIMIT: 5× is still past 2× (decided) and no longer past 4.5× (undecided)
    assert timing.decide(interval, ">", 2) is True and timing.decide(interval, ">", 4.5) is None


@pytest.mark.parametrize("pairs, moved", [
    ([(1.0, 1.0), (1.0, 1.0), (1.0, 1.0)], [False, False, False]),
    ([(1.0, 1.0), (1.14, 1.0), (1.0, 1.0)], [False, False, False]),   # within 15 %
    ([(1.0, 1.0), (1.16, 1.0), (1.0, 1.0)], [False, True, False]),    # one end 16 % off: its round
    ([(1.0, 1.0), (0.85, 0.85), (1.0, 1.0)], [False, True, False]),   # faster counts too
    ([(1.0, 1.0), (1.0, 1.0), (0.0, 1.0)], [False, False, True]),     # a reference that took no time: unreadable
    ([(1.0, 1.0), (1.0, 1.0), (1.0, 0.0)], [False, False, True]),     # either end
    ([], []),
])
def test_drift_is_a_reference_off_the_typical_one_or_its_partner(pairs, moved):
    assert timing.drifted(pairs) == moved


@pytest.mark.parametrize("pairs, moved", [
    ([(1.0, 1.0), (1.0, 1.0), (1.5, 1.0), (1.0, 1.0)], [False, False, False, False]),  # 50 % off: at the bound
    ([(1.0, 1.0), (1.0, 1.0), (1.51, 1.0), (1.0, 1.0)], [False, False, True, False]),
    ([(1.0, 1.0), (1.0, 1.0), (1.4, 0.7), (1.0, 1.0)], [False, False, True, False]),  # each within, not each other
])
def test_drift_is_past_the_limit_given_not_at_it(pairs, moved):
    assert timing.drifted(pairs, 0.5) == moved


def test_the_reference_is_timed_in_blocks_sized_once_and_reports_the_fastest(monkeypatch):
    clock = Clock()
    calls, slow = [], {48}  # one call interrupted (the 48th): its block is not the one reported

    def work():
        calls.append(gc.isenabled())
        clock.now += 1e-3 if len(calls) in slow else 1e-4

    monkeypatch.setattr(timing, "time", SimpleNamespace(perf_counter=clock.perf_counter, thread_time=clock.perf_counter,
                                                      get_clock_info=time.get_clock_info))
    seconds, number = timing.time_reference(work)
    # a warm-up call, three calls to size the block (2 ms of 0.1 ms calls: 20), five blocks of 20
    assert number == 20 and len(calls) == 1 + 3 + 5 * 20
    assert seconds == pytest.approx(1e-4), "the fastest block, not the interrupted one"
    assert not any(calls), "the garbage collector is held off while the reference runs"
    assert gc.isenabled(), "and on again afterwards"
    assert timing.time_reference(work, 7)[1] == 7 and len(calls) == 104 + 35
    assert timing.reference_workload()() is None


# ---- fresh processes: pooled results, between-process intervals -----------------------------------------------


def _process(rounds, **extra):
    return {"median": sorted(rounds)[len(rounds) // 2], "mean": sum(rounds) / len(rounds), "rounds": list(rounds),
            "contention": 0.0, **extra}


def test_pooled_keeps_each_process_timing_and_joins_the_rest():
    one = {"rows": [{"label": "a", **_process([1.0, 1.1, 0.9]), "n": 4}], "note": "same", "seconds": 1.0}
    two = {"rows": [{"label": "a", **_process([1.2, 1.3, 1.1]), "n": 4}], "note": "same", "seconds": 3.0}
    joined = timing.pooled([one, two])
    row = joined["rows"][0]
    assert row["label"] == "a" and row["n"] == 4 and joined["note"] == "same" and joined["seconds"] == 2.0
    assert [p["rounds"] for p in row["processes"]] == [[1.0, 1.1, 0.9], [1.2, 1.3, 1.1]]
    assert row["median"] == pytest.approx(1.1) and row["rounds"] == [1.0, 1.1, 0.9, 1.2, 1.3, 1.1]


def test_pooled_keeps_a_list_whose_items_differ_whole_from_the_first_process():
    # a profile sorted by time: the two processes list functions in another order, numbers must not mix
    one = {"top": [{"function": "f", "own": 1.0}, {"function": "g", "own": 0.5}]}
    two = {"top": [{"function": "g", "own": 0.9}, {"function": "f", "own": 0.8}]}
    assert timing.pooled([one, two]) == one


@pytest.mark.parametrize("one, two", [({"a": 1}, {"b": 1}), ({"a": True}, {"a": False}), ({"a": [1]}, {"a": 1})])
def test_pooled_refuses_results_of_different_shape(one, two):
    with pytest.raises(timing.PoolError, match="process"):
        timing.pooled([one, two])


def _pooled_share(parts, wholes):
    """The share of a part in its whole, each timed in the same processes (``parts[p]`` and ``wholes[p]``)."""
    return timing.share([(timing.pooled([{"x": p} for p in parts])["x"], timing.pooled([{"x": w} for w in wholes])["x"])])


def _pooled_pair(ratios):
    """Two timings pooled over processes whose base is 1.0 and whose other side is ``ratios[p]`` in process p."""
    base = timing.pooled([{"x": _process([1.0, 1.0, 1.0])} for _ in ratios])["x"]
    other = timing.pooled([{"x": _process([r, r, r])} for r in ratios])["x"]
    return other, base


def test_between_process_spread_widens_the_interval():
    # every process alone is perfectly steady (its rounds agree); the processes disagree with each other
    other, base = _pooled_pair([1.8, 2.0, 2.2, 1.9, 2.1])
    within = [timing.ratio(p_other, p_base) for p_other, p_base in zip(other["processes"], base["processes"])]
    assert all(w["low"] == w["high"] for w in within), "one process alone sees no spread at all"
    between = timing.ratio(other, base)
    assert between["processes"] == 5 and between["low"] < 1.8 and between["high"] > 2.2 * 0.95
    assert between["value"] == pytest.approx(math.exp(sum(map(math.log, [1.8, 2.0, 2.2, 1.9, 2.1])) / 5))


def test_the_between_process_interval_is_a_prediction_interval():
    logs = [math.log(r) for r in (1.8, 2.0, 2.2, 1.9, 2.1)]
    mean = sum(logs) / 5
    sd = math.sqrt(sum((v - mean) ** 2 for v in logs) / 4)
    half = 2.7764451 * sd * math.sqrt(2 / 5)  # t(0.975, 4 degrees of freedom), √(1/k + 1/k)
    interval = timing.ratio(*_pooled_pair([1.8, 2.0, 2.2, 1.9, 2.1]))
    assert interval["low"] == pytest.approx(math.exp(mean - half)) and interval["high"] == pytest.approx(math.exp(mean + half))
    ninety = timing.ratio(*_pooled_pair([1.8, 2.0, 2.2, 1.9, 2.1]), confidence=0.9)  # t(0.95, 4): 2.1318468
    assert ninety["low"] == pytest.approx(math.exp(mean - half * 2.1318468 / 2.7764451))


def test_a_rebuild_lands_inside_the_interval_95_times_in_100():
    """Simulated builds of k processes whose ratios vary lognormally: the interval of one build covers the value of
    the next about 95% of the time (a confidence interval for the mean would cover about 83%)."""
    import random

    rng = random.Random(1)
    k, trials, inside = 5, 4000, 0
    for _ in range(trials):
        first = timing.ratio(*_pooled_pair([math.exp(rng.gauss(0.7, 0.1)) for _ in range(k)]))
        second = timing.ratio(*_pooled_pair([math.exp(rng.gauss(0.7, 0.1)) for _ in range(k)]))
        inside += first["low"] <= second["value"] <= first["high"]
    assert 0.935 <= inside / trials <= 0.965


def _scattered_pair(centres, spread):
    """Processes whose ratio is ``centres[p]`` at the median of rounds scattered by ``spread`` around it."""
    offsets = [-2 * spread, -spread, 0.0, spread, 2 * spread]
    base = timing.pooled([{"x": _process([1.0] * 5)} for _ in centres])["x"]
    other = timing.pooled([{"x": _process([math.exp(math.log(c) + o) for o in offsets])} for c in centres])["x"]
    return other, base


def test_processes_agreeing_closer_than_their_rounds_allow_get_the_rounds_spread():
    # five processes with the same ratio by chance, each from rounds scattered by 10% on the log scale
    interval = timing.ratio(*_scattered_pair([2.0] * 5, 0.1))
    sigma = 1.4826 * 0.1  # the rounds' median absolute deviation is one step of 0.1
    half = 2.7764451 * sigma * math.sqrt(math.pi / (2 * 5)) * math.sqrt(2 / 5)
    assert interval["value"] == pytest.approx(2.0)
    assert interval["low"] == pytest.approx(2.0 * math.exp(-half)) and interval["high"] == pytest.approx(2.0 * math.exp(half))
    assert timing.round_scatter([0.0, 0.0, 0.0]) == 0.0 and timing.round_scatter([1.0, 2.0]) == 0.0


def test_a_between_process_ratio_says_what_it_paired_and_each_process_ratio():
    interval = timing.ratio(*_pooled_pair([1.8, 2.0, 2.2]))
    assert {"value", "low", "high", "paired", "n", "processes", "per_process", "contention", "drifted",
            "drifted_processes_left_out"} == set(interval)
    assert (interval["paired"], interval["n"], interval["processes"]) == (True, 3, 3)
    assert interval["per_process"] == pytest.approx([1.8, 2.0, 2.2])
    blocks = timing.pooled([{"x": {"median": r, "samples": [r] * 3, "contention": 0.0}} for r in (1.8, 2.0, 2.2)])["x"]
    unpaired = timing.ratio(blocks, _pooled_pair([1.0, 1.0, 1.0])[1])  # blocks against rounds: nothing to pair
    assert unpaired["paired"] is False and unpaired["per_process"] == pytest.approx([1.8, 2.0, 2.2])


def test_rounds_whose_times_vary_but_whose_ratio_does_not_add_no_spread():
    """In every process each round of the numerator takes twice its round of the denominator, whose rounds vary:
    the ratio is 2 in every round and every process, so the interval is 2 – 2 (the rounds' scatter is the scatter
    of their *ratios*); rounds of different lengths are not paired at all."""
    base = [1.0, 1.2, 0.8, 1.1, 0.9]
    denominator = timing.pooled([{"x": _process(base)} for _ in range(3)])["x"]
    numerator = timing.pooled([{"x": _process([2 * t for t in base])} for _ in range(3)])["x"]
    steady = timing.ratio(numerator, denominator)
    assert (steady["low"], steady["value"], steady["high"]) == pytest.approx((2.0, 2.0, 2.0))
    longer = timing.pooled([{"x": _process([9.0, 0.1] + [2 * t for t in base])} for _ in range(3)])["x"]
    unpaired = timing.ratio(longer, denominator)
    assert unpaired["low"] == pytest.approx(unpaired["high"]), "seven rounds against five: only the processes' spread"


def test_a_between_process_spread_larger_than_the_rounds_allow_is_kept():
    centres = [1.8, 2.0, 2.2, 1.9, 2.1]
    scattered = timing.ratio(*_scattered_pair(centres, 0.001))
    steady = timing.ratio(*_pooled_pair(centres))
    assert (scattered["low"], scattered["high"]) == pytest.approx((steady["low"], steady["high"]))


def test_a_share_from_agreeing_processes_gets_its_rounds_spread():
    wholes = [_process([10.0] * 5) for _ in range(3)]
    parts = [_process([4.0, 4.5, 5.0, 5.5, 6.0]) for _ in range(3)]
    share = _pooled_share(parts, wholes)
    assert share["value"] == pytest.approx(0.5)
    # on the logit scale: the rounds' shares 0.40 … 0.60 are logits -0.405 … 0.405, median absolute deviation 0.2007
    sigma = 1.4826 * math.log(0.55 / 0.45)
    half = 4.3026527 * sigma * math.sqrt(math.pi / 10) * math.sqrt(2 / 3)
    assert (share["low"], share["high"]) == pytest.approx((1 / (1 + math.exp(half)), 1 / (1 + math.exp(-half))))


def test_a_small_share_from_scattered_processes_stays_above_0():
    wholes = [_process([10.0] * 5) for _ in range(3)]
    parts = [_process([v] * 5) for v in (0.1, 0.4, 1.6)]  # 1%, 4% and 16% of the epoch
    share = _pooled_share(parts, wholes)
    linear_half = 4.3026527 * statistics.stdev([0.01, 0.04, 0.16]) * math.sqrt(2 / 3)
    assert share["value"] == pytest.approx(0.07) and share["value"] - linear_half < 0, "a linear interval would reach below 0"
    assert 0 < share["low"] < 0.07 < share["high"] < 1


def test_a_remainder_that_comes_out_negative_keeps_a_linear_interval():
    wholes = [_process([10.0] * 5) for _ in range(3)]
    parts = [_process([v] * 5) for v in (9.0, 10.5, 11.0)]  # a remainder: 90%, 105%, 110%
    share = _pooled_share(parts, wholes)
    half = 4.3026527 * statistics.stdev([0.9, 1.05, 1.1]) * math.sqrt(2 / 3)
    assert (share["low"], share["high"]) == pytest.approx((share["value"] - half, share["value"] + half))


def test_one_process_says_its_interval_covers_one_process():
    interval = timing.ratio(_process([2.0, 2.1, 1.9]), _process([1.0, 1.0, 1.0]))
    assert interval["processes"] == 1


@pytest.mark.parametrize("df, confidence, quantile", [(1, 0.95, 12.706), (4, 0.95, 2.776), (30, 0.95, 2.042),
                                                      (200, 0.95, 1.972), (4, 0.90, 2.132), (4, 0.99, 4.604)])
def test_student_t_quantiles(df, confidence, quantile):
    assert timing.t_quantile(df, confidence) == pytest.approx(quantile, abs=5e-4)


def test_student_t_needs_a_degree_of_freedom():
    with pytest.raises(ValueError, match="degrees of freedom must be >= 1, got 0"):
        timing.t_quantile(0)
    with pytest.raises(ValueError, match="confidence must be between 0 and 1, got 1.0"):
        timing.t_quantile(4, 1.0)
    with pytest.raises(ValueError, match="confidence must be between 0 and 1, got 0.0"):
        timing.t_quantile(4, 0.0)


# ---- shares: parts of a whole timed inside it ---------------------------------------------------------------


def test_shares_timed_inside_the_whole_add_up_to_it():
    whole = _process([10.0, 11.0, 12.0])
    parts = {"a": _process([6.0, 7.0, 7.0]), "b": _process([3.0, 3.0, 4.0])}
    rest = _process([w - sum(p["rounds"][i] for p in parts.values()) for i, w in enumerate(whole["rounds"])])
    shares = [timing.share([(row, whole)]) for row in (*parts.values(), rest)]
    assert sum(s["value"] for s in shares) == pytest.approx(1.0)


def test_a_share_within_one_process_resamples_its_rounds_parts_and_wholes_together():
    """Rounds 1 of 3, 2 of 4, 1.5 of 3.5: the share is 4.5 / 10.5, and its interval (rounds resampled, each part
    with its whole) lies between the shares of the rounds alone, 1/3 and 1/2, the same on every call."""
    pair = ({"rounds": [1.0, 2.0, 1.5]}, {"rounds": [3.0, 4.0, 3.5]})
    share = timing.share([pair])
    assert share["value"] == pytest.approx(4.5 / 10.5) and share["processes"] == 1 and share["n"] == 3
    assert 1 / 3 <= share["low"] < share["value"] < share["high"] <= 1 / 2
    assert timing.share([pair]) == share
    twice = timing.share([pair, pair])  # two parts of one whole: twice the share, resampled in the same rounds
    assert (twice["low"], twice["value"], twice["high"]) == pytest.approx((2 * share["low"], 2 * share["value"],
                                                                            2 * share["high"]))
    # two stages of different wholes: each part over its own whole, round by round (a part over the other's whole
    # would read 1.0 / 30 … or 10 / 4 …)
    other = ({"rounds": [10.0, 10.0, 10.0]}, {"rounds": [30.0, 40.0, 35.0]})
    both = timing.share([pair, other])
    assert both["value"] == pytest.approx(4.5 / 10.5 + 30 / 105)
    assert 1 / 3 + 10 / 40 <= both["low"] < both["value"] < both["high"] <= 1 / 2 + 10 / 30


def test_shares_across_processes_add_up_and_are_never_clipped():
    wholes = [_process([10.0] * 3), _process([10.0] * 3), _process([10.0] * 3)]
    parts = [_process([9.0] * 3), _process([11.0] * 3), _process([9.5] * 3)]  # one process: a part above its whole
    whole = timing.pooled([{"x": w} for w in wholes])["x"]
    part = timing.pooled([{"x": p} for p in parts])["x"]
    share = timing.share([(part, whole)])
    assert share["value"] == pytest.approx(0.9833333) and share["high"] > 1.0, "an interval past 100% is shown"
    rest = timing.pooled([{"x": _process([w["rounds"][0] - p["rounds"][0]] * 3)} for w, p in zip(wholes, parts)])["x"]
    assert share["value"] + timing.share([(rest, whole)])["value"] == pytest.approx(1.0)


def test_a_share_of_two_rounds_has_no_interval_and_carries_its_flags():
    part, whole = {"rounds": [1.0, 2.0], "contention": 0.01}, {"rounds": [4.0, 4.0], "drifted": True}
    assert timing.share([(part, whole)]) == {"value": 3.0 / 8.0, "low": None, "high": None, "n": 2, "processes": 1,
                                             "contention": 0.01, "drifted": True}


def test_a_share_across_processes_says_how_many_it_used_and_left_out():
    wholes = [_process([10.0] * 3, drifted=d) for d in (False, False, False, True)]
    parts = [_process([v] * 3, drifted=d) for v, d in zip((5.0, 5.2, 4.8, 9.0), (False, False, False, True))]
    share = _pooled_share(parts, wholes)
    assert set(share) == {"value", "low", "high", "n", "processes", "per_process", "contention", "drifted",
                          "drifted_processes_left_out"}
    assert (share["n"], share["processes"], share["drifted_processes_left_out"], share["drifted"]) == (3, 3, 1, False)
    assert share["per_process"] == pytest.approx([0.5, 0.52, 0.48])
    two = [_process([10.0] * 3), _process([10.0] * 3)]
    pair = timing.share([(timing.pooled([{"x": _process([v] * 3)} for v in (4.0, 6.0)])["x"],
                          timing.pooled([{"x": w} for w in two])["x"])])
    assert pair["processes"] == 2 and "per_process" in pair, "two processes are an interval between processes"


def test_a_busy_share_across_processes_is_widened_on_its_odds_and_stays_below_1():
    wholes = [_process([10.0] * 3) for _ in range(3)]
    parts = [_process([v] * 3, contention=0.6) for v in (9.0, 9.3, 9.6)]
    share = _pooled_share(parts, wholes)
    assert share["high"] < 1 and share["high"] > share["high_quiet"], "widened on the logit scale, not past 100%"


def test_a_share_pooled_from_one_process_is_a_share_within_it():
    part, whole = ({"rounds": r, "processes": [{"rounds": r}]} for r in ([1.0, 2.0, 1.5], [3.0, 4.0, 3.5]))
    share = timing.share([(part, whole)])
    assert share["processes"] == 1 and share["value"] == pytest.approx(4.5 / 10.5) and share["low"] < share["high"]


def test_a_share_with_too_few_steady_processes_keeps_them_all_and_says_it_drifted():
    wholes = [_process([10.0] * 3, drifted=d) for d in (False, True, True)]
    parts = [_process([v] * 3, drifted=d) for v, d in zip((5.0, 6.0, 4.0), (False, True, True))]
    share = _pooled_share(parts, wholes)
    assert (share["processes"], share["drifted"], share["drifted_processes_left_out"]) == (3, True, 0)
    assert share["value"] == pytest.approx(0.5)


def test_a_share_across_processes_whose_part_and_whole_ran_different_rounds_uses_the_processes_alone():
    wholes = [_process([10.0] * 4) for _ in range(3)]
    parts = [_process([v] * 3) for v in (4.0, 5.0, 6.0)]  # three rounds of the part, four of the whole
    share = _pooled_share(parts, wholes)
    assert share["value"] == pytest.approx(15 / 40) and 0 < share["low"] < 15 / 40 < share["high"] < 1


@pytest.mark.parametrize("value", [0.0, 10.0])
def test_a_share_with_a_round_at_0_or_the_whole_keeps_a_linear_interval(value):
    wholes = [_process([10.0] * 3) for _ in range(3)]
    parts = [_process([value, 5.0, 5.0]), _process([5.0] * 3), _process([5.0] * 3)]  # one round at 0% or 100%
    share = _pooled_share(parts, wholes)
    half = 4.3026527 * timing._process_spread(share["per_process"], [[value / 10, 0.5, 0.5], [0.5] * 3, [0.5] * 3])
    assert (share["low"], share["high"]) == pytest.approx((share["value"] - half * math.sqrt(2 / 3),
                                                           share["value"] + half * math.sqrt(2 / 3)))


def test_a_share_needs_a_pair_and_says_so():
    with pytest.raises(ValueError, match=r"^a share needs at least one \(part, whole\) pair$"):
        timing.share([])


def test_a_share_needs_its_parts_timed_in_the_wholes_rounds():
    with pytest.raises(ValueError, match="^a share's parts and wholes must be timed in the same rounds$"):
        timing.share([(_process([1.0, 1.0]), _process([2.0, 2.0, 2.0]))])
    for parts in ([({"rounds": [1.0]}, {"rounds": [2.0]}), ({"rounds": []}, {"rounds": []})],
                  [({"rounds": []}, {"rounds": []})]):
        with pytest.raises(ValueError, match="same rounds"):
            timing.share(parts)


def _pooled_with_drift(ratios, drifted):
    base = timing.pooled([{"x": _process([1.0] * 3, drifted=d)} for d in drifted])["x"]
    other = timing.pooled([{"x": _process([r] * 3, drifted=d)} for r, d in zip(ratios, drifted)])["x"]
    return other, base


def test_a_process_whose_machine_drifted_is_left_out_while_three_steady_ones_remain():
    other, base = _pooled_with_drift([2.0, 2.1, 1.9, 2.0, 3.6], [False, False, False, False, True])
    interval = timing.ratio(other, base)
    assert interval["processes"] == 4 and interval["drifted_processes_left_out"] == 1 and not interval["drifted"]
    assert interval["high"] < 3.0, "the drifted process's 3.6 is not in the interval"
    assert not other["drifted"], "four steady processes of five: the pooled timing is not drifted"


def test_too_few_steady_processes_mark_the_ratio_drifted():
    other, base = _pooled_with_drift([2.0, 2.1, 1.9, 2.0, 3.6], [False, False, True, True, True])
    interval = timing.ratio(other, base)
    assert interval["processes"] == 5 and interval["drifted"] and other["drifted"]
    # widened for the drift (×1.3 each side) and decided on that: past 1×, not clear of 2×
    assert interval["low"] == pytest.approx(interval["low_quiet"] / (1 + 2 * timing.DRIFT_LIMIT))
    assert timing.is_noisy(interval) and timing.decide(interval, ">", 1.0) is True
    assert timing.decide(interval, ">", 2.0) is None


def test_a_share_leaves_out_a_drifted_process_too():
    wholes = [_process([10.0] * 3, drifted=d) for d in (False, False, False, True)]
    parts = [_process([v] * 3, drifted=d) for v, d in zip((5.0, 5.2, 4.8, 9.0), (False, False, False, True))]
    share = _pooled_share(parts, wholes)
    assert share["processes"] == 3 and share["value"] == pytest.approx(0.5) and not share["drifted"]


# ---- the clock: a thread's CPU time for work on one thread, the wall clock for work elsewhere --------------------


def test_one_thread_is_timed_by_its_cpu_clock_which_stops_while_it_waits():
    """A thread's CPU clock does not run while the thread sleeps, nor while another program holds its core: a
    10 ms sleep costs next to nothing on it and at least 10 ms on the wall clock."""
    if timing.clock() is time.perf_counter:
        pytest.skip("this platform's thread clock is coarser than 1 µs: the wall clock times everything here")
    cpu = measure(lambda: time.sleep(0.01), repeats=3, min_run_time=0.0, number=1)
    wall = measure(lambda: time.sleep(0.01), repeats=3, min_run_time=0.0, number=1, kind="wall")
    assert cpu["median"] < 0.002 <= 0.01 <= wall["median"], (cpu, wall)
    assert cpu["contention"] is None, "other programs take nothing from a thread's CPU time"


def test_work_elsewhere_is_timed_by_the_wall_clock():
    assert timing.clock(kind="wall") is time.perf_counter
    assert timing.clock(torch.device("cuda")) is time.perf_counter, "a GPU's work is not this thread's"
    with pytest.raises(ValueError, match="clock must be 'cpu' or 'wall'"):
        timing.clock(kind="gpu")


def test_values_a_figure_draws_alone_keep_their_significant_figures_only():
    drawn = timing.drawn_only([1.234567891, 0.0001234567891, 0.0, 12345678.9])
    assert drawn == [timing.significant(1.234567891), timing.significant(0.0001234567891), 0.0,
                     timing.significant(12345678.9)]
    assert drawn[0] != 1.234567891 and len(repr(drawn[1])) < len(repr(0.0001234567891))


def test_two_processes_results_join_when_they_differ_in_numbers_only():
    row = {"label": "DataLoader", "median": 1.0, "mean": 1.0, "rounds": [1.0]}
    same = timing._same_but_numbers
    assert same({"rows": [row, 3]}, {"rows": [{**row, "median": 2.0, "rounds": [2.0, 2.0]}, 4.5]})
    assert not same({"rows": [row]}, {"rows": [{**row, "label": "loop"}]}), "another row's label"
    assert not same({"rows": [row]}, {"rows": [row, row]}) and not same({"rows": [row]}, {"rows": row})
    assert not same({"a": 1, "b": 2}, {"b": 2, "a": 1}), "keys in another order"
    assert not same({"a": 1}, [1]) and not same([1], {"a": 1})
    assert not same(1, True) and not same(True, 1) and same(True, True) and not same(True, False)
    assert not same(1, "1") and same(1, 2.5) and same("x", "x") and not same("x", "y")
    assert not same(row, {"label": "DataLoader", "other": 1}), "a timing beside what is not one"
    assert not same({"label": "x", "other": 1}, row)


@pytest.mark.parametrize(("resolution", "device", "chosen"), [
    (1e-9, None, "thread_time"), (1e-9, torch.device("cpu"), "thread_time"), (1e-6, None, "thread_time"),
    (1.1e-6, None, "perf_counter"), (0.01, None, "perf_counter"), (1e-9, torch.device("cuda"), "perf_counter")])
def test_cpu_work_is_timed_by_the_threads_clock_where_it_is_fine_grained(monkeypatch, resolution, device, chosen):
    info = SimpleNamespace(resolution=resolution)
    monkeypatch.setattr(timing, "time", SimpleNamespace(perf_counter=time.perf_counter, thread_time=time.thread_time,
                                                      get_clock_info=lambda name: info))
    assert timing.clock(device) is getattr(time, chosen)


def test_measure_reads_the_machines_accounting_on_the_clock_of_its_device(monkeypatch):
    """Work on another device (here an MPS stand-in, which needs no synchronising) is timed on the wall clock, and
    the machine's accounting is read around it on that clock, which other programs can lengthen."""
    read = []
    monkeypatch.setattr(timing, "cpu_snapshot", lambda timer=None: read.append(timer))
    timing.measure(lambda: None, repeats=1, min_run_time=0.0, number=1, device=SimpleNamespace(type="mps"))
    assert read == [time.perf_counter, time.perf_counter]


@pytest.mark.parametrize(("references", "moved"), [
    ([(1.0, 1.0), (1.0, 1.0), (1.0, 0.0)], [False, False, True]),  # a reference that took no time: not a speed
    ([(0.0, 0.0), (0.0, 0.0), (1.0, 1.0)], [True, True, True]),  # a clock too coarse to time it: nothing to compare
    # the start off the typical speed, the end nearer to it (by less than the limit from either): drifted all the same
    ([(1.0, 1.0), (1.0, 1.0), (1.0, 1.0), (1.0 + timing.DRIFT_LIMIT * 1.2, 1.0 + timing.DRIFT_LIMIT * 0.6)],
     [False, False, False, True]),
])
def test_a_round_drifted_if_either_reference_is_off_the_typical_speed(references, moved):
    assert timing.drifted(references) == moved
