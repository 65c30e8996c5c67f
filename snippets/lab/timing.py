"""The one timing helper: ``torch.utils.benchmark`` with CUDA synchronised, median and spread reported."""

from __future__ import annotations

import math
import os
import random
import statistics
import time
from pathlib import Path
from typing import Any, Callable

import torch
import torch.utils.benchmark as benchmark


def measure(fn: Callable[[], Any], *, repeats: int = 7, min_run_time: float = 0.2,
            block_time: float = 0.02, device: torch.device | None = None, number: int | None = None) -> dict:
    """Time ``fn()`` and return seconds per call.

    After a warm-up call, ``fn`` runs in blocks of ``number`` calls (enough for ``block_time`` seconds); at
    least ``repeats`` blocks and ``min_run_time`` seconds in all. Given ``number`` (``fn`` is already warm and
    its block size known, as in the later rounds of ``interleaved``), there is no warm-up call. Returns ``median``, ``iqr``, ``min``, ``max``
    over the blocks, ``blocks`` and ``runs``, and ``samples`` (the blocks' times, at most ``MAX_SAMPLES`` of
    them, for bootstrap intervals), and ``contention``: the share of the machine's CPU time other programs used
    meanwhile (``contention``; None where it cannot be read). On CUDA every call is followed by
    ``torch.cuda.synchronize``.
    """
    if repeats < 1:
        raise ValueError(f"repeats must be >= 1, got {repeats}")
    if number is not None and number < 1:
        raise ValueError(f"number must be >= 1, got {number}")
    if device is not None and device.type == "cuda":
        def call() -> None:
            fn()
            torch.cuda.synchronize(device)
    else:
        call = fn  # type: ignore[assignment]
    timer = benchmark.Timer(stmt="call()", globals={"call": call}, num_threads=torch.get_num_threads())
    # Timer.timeit() warms up with two extra calls per measurement, which triples the cost of a
    # multi-second training loop; its inner ``_timeit`` runs exactly ``number`` calls (torch >= 1.8).
    if number is None:
        first = timer._timeit(1)  # warm-up, and an estimate of one call
        number = max(1, int(block_time / max(first, 1e-9)))
    times: list[float] = []
    before = cpu_snapshot()
    start = time.perf_counter()
    while len(times) < repeats or time.perf_counter() - start < min_run_time:
        times.append(timer._timeit(number) / number)
        if len(times) >= 10_000:
            break
    quartiles = statistics.quantiles(times, n=4) if len(times) > 1 else [times[0]] * 3
    return {
        "median": statistics.median(times),
        "iqr": quartiles[2] - quartiles[0],
        "min": min(times),
        "max": max(times),
        "blocks": len(times),
        "runs": len(times) * number,
        "number": number,
        "samples": _thin(times),
        "contention": contention(before, cpu_snapshot()),
    }


# ---------------------------------------------------------------------------------------------------------
# Contention: how much of the machine other programs took while something was timed. A busy machine does not
# only add noise: it changes what is measured (an operation split over all cores waits for the core another
# program holds; a single-threaded one does not), so a busy measurement can be tight and still wrong. Its
# rounds are left out when quiet ones can be had, and what is left busy is said to be.

# A measurement is *contended* when other programs used more than this share of the machine's CPU time.
CONTENTION_LIMIT = 0.10
# Windows shorter than this are too short for the kernel's 10 ms accounting ticks to tell (see contention()).
MIN_WINDOW_S = 0.25
_TICK = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") and "SC_CLK_TCK" in os.sysconf_names else 100
_PROC = Path("/proc")


def _own_ticks() -> int:
    """CPU ticks used by this process, its waited-for children and its running children (DataLoader workers)."""
    stat = (_PROC / "self" / "stat").read_text()
    fields = stat[stat.rindex(")") + 2:].split()
    ticks = sum(int(fields[i]) for i in (11, 12, 13, 14))  # utime, stime, cutime, cstime
    for task in (_PROC / "self" / "task").iterdir():
        try:
            children = (task / "children").read_text().split()
        except OSError:
            continue
        for child in children:
            try:
                child_stat = (_PROC / child / "stat").read_text()
            except OSError:  # it ended meanwhile: its time is in cutime once waited for
                continue
            child_fields = child_stat[child_stat.rindex(")") + 2:].split()
            ticks += int(child_fields[11]) + int(child_fields[12])
    return ticks


def cpu_snapshot() -> tuple[float, int, int, int] | None:
    """(time, machine's busy ticks, machine's total ticks, this process tree's ticks); None without /proc."""
    try:
        line = (_PROC / "stat").read_text().splitlines()[0].split()
        values = [int(v) for v in line[1:9]]  # user nice system idle iowait irq softirq steal
        return time.perf_counter(), sum(values) - values[3] - values[4], sum(values), _own_ticks()
    except (OSError, ValueError, IndexError):
        return None


