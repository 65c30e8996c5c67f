"""The timing helper's logic, on a scripted clock: how many calls, how many blocks, which statistics.

No test here depends on how fast this machine is: ``torch.utils.benchmark.Timer`` and ``time.perf_counter`` are
replaced by fakes that return the durations a test scripts (one smoke test uses the real Timer and asserts
only counts and orderings).
"""

from __future__ import annotations

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


def test_real_timer_counts_calls():
    """With the real Timer: every block's calls are counted, plus one warm-up call; no time is asserted."""
    calls = []
    stats = measure(lambda: calls.append(1), repeats=5, min_run_time=0.0, block_time=0.0)
    assert stats["blocks"] >= 5 and stats["runs"] == stats["blocks"]
    assert len(calls) == stats["runs"] + 1
    assert stats["min"] <= stats["median"] <= stats["max"] and stats["iqr"] >= 0
