"""Each check behind a claim on the loader page holds on a supporting result and fails on a contradiction.

Checks on counts, layouts and bits are fed the real experiments at small size. Checks on timings are fed
synthetic results shaped like the real ones (``tests/test_experiments_loader.py`` compares their shape with the
real results' and runs every check on the real ones), so no outcome here depends on how fast this machine is.

Timing checks decide from intervals: their synthetic rows carry the rounds (timed in alternation) or the blocks
(timed one after the other) that a real result stores. Steady ones decide; a straddling one — its repeats spread
around the claim's threshold — leaves the check undecided: neither holding nor failing the build.
"""

from __future__ import annotations

import copy

import pytest

from checks_support import Contradiction, Measured, Synthetic, assert_check_can_fail
from snippets.experiments.loader import checks, measure  # noqa: F401
from snippets.lab import say
from snippets.lab.claims import topic_checks

pytestmark = pytest.mark.measures  # CI runs this file on its first Python only (.ci/run)

CHECKS = topic_checks()  # every topic's checks, by name


def _set(path: list, value):
    def edit(result: dict) -> None:
        target = result
        for key in path[:-1]:
            target = target[key]
        target[path[-1]] = value
    return edit


# Relative times of the repeats: steady (a few % apart) and straddling (±40 %, around the median).
STEADY = (1.0, 1.01, 0.99, 1.02, 0.98, 1.0, 1.01, 0.99)
WIDE = (0.3, 1.7, 0.4, 1.6, 0.5, 1.5, 0.6, 1.4)


def _timed(label: str, median: float, kind: str = "samples", jitter: tuple = STEADY, **extra) -> dict:
    """A timing row as ``measure._timing_row`` writes it: ``kind`` "rounds" for timings made in alternation
    (``timing.interleaved``), "samples" for one ``timing.measure`` (its blocks)."""
    repeats = [median * j for j in jitter]
    spread = {"rounds": repeats} if kind == "rounds" else {"samples": repeats}
    return {"label": label, "median": median, "iqr": median / 20, "min": min(repeats), "max": max(repeats),
            "blocks": 12, "runs": 120, **spread, **extra}


def _retime(row: dict, median: float, jitter: tuple | None = None) -> None:
    """Give a timing row another median, its repeats scaled with it (or spread by ``jitter``)."""
    key = "rounds" if "rounds" in row else "samples"
    if jitter is None:
        row[key] = [value * median / row["median"] for value in row[key]]
    else:
        row[key] = [median * j for j in jitter]
    row.update(median=median, min=min(row[key]), max=max(row[key]))


def _row(result: dict, key: str, **match) -> dict:
    return next(r for r in result[key] if all(r[k] == v for k, v in match.items()))


# ---------------------------------------------------------------------------------------------------------
# Real experiments, small: checks that do not depend on timings

QUESTION = Measured(measure.question_timing, (("compared_epochs", 10), ("rounds", 1), ("min_run_time", 0.01)))
BREAKDOWN = Measured(measure.breakdown, (("n", 200), ("rounds", 1), ("min_run_time", 0.01)))
STRIDED = Measured(measure.strided_source, (("n", 200), ("columns", 4), ("rounds", 3), ("min_run_time", 0.01)))
COMPILE = Measured(measure.compile_recompiles, (("n", 20), ("batch_size", 8), ("epochs", 2)))
CONTRACT = Measured(measure.contract, (("sizes", (1, 7, 30)), ("batch_sizes", (1, 4, 40)), ("epochs", 2)))
COUNTS = Measured(measure.counts, (("n", 1000), ("epochs", 10)))
SHARDS = Measured(measure.distributed_shards, (("world_size", 2), ("sizes", (5, 8)), ("batch_sizes", (1, 3)),
                                               ("epochs", 2)))


# ---------------------------------------------------------------------------------------------------------
# Synthetic timings, shaped like the real results


