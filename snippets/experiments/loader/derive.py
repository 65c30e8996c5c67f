"""DataLoader overhead, numbers derived from results: shared by the figures, the checks and the page's text.

Pure functions of a result (a ``Result`` or its JSON value: both are indexed by key). Nothing here is imported
by ``measure``, so changing how a number is derived re-runs no experiment.
"""

from __future__ import annotations

from typing import Union

from snippets.lab.cache import Result

from .measure import LOADER_NAMES

# TensorLoader's speed targets (checked strictly by benchmarks/tensor_loader_speed.py, reported by the page):
RATIO_TARGET = 1.2  # an epoch, against the cheapest hand-written loop yielding the same batches
SMALL_EPOCH = 50e-6  # ... except where that loop takes less than this per epoch:
SMALL_SLACK = 10e-6  # ... then at most this much slower
TRAINING_TARGET = 1.1  # the question's training loop, against training on the tensors directly

Value = Union[Result, dict]  # a Result or its JSON value: both are indexed by key


def question_ratios(result: Value) -> dict[str, float]:
    """Each loader's median time per epoch in the question's loop, as a multiple of the direct loop's."""
    rows = {row["label"]: row["median"] for row in result["rows"]}
    return {name: rows[name] / rows["direct"] for name in rows}


def stage(result: Value, prefix: str) -> float:
    """The median of the breakdown stage whose label starts with ``prefix``."""
    return next(row["median"] for row in result["stages"] if row["label"].startswith(prefix))


def breakdown_shares(result: Value) -> dict[str, float]:
    """Each stage of a DataLoader epoch as a share of the whole epoch."""
    epoch = stage(result, "whole epoch")
    return {
        "iterator": stage(result, "iter(") / epoch,
        "sampler": stage(result, "sampler") / epoch,
        "indexing": stage(result, "dataset[i]") / epoch,
        "collate": stage(result, "default_collate") / epoch,
        "copy": stage(result, "the copy") / epoch,
    }


def series(points: list[dict], name: str, shuffle: bool, key: str = "batch_size") -> tuple[list, list]:
    """One loader's points, in order: the ``key`` values and the median times."""
    chosen = [p for p in points if p["label"] == name and p["shuffle"] == shuffle]
    return [p[key] for p in chosen], [p["median"] for p in chosen]


def per_sample_costs(result: Value) -> dict[str, dict]:
    """Time per epoch divided by N, at the largest N each loader ran."""
    out = {}
    for name in LOADER_NAMES:
        ns, times = series(result["points"], name, False, key="n")
        out[name] = {"n": ns[-1], "per_sample": times[-1] / ns[-1], "epoch": times[-1]}
    return out


def loader_share(row: dict, name: str) -> float:
    """A loader's time per batch as a share of loader time plus training step time."""
    return row[name] / (row[name] + row["step"])


def worker_rows(result: Value, n: int) -> dict[str, dict]:
    """The workers experiment's rows for dataset size ``n``, by label."""
    return {row["label"]: row for row in result["rows"] if row["n"] == n}


def bandwidth_rows(result: Value, prefix: str) -> dict[int, dict]:
    """The bandwidth rows whose label starts with ``prefix``, by row width."""
    return {r["width"]: r for r in result["rows"] if r["label"].startswith(prefix)}