def contention(before: tuple | None, after: tuple | None) -> float | None:
    """The share of the machine's CPU time that other programs used between two ``cpu_snapshot()``s.

    Counts what this process and its children did not use (steal time, on a virtual machine, counts as used by
    others). None when the snapshots are missing or the window is shorter than ``MIN_WINDOW_S``.
    """
    if before is None or after is None or after[0] - before[0] < MIN_WINDOW_S:
        return None
    total = after[2] - before[2]
    if total <= 0:
        return None
    others = (after[1] - before[1]) - (after[3] - before[3])
    return min(1.0, max(0.0, others / total))


def contended(value: float | None) -> bool:
    return value is not None and value > CONTENTION_LIMIT


# ---------------------------------------------------------------------------------------------------------
# Uncertainty: every ratio the site prints comes with a 95 % bootstrap interval; noisy ones are said to be.

MAX_SAMPLES = 64
# A ratio is *noisy* when its 95 % interval is wider than ±NOISE_TOLERANCE of its value (see index.md).
NOISE_TOLERANCE = 0.25
BOOTSTRAP_RESAMPLES = 2000


def _thin(values: list[float], limit: int = MAX_SAMPLES) -> list[float]:
    """At most ``limit`` values, evenly spaced through the list (a result stays small enough to store)."""
    if len(values) <= limit:
        return list(values)
    step = len(values) / limit
    return [values[int(i * step)] for i in range(limit)]


def _quantile(sorted_values: list[float], q: float) -> float:
    position = q * (len(sorted_values) - 1)
    low = int(position)
    high = min(low + 1, len(sorted_values) - 1)
    return sorted_values[low] + (sorted_values[high] - sorted_values[low]) * (position - low)


def ratio(numerator: dict, denominator: dict, *, confidence: float = 0.95,
          resamples: int = BOOTSTRAP_RESAMPLES) -> dict:
    """``numerator / denominator`` of two timings, with a percentile-bootstrap interval.

    Timings from ``interleaved`` carry the medians of their rounds, run in alternation: the ratio is the median
    of the per-round ratios and the interval is bootstrapped over rounds (paired, so a busy moment that slowed
    both sides of one round cancels out). Otherwise the blocks of each timing are resampled independently.
    Returns ``{"value", "low", "high", "paired", "n", "contention"}``; ``low``/``high`` are None with fewer than
    3 rounds or blocks, which counts as noisy: nothing supports the value's precision. ``contention`` is the larger
    of the two timings' (None when neither knows it).
    """
    shares = [t.get("contention") for t in (numerator, denominator) if t.get("contention") is not None]
    out = _ratio(numerator, denominator, confidence=confidence, resamples=resamples)
    out["contention"] = max(shares) if shares else None
    return out


def _ratio(numerator: dict, denominator: dict, *, confidence: float, resamples: int) -> dict:
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must be between 0 and 1, got {confidence}")
    rng = random.Random(0)  # the same interval on every rebuild of the same result
    a_rounds, b_rounds = numerator.get("rounds"), denominator.get("rounds")
    tail = (1 - confidence) / 2
    if a_rounds and b_rounds and len(a_rounds) == len(b_rounds):
        per_round = [a / b for a, b in zip(a_rounds, b_rounds)]
        value = statistics.median(per_round)
        if len(per_round) < 3:
            return {"value": value, "low": None, "high": None, "paired": True, "n": len(per_round)}
        boot = sorted(statistics.median(rng.choices(per_round, k=len(per_round))) for _ in range(resamples))
        return {"value": value, "low": _quantile(boot, tail), "high": _quantile(boot, 1 - tail), "paired": True,
                "n": len(per_round)}
    a, b = numerator.get("samples") or [], denominator.get("samples") or []
    value = numerator["median"] / denominator["median"]
    if len(a) < 3 or len(b) < 3:
        return {"value": value, "low": None, "high": None, "paired": False, "n": min(len(a), len(b))}
    boot = sorted(statistics.median(rng.choices(a, k=len(a))) / statistics.median(rng.choices(b, k=len(b)))
                  for _ in range(resamples))
    return {"value": value, "low": _quantile(boot, tail), "high": _quantile(boot, 1 - tail), "paired": False,
            "n": min(len(a), len(b))}


def relative_spread(interval: dict) -> float:
    """Half the interval's width relative to its value (inf when there is no interval)."""
    if interval.get("low") is None or interval.get("high") is None or not interval["value"]:
        return math.inf
    return (interval["high"] - interval["low"]) / (2 * abs(interval["value"]))


def is_noisy(interval: dict, tolerance: float = NOISE_TOLERANCE) -> bool:
    """Too uncertain to print as a finding: an interval wider than ±``tolerance``, or measured while other
    programs held more than ``CONTENTION_LIMIT`` of the machine."""
    return relative_spread(interval) > tolerance or contended(interval.get("contention"))


