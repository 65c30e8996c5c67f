"""Update-step counts, what the figures, the checks and the page all read off the results of ``measure.curves``
and ``measure.lr_sweep``.

It imports nothing of ``figures`` or ``checks``, and ``measure`` never imports it.
"""

from __future__ import annotations

import math
import statistics
from typing import Callable

from snippets.lab import timing
from snippets.lab.cache import Result


def starts(result: Result | dict) -> list[dict]:
    """The curves result as each of its starts ran it, the page's own first: the same keys, with ``runs`` from
    that start and ``start`` its [seed of the weights, seed of the shuffling]."""
    value = result.value if isinstance(result, Result) else result
    first = {**value, "start": [value.get("seed"), value.get("shuffle_seed")]}
    return [first] + [{**value, "runs": other["runs"], "start": [other["seed"], other["shuffle_seed"]]}
                      for other in value.get("others", ())]


def across_starts(result: Result | dict, inner: Callable[[dict], tuple[bool, dict]]) -> tuple[bool, dict]:
    """``inner`` (a condition on one start's curves) from every start: it holds when it holds from all of them.
    The values are the page's start's, with ``starts`` (how many), ``failing_starts`` and, for each number, its
    ``_min`` and ``_max`` over the starts: a claim quotes the range, not one start's luck."""
    outcomes = [(view["start"], *inner(view)) for view in starts(result)]
    failing = [start for start, holds, _ in outcomes if not holds]
    values = dict(outcomes[0][2])
    out = {**values, "starts": len(outcomes), "failing_starts": failing}
    for key, value in values.items():
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            numbers = [v[key] for _, _, v in outcomes if isinstance(v.get(key), (int, float))]
            out[f"{key}_min"], out[f"{key}_max"] = min(numbers), max(numbers)
    return not failing, out


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


def step_costs(result: Result) -> dict[int, dict]:
    """What one optimizer step costs by batch size (a result of ``measure.step_cost``): each a timing, timed in
    alternation with the others (in fresh processes), from which ``snippets.lab.timing.ratio`` computes intervals."""
    return {row["batch_size"]: row for row in result["rows"]}


def step_cost_ratio(result: Result) -> dict:
    """The dearest step against the cheapest (by median), with its 95% interval: ``{"dearest", "cheapest",
    "ratio"}``, batch sizes and an interval."""
    costs = step_costs(result)
    cheapest = min(costs, key=lambda batch: costs[batch]["median"])
    dearest = max(costs, key=lambda batch: costs[batch]["median"])
    return {"cheapest": cheapest, "dearest": dearest, "ratio": timing.ratio(costs[dearest], costs[cheapest])}


# ---- the learning-rate sweep (a result of ``measure.lr_sweep``) -------------------------------------------------

RULES = {0.0: "constant", 0.5: "square-root", 1.0: "linear"}  # exponent of k: lr_k = lr_1 · k^exponent


def sweep_score(run: dict) -> float:
    """A run's score: the mean log10 full-dataset loss over the second half of the run. The final loss alone is
    too ragged near the best learning rate (one unlucky last step decides); the average over half a run is not."""
    return statistics.fmean(math.log10(loss) for _, loss in run["tail"])


def best_lr(lrs: list[float], scores: list[float]) -> dict:
    """The grid point of lowest score, refined by the vertex of the parabola through it and its two neighbours on
    log(lr) (kept within half a grid step of the point). At an edge of the grid there is nothing to refine."""
    i = min(range(len(scores)), key=scores.__getitem__)
    edge = i in (0, len(scores) - 1)
    lr = lrs[i]
    if not edge:
        (u0, s0), (u1, s1), (u2, s2) = [(math.log(lrs[j]), scores[j]) for j in (i - 1, i, i + 1)]
        curvature = (s2 - s1) / (u2 - u1) - (s1 - s0) / (u1 - u0)
        if curvature > 0:
            slope_left, slope_right = (s1 - s0) / (u1 - u0), (s2 - s1) / (u2 - u1)
            # vertex of the parabola through the three points
            vertex = (u0 + u1) / 2 + (u2 - u0) / 2 * (-slope_left) / (slope_right - slope_left)
            lr = math.exp(min(max(vertex, (u0 + u1) / 2), (u1 + u2) / 2))
    return {"index": i, "grid_lr": lrs[i], "lr": lr, "score": scores[i], "edge": edge}


