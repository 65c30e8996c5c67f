"""DataLoader overhead, numbers derived from results: shared by the figures, the checks and the page's text.

Pure functions of a result (a ``Result`` or its JSON value: both are indexed by key). Nothing here is imported
by ``measure``, so changing how a number is derived re-runs no experiment.

Every ratio of two timings is an *interval*, ``{"value", "low", "high", ...}`` (``snippets.lab.timing.ratio``):
the 95% interval a rebuild lands inside, from the spread between the fresh processes the two were timed in
(within one process: bootstrapped over the rounds they were timed in alternation, or over their blocks).
``low``/``high`` are None where too few repeats were timed for an interval.
"""

from __future__ import annotations

from typing import Any, Callable, Hashable, Union

from snippets.lab import timing
from snippets.lab.cache import Result

from .measure import LOADER_NAMES

# TensorLoader's speed targets (checked strictly by benchmarks/tensor_loader_speed.py, reported by the page):
RATIO_TARGET = 1.2  # an epoch, against a plain hand-written loop yielding the same batches
SMALL_EPOCH = 50e-6  # ... except where that loop takes less than this per epoch:
SMALL_SLACK = 10e-6  # ... then at most this much slower
TRAINING_TARGET = 1.1  # the question's training loop, against training on the tensors directly

Value = Union[Result, dict]  # a Result or its JSON value: both are indexed by key
Interval = dict  # {"value", "low", "high", ...}: a ratio with its 95 % interval (low/high None: no interval)


# ---------------------------------------------------------------------------------------------------------
# Intervals: arithmetic on them, and decisions that noise cannot make


def mapped(interval: Interval, f: Callable[[float], float]) -> Interval:
    """The interval of ``f(ratio)`` for an increasing ``f``: a share from a ratio, a ratio scaled."""
    return {**interval, "value": f(interval["value"]),
            "low": None if interval["low"] is None else f(interval["low"]),
            "high": None if interval["high"] is None else f(interval["high"])}


def scaled(interval: Interval, factor: float) -> Interval:
    return mapped(interval, lambda v: v * factor)


def quotient(a: Interval, b: Interval) -> Interval:
    """``a / b`` of two positive intervals, its bounds from theirs (low = a.low / b.high): the comparison of two
    ratios holds only when their whole intervals are apart."""
    bounded = None not in (a["low"], a["high"], b["low"], b["high"]) and b["low"] > 0
    shares = [s for s in (a.get("contention"), b.get("contention")) if s is not None]
    # measured while the machine was busy or drifting: so is the quotient, whose bounds are those of its two
    # intervals, each widened for it already (timing.widened)
    return {"value": a["value"] / b["value"], "low": a["low"] / b["high"] if bounded else None,
            "high": a["high"] / b["low"] if bounded else None, "paired": False, "n": min(a.get("n", 0), b.get("n", 0)),
            "contention": max(shares) if shares else None, "drifted": bool(a.get("drifted") or b.get("drifted"))}


def decide_all(intervals: dict[Hashable, Interval], relation: str, threshold: float) -> tuple[bool | None, Hashable]:
    """``value <relation> threshold`` for every interval: True when every one decides True, False when any
    decides False, None (undecided) otherwise. Also returns the key of the interval that decided: one that
    failed, else one left undecided, else the one closest to the threshold."""
    pick = min if relation == ">" else max
    decisions = {key: timing.decide(interval, relation, threshold) for key, interval in intervals.items()}
    for outcome in (False, None):
        keys = [key for key, decided in decisions.items() if decided is outcome]
        if keys:
            return outcome, pick(keys, key=lambda k: intervals[k]["value"])
    return True, pick(intervals, key=lambda k: intervals[k]["value"])


def bounds(interval: Interval) -> dict[str, Any]:
    """The values a timing check reports: the ratio and its interval."""
    return {"ratio": interval["value"], "low": interval["low"], "high": interval["high"]}