def decide(interval: dict, relation: str, threshold: float) -> bool | None:
    """Does ``value <relation> threshold`` hold for the whole interval? True, False, or None (undecided).

    True only when the whole interval is on the right side, False only when all of it is on the wrong side:
    noise never decides a claim; a measurement with no interval, or one taken while other programs held the
    machine (``contended``), decides nothing.
    """
    if relation not in (">", "<"):
        raise ValueError(f"relation must be '>' or '<', got {relation!r}")
    low, high = interval.get("low"), interval.get("high")
    if low is None or high is None or contended(interval.get("contention")):
        return None
    if relation == ">":
        return True if low > threshold else False if high <= threshold else None
    return True if high < threshold else False if low >= threshold else None


def interleaved(functions: dict[str, Callable[[], Any]], *, rounds: int, min_run_time: float,
                block_time: float = 0.02, repeats: int = 3, device: torch.device | None = None,
                baseline: str | None = None, budget_s: float = 0.0, max_rounds: int | None = None) -> dict[str, dict]:
    """Time several functions in alternation, so that a slow moment on a shared machine hits them all.

    Each round runs ``measure`` on every function in turn (warmed up in the first round only; later rounds keep
    its block size). A function's ``median`` is the median of its rounds' medians, its ``iqr`` the median of its
    rounds' IQRs, and ``rounds`` keeps the medians of the rounds, from which ``ratio`` computes paired intervals.
    When a ratio to ``baseline`` (either way up) is noisy after ``rounds`` rounds, more rounds run while the extra
    time stays within ``budget_s`` seconds (and at most ``max_rounds``, default three times ``rounds``), so a
    quiet machine settles and a busy one says it is busy.

    Rounds during which other programs held more than ``CONTENTION_LIMIT`` of the machine are left out when
    enough quiet ones remain (``busy_rounds_left_out``); ``contention`` is the share during the rounds kept.
    """
    if rounds < 1:
        raise ValueError(f"rounds must be >= 1, got {rounds}")
    if baseline is not None and baseline not in functions:
        raise ValueError(f"baseline {baseline!r} is not one of the timed functions: {', '.join(functions)}")
    max_rounds = max_rounds or 3 * rounds
    timings: dict[str, list[dict]] = {name: [] for name in functions}
    shares: list[float | None] = []  # other programs' share of the machine during each round

    def one_round() -> None:
        before = cpu_snapshot()
        for name, fn in functions.items():
            known = timings[name][0].get("number") if timings[name] else None
            timings[name].append(measure(fn, repeats=repeats, min_run_time=min_run_time / rounds,
                                         block_time=block_time, device=device, number=known))
        shares.append(contention(before, cpu_snapshot()))

    def kept() -> list[int]:
        """The quiet rounds when there are enough of them for an interval, else every round."""
        quiet = [i for i, share in enumerate(shares) if not contended(share)]
        return quiet if len(quiet) >= min(rounds, 3) else list(range(len(shares)))

    def summary() -> dict[str, dict]:
        used = kept()
        known = [shares[i] for i in used if shares[i] is not None]
        # Rounds too short to judge one by one are judged together (their whole time).
        share = statistics.fmean(known) if known else contention(whole, cpu_snapshot())
        out = {}
        for name, all_rows in timings.items():
            rows = [all_rows[i] for i in used]
            out[name] = {"median": statistics.median(t["median"] for t in rows),
                         "iqr": statistics.median(t["iqr"] for t in rows),
                         "min": min(t["min"] for t in rows), "max": max(t["max"] for t in rows),
                         "blocks": sum(t["blocks"] for t in rows), "runs": sum(t["runs"] for t in rows),
                         "rounds": [t["median"] for t in rows], "contention": share,
                         "busy_rounds_left_out": len(shares) - len(used)}
        return out

    whole = cpu_snapshot()
    for _ in range(rounds):
        one_round()
    start = time.perf_counter()
    per_round = None
    while baseline is not None and len(timings[baseline]) < max_rounds:
        result = summary()
        # Either way up: a page may print name ÷ baseline or baseline ÷ name (a share of clone()'s speed), and an
        # interval's relative width differs between the two when it is lopsided.
        if not any(is_noisy(ratio(result[name], result[baseline])) or is_noisy(ratio(result[baseline], result[name]))
                   for name in functions if name != baseline):
            break
        round_start = time.perf_counter()
        if per_round is not None and time.perf_counter() - start + per_round > budget_s:
            break
        if per_round is None and budget_s <= 0:
            break
        one_round()
        per_round = time.perf_counter() - round_start
    result = summary()
    for name in result:
        result[name]["extra_rounds"] = len(timings[name]) - rounds
    return result