def question_times() -> dict:
    same = {name: {"losses_identical": True, "first_different_epoch": None, "weights_identical": True,
                   "final_loss": 11.5} for name in ("direct", "DataLoader", "DataLoader + BatchSampler",
                                                    "DataLoader + BatchedTensorDataset", "TensorLoader")}
    return {"n": 1000, "epochs": 2000, "compared_epochs": 300, "device": "cpu", "same": same,
            "rows": [_timed("direct", 1.0e-4, "rounds", timed_epochs=800),
                     _timed("DataLoader", 8.0e-4, "rounds", timed_epochs=150),
                     _timed("DataLoader + BatchSampler", 1.6e-4, "rounds", timed_epochs=600),
                     _timed("DataLoader + BatchedTensorDataset", 1.2e-4, "rounds", timed_epochs=700),
                     _timed("TensorLoader", 1.05e-4, "rounds", timed_epochs=780)]}


def breakdown_times() -> dict:
    stages = [("whole epoch", 1.0e-3), ("the copy alone: clone() of the same bytes", 4.0e-6),
              ("torch.stack of the N one-row tensors: the copy as default_collate makes it", 8.0e-5),
              ("views instead of copies: a TensorLoader epoch (x[0:N], y[0:N])", 5.0e-6)]
    inside = [("whole", 1.2e-3), ("iterator", 1.0e-5), ("sampler", 2.0e-5), ("indexing", 7.0e-4),
              ("collate", 3.5e-4), ("remainder", 1.2e-3 - 1.0e-5 - 2.0e-5 - 7.0e-4 - 3.5e-4)]
    return {"n": 1000, "device": "cpu", "stages": [_timed(label, median, "rounds") for label, median in stages],
            "inside": [_timed(key, median, "rounds", stage=key) for key, median in inside],
            "steps": [_timed("training step on x, y", 1.0e-4, "rounds"),
                      _timed("training step on DataLoader's batch", 1.0e-4, "rounds")]}


def batch_size_times() -> dict:
    per_epoch = {"DataLoader": 5.0e-2, "DataLoader + BatchSampler": 2.0e-2,
                 "DataLoader + BatchedTensorDataset": 3.0e-3, "TensorLoader": 1.0e-3,
                 "hand-written loop": 1.1e-3}
    points = [_timed(name, base / size ** 0.5, "rounds", shuffle=shuffle, batch_size=size)
              for shuffle in (False, True) for size in (1, 100, 10_000) for name, base in per_epoch.items()]
    return {"n": 10_000, "device": "cpu", "batch_sizes": [1, 100, 10_000], "points": points}


def size_times() -> dict:
    points = []
    for shuffle in (False, True):
        gather = 1e-8 if shuffle else 0.0  # a shuffled batch copies every sample, whoever gathers it
        for n in (100, 1000, 10_000):
            for name, epoch in (("DataLoader", 5e-6 * n), ("DataLoader + BatchSampler", 1e-7 * n),
                                ("DataLoader + BatchedTensorDataset", 2e-5 + 5e-8 * n),
                                ("TensorLoader", 5e-6 + gather * n), ("hand-written loop", 4e-6 + gather * n)):
                points.append(_timed(name, epoch, "rounds", shuffle=shuffle, n=n))
    return {"device": "cpu", "sizes": [100, 1000, 10_000], "per_sample_limit": 10_000, "points": points}


BATCHES = 16


def _step_row(model: str, step: float, dataloader: float, tensorloader: float) -> dict:
    """A step_share row: per-batch medians, and the three timings (loaders per epoch) made in alternation."""
    per_batch = {"DataLoader": dataloader, "TensorLoader": tensorloader}
    return {"model": model, "step": step, **per_batch,
            "timings": {"step": _timed("step", step, "rounds"),
                        **{name: _timed(name, value * BATCHES, "rounds") for name, value in per_batch.items()}}}


def step_times() -> dict:
    return {"batch_size": 128, "batches": BATCHES, "device": "cpu", "rows": [
        _step_row("question's MLP 1→10→1, MSE", 1.0e-4, 1.0e-4, 5.0e-6),
        _step_row("MLP 784→512→512→10, cross-entropy", 2.0e-3, 1.0e-4, 5.0e-6),
    ]}


