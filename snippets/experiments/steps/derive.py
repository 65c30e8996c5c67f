"""Update-step counts, what the figures, the checks and the page all read off a result of ``measure.curves``.

It imports nothing of ``figures`` or ``checks``, and ``measure`` never imports it.
"""

from __future__ import annotations

import statistics
from typing import Callable

from snippets.lab import timing
from snippets.lab.cache import Result


def runs(result: Result, order: str) -> list[dict]:
    """The runs of one batch order (``"sequential"`` or ``"shuffled"``), in batch-size order."""
    return [r for r in result["runs"] if r["order"] == order]


def at_step(run: dict, step: int) -> dict | None:
    """The checkpoint record of ``run`` after exactly ``step`` optimizer steps, if one was taken."""
    return next((rec for rec in run["records"] if rec["step"] == step), None)


def losses_at(result: Result, order: str, step_of: Callable[[dict], int]) -> dict[int, float]:
    """Full-dataset loss by batch size, each run read at step ``step_of(run)`` (runs without that record left out)."""
    found = {}
    for run in runs(result, order):
        record = at_step(run, step_of(run))
        if record is not None:
            found[run["batch_size"]] = record["loss"]
    return found


def seconds_per_step(result: Result, order: str, step: int) -> dict[int, float]:
    """Training seconds per optimizer step by batch size, over the first ``step`` steps of each run."""
    found = {}
    for run in runs(result, order):
        record = at_step(run, step)
        if record is not None:
            found[run["batch_size"]] = record["seconds"] / step
    return found


def step_costs(result: Result, order: str) -> dict[int, dict]:
    """Training seconds per optimizer step by batch size, as a timing: the median over the run's epochs, and each
    epoch's time per step (``samples``), from which ``snippets.lab.timing.ratio`` bootstraps an interval."""
    found = {}
    for run in runs(result, order):
        per_step = [seconds / run["steps_per_epoch"] for seconds in run.get("epoch_seconds") or ()]
        if per_step:
            found[run["batch_size"]] = {"median": statistics.median(per_step), "samples": per_step}
    return found


def step_cost_ratio(result: Result, order: str) -> dict:
    """The dearest step against the cheapest (by median), with its 95 % interval: ``{"dearest", "cheapest",
    "ratio"}``, batch sizes and an interval."""
    costs = step_costs(result, order)
    cheapest = min(costs, key=lambda batch: costs[batch]["median"])
    dearest = max(costs, key=lambda batch: costs[batch]["median"])
    return {"cheapest": cheapest, "dearest": dearest, "ratio": timing.ratio(costs[dearest], costs[cheapest])}
