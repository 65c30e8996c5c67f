"""Each check behind a claim on the loader page holds on a supporting result and fails on a contradiction.

Checks on counts, layouts and bits are fed the real experiments at small size. Checks on timings are fed
synthetic results shaped like the real ones (``tests/test_experiments_loader.py`` compares their shape with the
real results' and runs every check on the real ones), so no outcome here depends on how fast this machine is.
"""

from __future__ import annotations

import pytest

from checks_support import Contradiction, Measured, Synthetic, assert_check_can_fail
from snippets.experiments.loader import checks, measure  # noqa: F401  (registers the checks)


def _set(path: list, value):
    def edit(result: dict) -> None:
        target = result
        for key in path[:-1]:
            target = target[key]
        target[path[-1]] = value
    return edit


def _timed(label: str, median: float, **extra) -> dict:
    """A timing row as ``measure._timing_row`` writes it."""
    return {"label": label, "median": median, "iqr": median / 20, "min": median * 0.9, "max": median * 1.5,
            "blocks": 12, "runs": 120, **extra}


def _row(result: dict, key: str, **match) -> dict:
    return next(r for r in result[key] if all(r[k] == v for k, v in match.items()))


# ---------------------------------------------------------------------------------------------------------
# Real experiments, small: checks that do not depend on timings

QUESTION = Measured(measure.question_timing, (("compared_epochs", 10), ("rounds", 1), ("min_run_time", 0.01)))
BREAKDOWN = Measured(measure.breakdown, (("n", 200), ("rounds", 1), ("min_run_time", 0.01)))
CONTRACT = Measured(measure.contract, (("sizes", (1, 7, 30)), ("batch_sizes", (1, 4, 40)), ("epochs", 2)))


# ---------------------------------------------------------------------------------------------------------
# Synthetic timings, shaped like the real results


def question_times() -> dict:
    same = {name: {"losses_identical": True, "first_different_epoch": None, "weights_identical": True,
                   "final_loss": 11.5} for name in ("direct", "DataLoader", "DataLoader + BatchSampler", "TensorLoader")}
    return {"n": 1000, "epochs": 2000, "compared_epochs": 300, "device": "cpu", "same": same,
            "rows": [_timed("direct", 1.0e-4, timed_epochs=800), _timed("DataLoader", 8.0e-4, timed_epochs=150),
                     _timed("DataLoader + BatchSampler", 1.6e-4, timed_epochs=600),
                     _timed("TensorLoader", 1.05e-4, timed_epochs=780)]}


def breakdown_times() -> dict:
    stages = [("whole epoch", 1.0e-3), ("iter(loader): create the iterator", 1.0e-5),
              ("sampler: the list of indices", 2.0e-5), ("dataset[i] for each of the N samples", 6.0e-4),
              ("default_collate: stack the N samples", 3.0e-4), ("the copy alone: clone() of the same bytes", 4.0e-6)]
    return {"n": 1000, "device": "cpu", "stages": [_timed(label, median) for label, median in stages],
            "steps": [_timed("training step on x, y", 1.0e-4), _timed("training step on DataLoader's batch", 1.0e-4)]}


def batch_size_times() -> dict:
    per_epoch = {"DataLoader": 5.0e-2, "DataLoader + BatchSampler": 2.0e-2, "TensorLoader": 1.0e-3,
                 "hand-written loop": 1.1e-3}
    points = [_timed(name, base / size ** 0.5, shuffle=shuffle, batch_size=size)
              for shuffle in (False, True) for size in (1, 100, 10_000) for name, base in per_epoch.items()]
    return {"n": 10_000, "device": "cpu", "batch_sizes": [1, 100, 10_000], "points": points}


def size_times() -> dict:
    points = []
    for n in (100, 1000, 10_000):
        for name, epoch in (("DataLoader", 5e-6 * n), ("DataLoader + BatchSampler", 1e-7 * n),
                            ("TensorLoader", 5e-6), ("hand-written loop", 4e-6)):
            points.append(_timed(name, epoch, shuffle=False, n=n))
    return {"device": "cpu", "sizes": [100, 1000, 10_000], "per_sample_limit": 10_000, "points": points}