def judged(interval: Interval, relation: str, threshold: float, key: str = "ratio") -> tuple[bool | None, dict]:
    """A timing check's outcome and values: ``value <relation> threshold`` decided from the whole interval
    (``timing.decide``), and the value, its interval and the bound checked (``relation``, ``threshold``), which
    the sentence states beside the value (``render.measured``)."""
    values = {key: interval["value"], "low": interval["low"], "high": interval["high"], "relation": relation,
              "threshold": threshold}
    decided = timing.decide(interval, relation, threshold)
    if decided is None or timing.is_disturbed(interval):  # what widened its interval, in the claim's tip
        values["drifted"] = bool(interval.get("drifted"))
        if interval.get("contention") is not None:  # unmeasured: nothing to say
            values["contention"] = interval["contention"]
    return decided, values


def noisy(named: list[tuple]) -> list[tuple]:
    """The entries ``(name, interval[, share])`` measured while the machine was busy or drifting: their values may
    be off (``snippets.lab.timing.is_disturbed``). A wide interval is printed as such beside its value."""
    return [entry for entry in named if timing.is_disturbed(entry[1])]


def combined(timings: list[dict]) -> dict:
    """Several timings made in the same rounds as one: medians summed, and the rounds (or blocks) summed one by
    one, in each fresh process when they were timed in several."""
    out: dict[str, Any] = {"median": sum(t["median"] for t in timings)}
    processes = [t.get("processes") for t in timings]
    if all(processes) and len({len(p) for p in processes}) == 1:
        out["processes"] = [combined(list(group)) for group in zip(*processes)]
    rounds = [t.get("rounds") for t in timings]
    if all(rounds) and len({len(r) for r in rounds}) == 1:
        out["rounds"] = [sum(values) for values in zip(*rounds)]
    samples = [t.get("samples") for t in timings]
    if all(samples):
        out["samples"] = [sum(values) for values in zip(*samples)]
    for flag in ("contention",):
        known = [t[flag] for t in timings if t.get(flag) is not None]
        if known:
            out[flag] = max(known)
    out["drifted"] = any(t.get("drifted") for t in timings)
    return out


# ---------------------------------------------------------------------------------------------------------
# The question's timing


def question_ratios(result: Value, baseline: str = "direct") -> dict[str, Interval]:
    """Each loader's time per epoch in the question's loop, as a multiple of the ``baseline`` run's (the direct
    loop by default): paired by the rounds the runs were timed in alternation."""
    rows = {row["label"]: row for row in result["rows"]}
    return {name: timing.ratio(row, rows[baseline]) for name, row in rows.items() if name != baseline}


# ---------------------------------------------------------------------------------------------------------
# Where the time goes


def stage_row(result: Value, prefix: str) -> dict:
    """The stage timed on its own whose label starts with ``prefix``."""
    return next(row for row in result["stages"] if row["label"].startswith(prefix))


def stage(result: Value, prefix: str) -> float:
    """The median of the stage timed on its own whose label starts with ``prefix``."""
    return stage_row(result, prefix)["median"]


def inside_row(result: Value, key: str) -> dict:
    """A stage of the epochs clocked inside (``measure.clocked_epochs``), by key (``"whole"``, ``"indexing"``, …)."""
    return next(row for row in result["inside"] if row["stage"] == key)


STAGE_PREFIXES = {"iterator": "iter(", "sampler": "sampler", "indexing": "dataset[i]", "collate": "default_collate",
                  "copy": "the copy", "stack": "torch.stack", "views": "views instead"}
# Timed inside the epoch, adding up to it with the remainder; the others are timed on their own and compared with a
# whole epoch timed beside them.
INSIDE_KEYS = ("iterator", "sampler", "indexing", "collate", "remainder")
COMPARED_KEYS = ("copy", "stack", "views")

STAGE_GROUPS = {"per_sample": ("indexing", "collate"), "parts": ("iterator", "sampler", "indexing", "collate")}


def _pair(result: Value, key: str) -> tuple[dict, dict]:
    if key in INSIDE_KEYS:
        return inside_row(result, key), inside_row(result, "whole")
    return stage_row(result, STAGE_PREFIXES[key]), stage_row(result, "whole epoch")


