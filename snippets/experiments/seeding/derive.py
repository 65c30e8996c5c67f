"""The seeding page's named values: what its sentences say of a result beyond a check's values or a figure, counted
from the result. Both languages' pages name the same values; each words them in its own language.
"""

from __future__ import annotations

from typing import Any, Callable

from snippets.lab import versions
from snippets.lab.cache import Result

from . import figures


def creation_split(result: Result) -> dict[str, Any]:
    """Of ``creation_order``: how many parameter tensors of the two models differ after one seed (of ``total``), and
    by at most how much (``apart``); how many are equal when each construction is seeded (of ``reseeded``)."""
    one, again = result["one_seed"], result["reseeded"]
    return {"differ": sum(not row["equal"] for row in one), "total": len(one),
            "apart": max(row["max_abs_diff"] for row in one),
            "equal": sum(row["equal"] for row in again), "reseeded": len(again)}


def unrepeatable(result: Result) -> dict[str, Any]:
    """Of ``deterministic_mode``: the operations that gave more than one result with the flag off (as sentences show
    them), how many results they gave (``spread``: "3" or "2–5"), in how many runs with how many threads, and whether
    ``index_copy_`` is among them (``last``: it keeps whichever write comes last, the others add)."""
    varies = [row for row in result["rows"] if row["distinct_off"] > 1]
    counts = sorted({row["distinct_off"] for row in varies})
    return {"operations": [figures.operation(row["operation"]) for row in varies],
            "spread": f"{counts[0]}–{counts[-1]}" if len(counts) > 1 else str(counts[0]) if counts else "0",
            "runs": result["runs"], "threads": result["threads"],
            "last": any("index_copy_" in row["operation"] for row in varies)}


def cublas_change(result: Result) -> dict[str, Any] | None:
    """Of ``cublas_workspace_config`` on this machine's recorded releases: the last release ``before`` the
    docstring's mention of ``CUBLAS_WORKSPACE_CONFIG`` changed, whether it ``asked`` for the variable, and the
    first release ``after``; None where every recorded release agrees (or fewer than two were recorded)."""
    change = versions.first_change(versions.facts_by_release(result, lambda found: bool(found["documented"])))
    if change is None:
        return None
    before, asked, after, _ = change
    return {"before": before, "asked": asked, "after": after}


def release_facts(rng_consumers: Result, cublas: Result) -> list[tuple[str, Result, Callable[[Result], Any]]]:
    """What the Versions page compares release by release, of these results: ``(label, result, fact)``."""
    return [
        ("the docstring of `use_deterministic_algorithms` asks for `CUBLAS_WORKSPACE_CONFIG`", cublas,
         lambda r: r["documented"]),
        ("int64 draws of a shuffled epoch (the loader's base seed and the sampler's seed)", rng_consumers,
         lambda r: r["by_name"]["one epoch, shuffle=True"]["int64_draws"]),
        ("int64 draws of epoch 2 with `persistent_workers=True`, shuffled", rng_consumers,
         lambda r: r["by_name"]["epoch 2, shuffle=True, num_workers=2, persistent_workers=True"]["int64_draws"]),
        ("the default start method of worker processes (set by Python, not torch)", rng_consumers,
         lambda r: r.fingerprint["start_method"]),
    ]