def step_times() -> dict:
    return {"batch_size": 128, "batches": 16, "device": "cpu", "rows": [
        {"model": "question's MLP 1→10→1, MSE", "step": 1.0e-4, "DataLoader": 1.0e-4, "TensorLoader": 5.0e-6},
        {"model": "MLP 784→512→512→10, cross-entropy", "step": 2.0e-3, "DataLoader": 1.0e-4, "TensorLoader": 5.0e-6},
    ]}


def worker_times() -> dict:
    medians = {1000: {"num_workers=0": 1.0e-3, "num_workers=1": 5.0e-2, "num_workers=2": 6.0e-2,
                      "num_workers=2, persistent_workers=True": 1.2e-3, "TensorLoader": 1.0e-5},
               10_000: {"num_workers=0": 1.0e-2, "num_workers=1": 3.0e-2, "num_workers=2": 2.5e-2,
                        "num_workers=2, persistent_workers=True": 8.0e-3, "TensorLoader": 1.0e-4}}
    settings = [[1000, 1000], [10_000, 250]]
    rows = [_timed(label, median, n=n, batch_size=batch_size)
            for n, batch_size in settings for label, median in medians[n].items()]
    return {"settings": settings, "rows": rows, "threads": 2}


def bandwidth_times() -> dict:
    gbps = {16: {"copy_()": 10, "clone()": 6, "index_select": 3, "TensorLoader": 2.5},
            256: {"copy_()": 10, "clone()": 6, "index_select": 5, "TensorLoader": 5, "DataLoader + BatchSampler": 3,
                  "DataLoader, shuffle": 1},
            4096: {"copy_()": 10, "clone()": 6, "index_select": 5.5, "TensorLoader": 5.4,
                   "DataLoader + BatchSampler": 5, "DataLoader, shuffle": 4}}
    labels = ["copy_() into an existing tensor: no allocation", "clone(): copy, no gather",
              "index_select with a fixed permutation: gather only", "TensorLoader, shuffle=True: permutation + gather",
              "DataLoader + BatchSampler, shuffled", "DataLoader, shuffle=True"]
    rows = []
    for width, speeds in gbps.items():
        count = 64 * 2**20 // (4 * width)
        for label in labels:
            speed = next((v for k, v in speeds.items() if label.startswith(k)), None)
            if speed is None:  # over the experiment's limit: not run
                rows.append({"label": label, "width": width, "rows": count, "median": None})
            else:
                rows.append(_timed(label, 64 * 2**20 / speed / 1e9, width=width, rows=count, gbps=speed))
    return {"megabytes": 64, "device": "cpu", "widths": [16, 256, 4096], "rows": rows,
            "per_sample_limit": 65_536, "batch_sampler_limit": 131_072}


QUESTION_TIMES = Synthetic(question_times)
BREAKDOWN_TIMES = Synthetic(breakdown_times)
BATCH_SIZE_TIMES = Synthetic(batch_size_times)
SIZE_TIMES = Synthetic(size_times)
STEP_TIMES = Synthetic(step_times)
WORKER_TIMES = Synthetic(worker_times)
BANDWIDTH_TIMES = Synthetic(bandwidth_times)


def _stage(prefix: str, median: float):
    def edit(result: dict) -> None:
        next(r for r in result["stages"] if r["label"].startswith(prefix))["median"] = median
    return edit


def _one_close_batch_size(result: dict) -> None:
    tensorloader = _row(result, "points", label="TensorLoader", shuffle=True, batch_size=100)
    _row(result, "points", label="DataLoader", shuffle=True, batch_size=100)["median"] = 1.5 * tensorloader["median"]


def _tensorloader_per_sample_close(result: dict) -> None:
    dataloader = _row(result, "points", label="DataLoader", n=10_000)
    _row(result, "points", label="TensorLoader", n=10_000)["median"] = dataloader["median"] / 50