def breakdown_shares(result: Value, together: dict[str, tuple[str, ...]] | None = None) -> dict[str, Interval]:
    """Each stage of a DataLoader epoch as a share of the epoch (``timing.share``), and groups of stages taken
    together: ``per_sample`` is indexing and collate, ``parts`` the four stages (all but the remainder), and any
    group named in ``together`` (name: stage keys).

    The stages in ``INSIDE_KEYS`` were timed inside the epoch, so their shares and the remainder's add up to
    100%; the copies in ``COMPARED_KEYS`` were timed on their own, against a whole epoch timed beside them. No
    interval is clipped."""
    shares = {key: timing.share([_pair(result, key)]) for key in (*INSIDE_KEYS, *COMPARED_KEYS)}
    for name, keys in {**STAGE_GROUPS, **(together or {})}.items():
        shares[name] = timing.share([_pair(result, key) for key in keys])
    return shares


def stack_to_clone(result: Value) -> Interval:
    """DataLoader's copy (``torch.stack`` of N one-row tensors) against a copy of the same bytes (``clone()``)."""
    return timing.ratio(stage_row(result, STAGE_PREFIXES["stack"]), stage_row(result, STAGE_PREFIXES["copy"]))


def step_layout_ratio(result: Value) -> Interval:
    """A training step on DataLoader's batch against one on x, y themselves."""
    steps = {row["label"]: row for row in result["steps"]}
    return timing.ratio(steps["training step on DataLoader's batch"], steps["training step on x, y"])


def strided_step_ratio(result: Value) -> Interval:
    """A training step on DataLoader's contiguous batch of a strided source against one on the source itself."""
    steps = {row["label"]: row for row in result["steps"]}
    return timing.ratio(steps["training step on DataLoader's contiguous batch"],
                        steps["training step on the strided column"])


# ---------------------------------------------------------------------------------------------------------
# Scaling


def series(points: list[dict], name: str, shuffle: bool, key: str = "batch_size") -> tuple[list, list]:
    """One loader's points, in order: the ``key`` values and the median times."""
    chosen = [p for p in points if p["label"] == name and p["shuffle"] == shuffle]
    return [p[key] for p in chosen], [p["median"] for p in chosen]


def point(points: list[dict], name: str, shuffle: bool, **match: Any) -> dict:
    return next(p for p in points if p["label"] == name and p["shuffle"] == shuffle
                and all(p[k] == v for k, v in match.items()))


def batch_size_ratios(result: Value, numerator: str, denominator: str) -> dict[tuple[bool, int], Interval]:
    """``numerator``'s epoch against ``denominator``'s at every (shuffle, batch size)."""
    points = result["points"]
    return {(shuffle, size): timing.ratio(point(points, numerator, shuffle, batch_size=size),
                                          point(points, denominator, shuffle, batch_size=size))
            for shuffle in (False, True) for size in result["batch_sizes"]}


def common_n(result: Value) -> int:
    """The largest N every loader ran (DataLoader stops at the experiment's ``per_sample_limit``)."""
    return max(n for n in result["sizes"]
               if all(any(p["n"] == n and p["label"] == name for p in result["points"]) for name in LOADER_NAMES))


def per_sample_costs(result: Value, shuffle: bool) -> dict[str, dict]:
    """Each loader's time per epoch and per sample (epoch / N) at the largest N all of them ran, in one order."""
    n = common_n(result)
    return {name: {"n": n, "epoch": (epoch := point(result["points"], name, shuffle, n=n)["median"]),
                   "per_sample": epoch / n} for name in LOADER_NAMES}


def equal_n_ratio(result: Value, shuffle: bool, numerator: str = "DataLoader",
                  denominator: str = "TensorLoader") -> Interval:
    """``numerator``'s epoch against ``denominator``'s at the same N (the largest both ran) and the same order: the
    ratio of their times per sample."""
    n = common_n(result)
    points = result["points"]
    return timing.ratio(point(points, numerator, shuffle, n=n), point(points, denominator, shuffle, n=n))


# ---------------------------------------------------------------------------------------------------------
# When it matters


def loader_share(result: Value, row: dict, name: str) -> Interval:
    """A loader's time per batch as a share of loader time plus training step time: per_batch / (per_batch +
    step), from the interval of the loader's epoch against the step, timed in alternation."""
    timings = row["timings"]
    per_batch = scaled(timing.ratio(timings[name], timings["step"]), 1 / result["batches"])
    return mapped(per_batch, lambda r: r / (1 + r))


