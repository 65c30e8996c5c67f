"""The one timing helper: ``torch.utils.benchmark`` with CUDA synchronised, median and spread reported."""

from __future__ import annotations

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
    over the blocks, ``blocks`` and ``runs``. On CUDA every call is followed by ``torch.cuda.synchronize``.
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
    }