def _workers_close_to_tensorloader(result: dict) -> None:
    _row(result, "rows", label="TensorLoader", n=10_000)["median"] = 4.0e-3  # the fastest DataLoader: 2x


def _gbps(label: str, width: int, value: float):
    def edit(result: dict) -> None:
        _row(result, "rows", label=label, width=width)["gbps"] = value
    return edit


CONTRADICTING = {
    "loader.question_runs_identical": Contradiction(
        QUESTION, lambda r: r["same"]["TensorLoader"].update(losses_identical=False, first_different_epoch=3)),
    "loader.dataloader_slower": Contradiction(QUESTION_TIMES, lambda r: _row(r, "rows", label="DataLoader")
                                              .update(median=2.5e-4)),
    "loader.getitem_per_sample": Contradiction(BREAKDOWN, _set(["calls", "getitem_per_epoch"], 400)),
    "loader.collate_one_list": Contradiction(BREAKDOWN, _set(["calls", "collate_sizes"], [100, 100])),
    "loader.batch_sampler_indexes_once": Contradiction(BREAKDOWN, _set(["calls", "batch_sampler_getitem_per_epoch"],
                                                                       200)),
    "loader.batch_is_fresh_copy": Contradiction(BREAKDOWN, _set(["layout", "batch_shares_memory"], True)),
    "loader.source_already_contiguous": Contradiction(BREAKDOWN, _set(["layout", "x_stride"], [2, 1])),
    "loader.iterator_negligible": Contradiction(BREAKDOWN_TIMES, _stage("iter(", 1.0e-4)),
    "loader.copy_negligible": Contradiction(BREAKDOWN_TIMES, _stage("the copy", 8.0e-5)),
    "loader.per_sample_dominates": Contradiction(BREAKDOWN_TIMES, _stage("dataset[i]", 1.5e-4)),
    "loader.dataloader_slower_at_every_batch_size": Contradiction(BATCH_SIZE_TIMES, _one_close_batch_size),
    "loader.per_sample_cost_ratio": Contradiction(SIZE_TIMES, _tensorloader_per_sample_close),
    "loader.small_model_dataloader_share": Contradiction(STEP_TIMES, _set(["rows", 0, "TensorLoader"], 5.0e-5)),
    "loader.larger_model_smaller_share": Contradiction(STEP_TIMES, _set(["rows", 1, "step"], 1.0e-5)),
    "loader.tensorloader_share_small": Contradiction(STEP_TIMES, _set(["rows", 0, "TensorLoader"], 2.0e-5)),
    "loader.fresh_workers_slower": Contradiction(WORKER_TIMES, lambda r: _row(r, "rows", label="num_workers=1", n=1000)
                                                 .update(median=1.5e-3)),
    "loader.tensorloader_beats_workers": Contradiction(WORKER_TIMES, _workers_close_to_tensorloader),
    "loader.dataloader_narrow_rows_slow": Contradiction(BANDWIDTH_TIMES, _gbps("DataLoader, shuffle=True", 256, 3)),
    "loader.dataloader_wide_rows_closer": Contradiction(BANDWIDTH_TIMES, _gbps("DataLoader, shuffle=True", 4096, 0.5)),
    "loader.tensorloader_matches_dataloader": Contradiction(
        CONTRACT, lambda r: r["failures"].append({"n": 7, "batch_size": 4, "shuffle": True, "drop_last": False,
                                                   "generator": True})),
    "loader.sequential_batch_is_view": Contradiction(CONTRACT, _set(["memory", "sequential_is_view"], False)),
    "loader.shuffled_batch_is_copy": Contradiction(CONTRACT, _set(["memory", "shuffled_is_copy"], False)),
}


@pytest.mark.parametrize("name", sorted(CONTRADICTING))
def test_check_holds_on_a_supporting_result_and_fails_on_a_contradiction(name):
    assert_check_can_fail(name, CONTRADICTING[name])