def worker_rows(result: Value, n: int) -> dict[str, dict]:
    """The workers experiment's rows for dataset size ``n``, by label."""
    return {row["label"]: row for row in result["rows"] if row["n"] == n}


def worker_ratios(result: Value, n: int, baseline: str) -> dict[str, Interval]:
    """Each row's time per epoch at dataset size ``n`` against the ``baseline`` row's."""
    rows = worker_rows(result, n)
    return {label: timing.ratio(row, rows[baseline]) for label, row in rows.items() if label != baseline}


PIN_BASELINE = "pageable, .to(device), then compute"


def pin_memory_ratio(result: Value, label: str, baseline: str = PIN_BASELINE) -> Interval | None:
    """A pin_memory row's time against ``baseline``'s (timed in alternation); None for the baseline itself."""
    rows = {row["label"]: row for row in result["rows"]}
    return None if label == baseline else timing.ratio(rows[label], rows[baseline])


# ---------------------------------------------------------------------------------------------------------
# The limit: memory bandwidth


def bandwidth_rows(result: Value, prefix: str) -> dict[int, dict]:
    """The bandwidth rows whose label starts with ``prefix``, by row width."""
    return {r["width"]: r for r in result["rows"] if r["label"].startswith(prefix)}


def of_clone(result: Value, row: dict) -> Interval:
    """A row's GB/s as a share of clone()'s at the same width: clone()'s time against the row's."""
    return timing.ratio(bandwidth_rows(result, "clone")[row["width"]], row)


def throughput_share(result: Value, width: int, prefix: str = "DataLoader, shuffle",
                     reference: str = "TensorLoader") -> Interval:
    """The GB/s of the ``prefix`` row as a share of the ``reference`` row's, at one width."""
    return timing.ratio(bandwidth_rows(result, reference)[width], bandwidth_rows(result, prefix)[width])


def fresh_memory_ratios(result: Value) -> dict[int, Interval]:
    """``clone()`` (a copy into new memory) against ``copy_()`` (into memory that exists), by row width."""
    clones, copies = bandwidth_rows(result, "clone"), bandwidth_rows(result, "copy_()")
    return {width: timing.ratio(clones[width], copies[width]) for width in clones}


SAME_OPERATIONS = {"clone()": "clone", "copy_()": "copy_()"}
# The same copy of the same bytes, shaped as rows of another width into separately allocated memory, differs by
# up to about 15 % on a quiet machine (kernel blocking, where the pages land); identical operations *disagree*
# only when their ratio's whole interval is further from 1 than the noise tolerance.
SAME_OPERATION_MARGIN = timing.NOISE_TOLERANCE


def disagreements(result: Value, margin: float = SAME_OPERATION_MARGIN) -> list[dict]:
    """Operations timed in several rows on the same bytes (``clone()`` and ``copy_()`` at every width) whose
    timings disagree beyond their uncertainty: some pair's ratio has a 95% interval entirely outside
    1 ± ``margin`` (above ``1 + margin`` or below ``1 / (1 + margin)``)."""
    out = []
    for operation, prefix in SAME_OPERATIONS.items():
        rows = sorted(bandwidth_rows(result, prefix).values(), key=lambda r: r["width"])
        for i, a in enumerate(rows):
            for b in rows[i + 1:]:
                interval = timing.ratio(a, b)
                if interval["low"] is not None and (interval["low"] > 1 + margin
                                                    or interval["high"] < 1 / (1 + margin)):
                    out.append({"operation": operation, "widths": (a["width"], b["width"]), "ratio": interval})
    return out


def release_facts(breakdown: Value, pin_memory: Value, compile_recompiles: Value) -> list[tuple[str, Value, Callable]]:
    """What the Versions page compares release by release, of these results: ``(label, result, fact)``."""
    return [
        ("`TensorDataset` has `__getitems__` (one fetch per batch)", breakdown,
         lambda r: r["tensor_dataset_getitems"]),
        ("`DataLoader(pin_memory=True)` warns without an accelerator", pin_memory,
         lambda r: any("pin_memory" in said for said in r["warnings"])),
        ("torch.compile, first epoch without `drop_last`: compilations (a short last batch recompiles)",
         compile_recompiles, lambda r: r["settings"][0]["compiles_per_epoch"][0] if r["available"] else None),
    ]