def sweep_scores(result: Result, seed: int, k: int) -> list[float]:
    """One seed's scores at one batch multiple, in the order of the learning-rate grid."""
    by_lr = {run["lr"]: sweep_score(run) for run in result["runs"] if run["seed"] == seed and run["k"] == k}
    return [by_lr[lr] for lr in result["lrs"]]


def slope(xs: list[float], ys: list[float]) -> float:
    """The least-squares slope of ys against xs."""
    mx, my = statistics.fmean(xs), statistics.fmean(ys)
    return sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sum((x - mx) ** 2 for x in xs)


def best_lrs(result: Result) -> dict:
    """Everything the page reads off the sweep: ``best[seed][k]`` (see ``best_lr``), each seed's ``exponent``
    (the slope of log best lr against log k), the ``median`` best lr at each k over seeds, and the exponent of
    the medians."""
    multiples = result["multiples"]
    best = {seed: {k: best_lr(result["lrs"], sweep_scores(result, seed, k)) for k in multiples}
            for seed in result["seeds"]}
    logk = [math.log(k) for k in multiples]
    exponent = {seed: slope(logk, [math.log(best[seed][k]["lr"]) for k in multiples]) for seed in best}
    median = {k: math.exp(statistics.median(math.log(best[seed][k]["lr"]) for seed in best)) for k in multiples}
    return {"best": best, "exponent": exponent, "median": median,
            "median_exponent": slope(logk, [math.log(median[k]) for k in multiples])}


def nearest_rule(exponent: float) -> float:
    """The exponent of the rule (0, ½ or 1) nearest ``exponent``."""
    return min(RULES, key=lambda rule: abs(exponent - rule))


def spread_at_last_step(result: Result | dict) -> dict:
    """How far apart the shuffled batch sizes are at the last step mark (the question's own 400 steps), from every
    start: the largest loss over the smallest, in percent, with its range over the starts."""
    def one(view: dict) -> tuple[bool, dict]:
        last = view["equal_steps"][-1]
        at = losses_at(view, "shuffled", lambda run: last)
        return True, {"steps": last, "spread_pct": 100 * (max(at.values()) / min(at.values()) - 1)}

    return across_starts(result, one)[1]


def question_pair(result: Result | dict, small: int = 512) -> dict:
    """The question's own comparison, from every start: the full batch's loss over batch ``small``'s after the
    epoch budget (shuffled, and in the question's order), and batch ``small``'s over the full batch's at equal
    steps in the question's order, with each ratio's ``_min`` and ``_max`` over the starts."""
    def inner(view: dict) -> tuple[bool, dict]:
        full = max(run["batch_size"] for run in runs(view, "sequential"))
        at = {order: losses_at(view, order, lambda run: view["epochs"] * run["steps_per_epoch"])
              for order in ("shuffled", "sequential")}
        small_run = next(run for run in runs(view, "sequential") if run["batch_size"] == small)
        steps = view["epochs"] * small_run["steps_per_epoch"]
        equal = losses_at(view, "sequential", lambda run: steps)
        return True, {"full": full, "small": small, "epochs": view["epochs"], "steps": steps,
                      "epochs_shuffled": at["shuffled"][full] / at["shuffled"][small],
                      "epochs_sequential": at["sequential"][full] / at["sequential"][small],
                      "steps_sequential": equal[small] / equal[full]}
    return across_starts(result, inner)[1]


def last_batch_512(result: Result) -> dict:
    """At batch 512, the steps an epoch holds (``len(loader)``), the answer's count and the short last batch."""
    keep = next(row for row in result["rows"] if row["batch_size"] == 512)["keep"]
    return {"per_epoch": keep["len_loader"], "answer_per_epoch": result["question"]["answer_per_epoch"],
            "last_batch": keep["last_batch"]}


def question_arithmetic(result: Result) -> dict:
    """The question's step counts, as arithmetic on its constants (N, the batch sizes, the epochs, the print
    interval): what ``step_arithmetic`` computes beside the counts a real DataLoader gives (``counts_agree`` checks
    those). Nothing here is measured, so nothing here is a checked claim."""
    q = result["question"]
    return {"epochs": result["epochs"], "full_epochs": result["full_epochs"], "print_every": result["print_every"],
            "steps": q["steps_512"], "answer_total": q["answer_total"], "steps_full_short": q["steps_full_20"],
            "steps_full_long": q["steps_full_400"], "printed_512": q["printed_lines_512"],
            "printed_full": q["printed_lines_full"]}
