"""The one timing helper: ``torch.utils.benchmark`` with CUDA synchronised, median and spread reported."""

from __future__ import annotations

import math
import random
import statistics
import time
from typing import Any, Callable

import torch
import torch.utils.benchmark as benchmark


def measure(fn: Callable[[], Any], *, repeats: int = 7, min_run_time: float = 0.2,
            block_time: float = 0.02, device: torch.device | None = None) -> dict:
    """Time ``fn()`` and return seconds per call.

    After a warm-up call, ``fn`` runs in blocks of ``number`` calls (enough for ``block_time`` seconds); at
    least ``repeats`` blocks and ``min_run_time`` seconds in all. Returns ``median``, ``iqr``, ``min``, ``max``
    over the blocks, ``blocks`` and ``runs``, and ``samples`` (the blocks' times, at most ``MAX_SAMPLES`` of
    them, for bootstrap intervals). On CUDA every call is followed by ``torch.cuda.synchronize``.
    """
    if repeats < 1:
        raise ValueError(f"repeats must be >= 1, got {repeats}")
    if device is not None and device.type == "cuda":
        def call() -> None:
            fn()
            torch.cuda.synchronize(device)
    else:
        call = fn  # type: ignore[assignment]
    timer = benchmark.Timer(stmt="call()", globals={"call": call}, num_threads=torch.get_num_threads())
    # Timer.timeit() warms up with two extra calls per measurement, which triples the cost of a
    # multi-second training loop; its inner ``_timeit`` runs exactly ``number`` calls (torch >= 1.8).
    first = timer._timeit(1)  # warm-up, and an estimate of one call
    number = max(1, int(block_time / max(first, 1e-9)))
    times: list[float] = []
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
        "samples": _thin(times),
    }


# ---------------------------------------------------------------------------------------------------------
# Uncertainty: every ratio the site prints comes with a 95 % bootstrap interval; noisy ones are said to be.

MAX_SAMPLES = 64
# A ratio is *noisy* when its 95 % interval is wider than ±NOISE_TOLERANCE of its value (see index.md).
NOISE_TOLERANCE = 0.10
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
    Returns ``{"value", "low", "high", "paired", "n"}``; ``low``/``high`` are None with fewer than 3 rounds or
    blocks, which counts as noisy: nothing supports the value's precision.
    """
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
    return relative_spread(interval) > tolerance


def decide(interval: dict, relation: str, threshold: float) -> bool | None:
    """Does ``value <relation> threshold`` hold for the whole interval? True, False, or None (undecided).

    True only when the whole interval is on the right side, False only when all of it is on the wrong side:
    noise never decides a claim, and a measurement with no interval decides nothing.
    """
    if relation not in (">", "<"):
        raise ValueError(f"relation must be '>' or '<', got {relation!r}")
    low, high = interval.get("low"), interval.get("high")
    if low is None or high is None:
        return None
    if relation == ">":
        return True if low > threshold else False if high <= threshold else None
    return True if high < threshold else False if low >= threshold else None


def interleaved(functions: dict[str, Callable[[], Any]], *, rounds: int, min_run_time: float,
                block_time: float = 0.02, repeats: int = 3, device: torch.device | None = None,
                baseline: str | None = None, budget_s: float = 0.0, max_rounds: int | None = None) -> dict[str, dict]:
    """Time several functions in alternation, so that a slow moment on a shared machine hits them all.

    Each round runs ``measure`` on every function in turn. A function's ``median`` is the median of its rounds'
    medians, its ``iqr`` the median of its rounds' IQRs, and ``rounds`` keeps the medians of the rounds, from
    which ``ratio`` computes paired intervals. When a ratio to ``baseline`` is noisy after ``rounds`` rounds,
    more rounds run while the extra time stays within ``budget_s`` seconds (and at most ``max_rounds``, default
    three times ``rounds``), so a quiet machine settles and a busy one says it is busy.
    """
    if rounds < 1:
        raise ValueError(f"rounds must be >= 1, got {rounds}")
    if baseline is not None and baseline not in functions:
        raise ValueError(f"baseline {baseline!r} is not one of the timed functions: {', '.join(functions)}")
    max_rounds = max_rounds or 3 * rounds
    timings: dict[str, list[dict]] = {name: [] for name in functions}

    def one_round() -> None:
        for name, fn in functions.items():
            timings[name].append(measure(fn, repeats=repeats, min_run_time=min_run_time / rounds,
                                         block_time=block_time, device=device))

    def summary() -> dict[str, dict]:
        return {name: {"median": statistics.median(t["median"] for t in rows),
                       "iqr": statistics.median(t["iqr"] for t in rows),
                       "min": min(t["min"] for t in rows), "max": max(t["max"] for t in rows),
                       "blocks": sum(t["blocks"] for t in rows), "runs": sum(t["runs"] for t in rows),
                       "rounds": [t["median"] for t in rows]}
                for name, rows in timings.items()}

    for _ in range(rounds):
        one_round()
    start = time.perf_counter()
    per_round = None
    while baseline is not None and len(timings[baseline]) < max_rounds:
        result = summary()
        if not any(is_noisy(ratio(result[name], result[baseline])) for name in functions if name != baseline):
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