def worker_times() -> dict:
    medians = {1000: {"num_workers=0": 1.0e-3, "num_workers=1": 5.0e-2, "num_workers=2": 6.0e-2,
                      "num_workers=2, persistent_workers=True": 1.2e-3, "TensorLoader": 1.0e-5},
               10_000: {"num_workers=0": 1.0e-2, "num_workers=1": 3.0e-2, "num_workers=2": 2.5e-2,
                        "num_workers=2, persistent_workers=True": 8.0e-3, "TensorLoader": 1.0e-4}}
    settings = [[1000, 1000], [10_000, 250]]
    rows = [_timed(label, median, "rounds", n=n, batch_size=batch_size)
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
                rows.append(_timed(label, 64 * 2**20 / speed / 1e9, "rounds", width=width, rows=count, gbps=speed))
    return {"megabytes": 64, "device": "cpu", "widths": [16, 256, 4096], "rows": rows,
            "per_sample_limit": 65_536, "batch_sampler_limit": 131_072}


def pin_times() -> dict:
    """A CUDA result: copy and compute about equal, overlapped on a side stream from pinned memory."""
    medians = {"copy alone (pinned, non_blocking=True)": 2.0e-2, "compute alone": 2.0e-2,
               "pageable, .to(device), then compute": 5.0e-2,
               "pinned, .to(device, non_blocking=True), then compute": 4.0e-2,
               "pageable, next batch copied on a side stream": 4.5e-2,
               "pinned, next batch copied on a side stream": 2.2e-2}
    return {"device": "cuda:0", "accelerator": "cuda", "warnings": [], "batch_is_pinned": True, "megabytes": 64,
            "matmul_size": 4096, "steps": 8,
            "rows": [_timed(label, median, "rounds") for label, median in medians.items()]}


QUESTION_TIMES = Synthetic(question_times)
PIN_TIMES = Synthetic(pin_times)
BREAKDOWN_TIMES = Synthetic(breakdown_times)
BATCH_SIZE_TIMES = Synthetic(batch_size_times)
SIZE_TIMES = Synthetic(size_times)
STEP_TIMES = Synthetic(step_times)
WORKER_TIMES = Synthetic(worker_times)
BANDWIDTH_TIMES = Synthetic(bandwidth_times)


def _stage(prefix: str, median: float, jitter: tuple | None = None):
    def edit(result: dict) -> None:
        _retime(next(r for r in result["stages"] if r["label"].startswith(prefix)), median, jitter)
    return edit


def _inside(key: str, median: float, jitter: tuple | None = None):
    def edit(result: dict) -> None:
        _retime(next(r for r in result["inside"] if r["stage"] == key), median, jitter)
    return edit


def _question(label: str, median: float, jitter: tuple | None = None):
    def edit(result: dict) -> None:
        _retime(_row(result, "rows", label=label), median, jitter)
    return edit


def _one_close_batch_size(factor: float, jitter: tuple | None = None):
    def edit(result: dict) -> None:
        tensorloader = _row(result, "points", label="TensorLoader", shuffle=True, batch_size=100)
        _retime(_row(result, "points", label="DataLoader", shuffle=True, batch_size=100),
                factor * tensorloader["median"], jitter)
    return edit


def _tensorloader_per_sample(fraction: float, jitter: tuple | None = None):
    """TensorLoader's shuffled epoch at N = 10,000 as ``fraction`` of DataLoader's at the same N."""
    def edit(result: dict) -> None:
        dataloader = _row(result, "points", label="DataLoader", n=10_000, shuffle=True)
        _retime(_row(result, "points", label="TensorLoader", n=10_000, shuffle=True), dataloader["median"] * fraction,
                jitter)
    return edit


def _per_batch(index: int, name: str, value: float, jitter: tuple | None = None):
    """Another per-batch time for one step_share row's loader (or its training step, ``name="step"``)."""
    def edit(result: dict) -> None:
        row = result["rows"][index]
        row[name] = value
        _retime(row["timings"][name], value if name == "step" else value * result["batches"], jitter)
    return edit


def _worker(label: str, n: int, median: float, jitter: tuple | None = None):
    def edit(result: dict) -> None:
        _retime(_row(result, "rows", label=label, n=n), median, jitter)
    return edit


def _gbps(label: str, width: int, value: float, jitter: tuple | None = None):
    def edit(result: dict) -> None:
        row = _row(result, "rows", label=label, width=width)
        _retime(row, 64 * 2**20 / value / 1e9, jitter)
        row["gbps"] = value
    return edit


CONTRADICTING = {
    "loader.question_runs_identical": Contradiction(
        QUESTION, lambda r: r["same"]["TensorLoader"].update(losses_identical=False, first_different_epoch=3)),
    "loader.dataloader_slower": Contradiction(QUESTION_TIMES, _question("DataLoader", 2.5e-4)),
    # DataLoader only 4x DataLoader + BatchedTensorDataset
    "loader.batched_dataset_faster": Contradiction(QUESTION_TIMES, _question("DataLoader + BatchedTensorDataset",
                                                                             2.0e-4)),
    "loader.tensor_dataset_has_no_getitems": Contradiction(BREAKDOWN, _set(["tensor_dataset_getitems"], True)),
    "loader.getitem_per_sample": Contradiction(BREAKDOWN, _set(["calls", "getitem_per_epoch"], 400)),
    # a torch whose TensorDataset fetched a batch at once (__getitems__): two indexings, nothing stacked
    "loader.dataloader_counts_per_sample": Contradiction(
        COUNTS, lambda r: _row(r, "rows", label="DataLoader").update(indexing=2, stacked=0)),
    # TensorLoader indexing once per sample
    "loader.others_count_per_batch": Contradiction(
        COUNTS, lambda r: _row(r, "rows", label="TensorLoader").update(indexing=600)),
    # a TensorLoader epoch that sets off a collection, or a DataLoader one that sets off none
    "loader.only_per_sample_loader_collects": Contradiction(
        COUNTS, lambda r: _row(r, "rows", label="TensorLoader").update(collections=[1, 0, 0])),
    # DataLoader's batch of a strided source keeping the source's strides
    "loader.strided_source_made_contiguous": Contradiction(STRIDED, _set(["layout", "batch_contiguous"], False)),
    # the strided column copied to a contiguous one before the step: one more copy than on the contiguous batch
    "loader.strided_step_runs_the_same_operators": Contradiction(
        STRIDED, lambda r: r["operators"]["column"].update({"aten::contiguous": 1})),
    "loader.iterator_negligible": Contradiction(BREAKDOWN_TIMES, _inside("iterator", 1.0e-4)),
    "loader.copy_negligible": Contradiction(BREAKDOWN_TIMES, _stage("the copy", 8.0e-5)),
    "loader.per_sample_dominates": Contradiction(BREAKDOWN_TIMES, _inside("indexing", 1.5e-4)),
    "loader.stack_copy_costly": Contradiction(BREAKDOWN_TIMES, _stage("torch.stack", 1.6e-5)),  # 4x clone()
    "loader.dataloader_slower_at_every_batch_size": Contradiction(BATCH_SIZE_TIMES, _one_close_batch_size(1.5)),
    "loader.per_sample_cost_ratio": Contradiction(SIZE_TIMES, _tensorloader_per_sample(1 / 10)),
    "loader.small_model_dataloader_share": Contradiction(STEP_TIMES, _per_batch(0, "TensorLoader", 5.0e-5)),
    "loader.larger_model_smaller_share": Contradiction(STEP_TIMES, _per_batch(1, "step", 1.0e-5)),
    "loader.tensorloader_share_small": Contradiction(STEP_TIMES, _per_batch(0, "TensorLoader", 2.0e-5)),
    "loader.fresh_workers_slower": Contradiction(WORKER_TIMES, _worker("num_workers=1", 1000, 1.5e-3)),
    # the fastest DataLoader configuration (persistent workers, 8 ms) only 2x TensorLoader's time
    "loader.tensorloader_beats_workers": Contradiction(WORKER_TIMES, _worker("TensorLoader", 10_000, 4.0e-3)),
    "loader.dataloader_narrow_rows_slow": Contradiction(BANDWIDTH_TIMES, _gbps("DataLoader, shuffle=True", 256, 3)),
    "loader.dataloader_wide_rows_closer": Contradiction(BANDWIDTH_TIMES, _gbps("DataLoader, shuffle=True", 4096, 0.5)),
    # clone() faster than copy_() with the widest rows (as where freed memory is reused)
    "loader.fresh_memory_slower": Contradiction(BANDWIDTH_TIMES, _gbps("clone(): copy, no gather", 4096, 12)),
    # no overlap: the side stream as slow as copying on the compute stream
    "loader.pinned_copy_overlaps": Contradiction(PIN_TIMES, _question("pinned, next batch copied on a side stream",
                                                                      4.2e-2)),
    # torch.compile that kept its static shapes: a third graph in the second epoch
    "loader.short_last_batch_recompiles": Contradiction(
        COMPILE, lambda r: r["settings"][0].update(compiles_per_epoch=[2, 1], dynamic=[False, False, False])),
    "loader.one_compile_with_drop_last_or_mark_dynamic": Contradiction(
        COMPILE, lambda r: r["settings"][2].update(compiles_per_epoch=[2, 0])),
    "loader.tensorloader_matches_dataloader": Contradiction(
        CONTRACT, lambda r: r["failures"].append({"n": 7, "batch_size": 4, "shuffle": True, "drop_last": False,
                                                   "generator": True})),
    "loader.batched_dataset_matches_dataloader": Contradiction(
        CONTRACT, lambda r: r["batched"]["failures"].append({"world_size": 3, "rank": 2, "shuffle": True,
                                                              "drop_last": False})),
    "loader.persistent_workers_draw_once": Contradiction(
        CONTRACT, _set(["rng", "advanced", "num_workers=2, persistent_workers=True"], [True, True, True])),
    "loader.workers_draw_sampler_seed_at_iter": Contradiction(
        CONTRACT, _set(["rng", "sampler_at_iter", "num_workers=2"], False)),
    # one rank's shard of one epoch differs from DistributedSampler's
    "loader.tensorloader_shards_like_distributed_sampler": Contradiction(
        SHARDS, lambda r: r["failures"].append("rank 1, N=8, batch size 3, shuffle=True, drop_last=False, epoch 1")),
    # one rank iterated over the whole dataset without a word
    "loader.unsharded_tensorloader_refuses_in_a_group": Contradiction(SHARDS, _set(["refused", 1], "")),
}


@pytest.mark.parametrize("name", sorted(CONTRADICTING))
def test_check_holds_on_a_supporting_result_and_fails_on_a_contradiction(name):
    assert_check_can_fail(name, CONTRADICTING[name])


# ---------------------------------------------------------------------------------------------------------
# Undecided: a timing whose repeats straddle the claim's threshold neither holds nor fails the build

STRADDLING = {
    # one ratio against a threshold: DataLoader at 3x the direct loop, its rounds ±40 %
    "loader.dataloader_slower": (QUESTION_TIMES, _question("DataLoader", 3.0e-4, WIDE)),
    "loader.batched_dataset_faster": (QUESTION_TIMES, _question("DataLoader + BatchedTensorDataset", 1.6e-4, WIDE)),
    # shares of the epoch, from the same rounds: 5 % for "< 5 %", 50 % for "> half"
    "loader.iterator_negligible": (BREAKDOWN_TIMES, _inside("iterator", 6.0e-5, WIDE)),
    "loader.copy_negligible": (BREAKDOWN_TIMES, _stage("the copy", 5.0e-5, WIDE)),
    "loader.per_sample_dominates": (BREAKDOWN_TIMES, _inside("indexing", 2.5e-4, WIDE)),
    "loader.stack_copy_costly": (BREAKDOWN_TIMES, _stage("torch.stack", 2.0e-5, WIDE)),  # 5x clone()
    # every row must decide: one row at the threshold, the others far above it
    "loader.dataloader_slower_at_every_batch_size": (BATCH_SIZE_TIMES, _one_close_batch_size(2.0, WIDE)),
    "loader.fresh_workers_slower": (WORKER_TIMES, _worker("num_workers=2", 1000, 2.0e-3, WIDE)),
    "loader.tensorloader_beats_workers": (WORKER_TIMES, _worker("TensorLoader", 10_000, 8.0e-3 / 5, WIDE)),
    # two epochs at the same N: 20x
    "loader.per_sample_cost_ratio": (SIZE_TIMES, _tensorloader_per_sample(1 / 20, WIDE)),
    # a share from a ratio: TensorLoader at 10 % of a step (per batch 1/9 of the step)
    "loader.tensorloader_share_small": (STEP_TIMES, _per_batch(0, "TensorLoader", 1.0e-4 / 9, WIDE)),
    # two intervals compared by their bounds: 50 % against 5 x 10 %; 50 % against 50 %
    "loader.small_model_dataloader_share": (STEP_TIMES, _per_batch(0, "TensorLoader", 1.0e-4 / 9, WIDE)),
    "loader.larger_model_smaller_share": (STEP_TIMES, _per_batch(1, "step", 1.0e-4, WIDE)),
    # throughput shares: DataLoader at half of TensorLoader's GB/s; as close with wide rows as with narrow ones
    "loader.dataloader_narrow_rows_slow": (BANDWIDTH_TIMES, _gbps("DataLoader, shuffle=True", 256, 2.5, WIDE)),
    "loader.dataloader_wide_rows_closer": (BANDWIDTH_TIMES, _gbps("DataLoader, shuffle=True", 4096, 5.4 / 5, WIDE)),
    "loader.pinned_copy_overlaps": (PIN_TIMES, _question("pinned, next batch copied on a side stream", 4.0e-2, WIDE)),
    "loader.fresh_memory_slower": (BANDWIDTH_TIMES, _gbps("clone(): copy, no gather", 256, 10, WIDE)),
}
TIMING_CHECKS = sorted(name for name, case in CONTRADICTING.items() if isinstance(case.source, Synthetic))


def test_every_timing_check_decides_from_an_interval_and_has_a_straddling_case():
    assert TIMING_CHECKS and sorted(STRADDLING) == TIMING_CHECKS
    assert all(CHECKS[name].timing for name in TIMING_CHECKS)
    assert not any(CHECKS[name].timing for name in CONTRADICTING if name not in TIMING_CHECKS)


@pytest.mark.parametrize("name", sorted(STRADDLING))
def test_a_straddling_timing_is_undecided_not_passed_and_not_a_failed_build(name):
    source, straddle = STRADDLING[name]
    value = copy.deepcopy(source.value())
    straddle(value)
    outcome = CHECKS[name](value)
    assert outcome.holds is None and outcome.status == "undecided", f"{name}: {outcome.status}, {outcome.measured()}"
    low, high = outcome.values["low"], outcome.values["high"]
    assert low is not None and high is not None and low < high
    shown = say(outcome, "sentence")  # no ClaimError: noise never fails the build
    assert "pitfalls-claim--undecided" in shown and "undecided on this machine" in shown


@pytest.mark.parametrize("name", TIMING_CHECKS)
def test_a_timing_without_repeats_decides_nothing(name):
    """Rows with fewer than three rounds or blocks have no interval: the check is undecided, whatever the medians."""
    value = copy.deepcopy(CONTRADICTING[name].source.value())
    _each_row(value, _two_repeats)
    outcome = CHECKS[name](value)
    assert outcome.holds is None, f"{name}: {outcome.status}, {outcome.measured()}"


@pytest.mark.parametrize("name", TIMING_CHECKS)
@pytest.mark.parametrize("case", ["straddling", "no repeats", "disturbed"])
def test_an_undecided_check_says_every_value_in_the_pages_language(name, case, monkeypatch):
    """What an undecided claim's tip lists is read by a reader, in English or Chinese: no Python ``None`` (a
    missing bound, an unmeasured share) reaches it, and a ratio of ratios made from rows measured while the
    machine drifted is itself marked drifted, its interval widened for it (and decided on that interval)."""
    from snippets.lab import context

    value = copy.deepcopy(CONTRADICTING[name].source.value())
    if case == "straddling":
        STRADDLING[name][1](value)
    elif case == "no repeats":
        _each_row(value, _two_repeats)
    else:
        _each_row(value, lambda row: row.update(drifted=True))
    outcome = CHECKS[name](value)
    if case == "disturbed":
        # drift widens the interval (timing.widened) and never vetoes: the same result measured while the machine
        # drifted is decided as on a quiet machine, and says it was disturbed
        quiet = CHECKS[name](copy.deepcopy(CONTRADICTING[name].source.value()))
        assert quiet.holds is True and outcome.holds is True, f"{name}: {outcome.status}, {outcome.measured()}"
        assert outcome.values.get("drifted") is True, outcome.measured()
        assert outcome.values["low"] < quiet.values["low"], "drift widens the interval"
    else:
        assert outcome.holds is None, f"{name}: {outcome.status}, {outcome.measured()}"
    for language, none in (("en", "n/a"), ("zh", "未计算")):
        monkeypatch.setattr(context.current(), "language", language)
        measured = outcome.measured()
        assert "None" not in measured, f"{name} ({language}): {measured}"
        if outcome.values["low"] is None:
            assert f"low = {none}" in measured, measured


def _two_repeats(row: dict) -> None:
    """Keep a timing row's first two rounds or blocks: too few for an interval."""
    row.update({key: row[key][:2] for key in ("rounds", "samples") if key in row})


def _each_row(node, edit) -> None:
    """``edit`` every timing row (a dict with rounds or samples) inside a result."""
    if isinstance(node, dict):
        if "rounds" in node or "samples" in node:
            edit(node)
        for item in node.values():
            _each_row(item, edit)
    elif isinstance(node, list):
        for item in node:
            _each_row(item, edit)


def test_a_share_is_never_clipped_and_the_stages_inside_add_up_to_the_epoch():
    """A stage whose rounds reach past the epoch shows an interval past 100%: nothing is clipped; the stages timed
    inside the epoch and the remainder add up to it."""
    from snippets.experiments.loader import derive

    result = breakdown_times()
    indexing = next(r for r in result["inside"] if r["stage"] == "indexing")
    whole = next(r for r in result["inside"] if r["stage"] == "whole")
    indexing["rounds"] = [w * j for w, j in zip(whole["rounds"], (0.8, 0.95, 1.0, 1.05, 1.25, 0.9, 0.9, 0.9))]
    shares = derive.breakdown_shares(result)
    assert shares["indexing"]["high"] > 1.0, "an interval that reaches past the whole epoch is shown as it is"
    result = breakdown_times()
    shares = derive.breakdown_shares(result)
    assert sum(shares[key]["value"] for key in derive.INSIDE_KEYS) == pytest.approx(1.0)


@pytest.mark.parametrize("name", TIMING_CHECKS)
def test_a_checked_sentence_states_the_bound_that_was_checked(name):
    """Each timing check reports the bound it decided on, the value printed beside it is the one decided, and the
    bound is the one its condition names: the printed bound is the checked one."""
    from snippets.lab.render import measured
    from snippets.lab.timing import decide

    outcome = CHECKS[name](copy.deepcopy(CONTRADICTING[name].source.value()))
    values = outcome.values
    assert {"relation", "threshold", "low", "high"} <= set(values), f"{name} reports no checked bound: {values}"
    key = next(k for k in ("ratio", "share", "smallest_ratio") if k in values)
    percent = key == "share" or "%" in CHECKS[name].condition.split(" than ")[-1][:12]
    text = measured(values, key, percent=percent)
    bound = f"{values['threshold'] * 100:g}%" if percent else f"{values['threshold']:g}×"
    word = "more than" if values["relation"] == ">" else "less than"
    assert text.endswith(f"; checked: {word} {bound})") or text.endswith(f"(checked: {word} {bound})"), text
    assert "noisy" not in text
    interval = {"value": values[key], "low": values["low"], "high": values["high"]}
    assert decide(interval, values["relation"], values["threshold"]) is outcome.holds
    number = values["threshold"] * 100 if percent else values["threshold"]
    condition = CHECKS[name].condition
    assert f"{number:g}" in condition or (number == 50 and "half" in condition) or number == 1, (
        f"{name}: the condition {condition!r} does not name the bound {bound} it checks")
