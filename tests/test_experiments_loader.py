"""The loader page's experiments at small size: they run, their renderers work, and its checks read them.

No test here asserts a time or a ratio of times: the timing checks' logic is tested on synthetic results in
``tests/test_checks_loader.py``; here they only have to accept the real results' shape.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import torch
from torch.utils.data import DataLoader, TensorDataset

import test_checks_loader
from conftest import made_result
from snippets.experiments.loader import checks, derive, figures, measure
from snippets.lab import Check, environment, render, run
from snippets.lab.cache import ExperimentError, Result

pytestmark = pytest.mark.measures  # CI runs this file on its first Python only (.ci/run)

ROOT = Path(__file__).resolve().parents[1]
PAGE = ROOT / "docs" / "loader-overhead.md"

SMALL = {  # small sizes, few rounds: tests never wait for a noisy machine
    "question_timing": dict(compared_epochs=10, min_run_time=0.02),
    "breakdown": dict(rounds=3, min_run_time=0.02),
    "strided_source": dict(n=200, columns=4, rounds=3, min_run_time=0.02),
    "batch_size_scaling": dict(n=1000, batch_sizes=(1, 100, 1000), rounds=3, min_run_time=0.0),
    "size_scaling": dict(sizes=(100, 1000, 10_000), per_sample_limit=10_000, rounds=3, min_run_time=0.0),
    "step_share": dict(batches=4, min_run_time=0.02),
    "workers": dict(settings=((500, 500), (1000, 250)), rounds=3, min_run_time=0.0),
    "pin_memory": dict(megabytes=4, matmul_size=256, steps=2, n=100, min_run_time=0.01),
    "bandwidth": dict(megabytes=16, per_sample_limit=16_384, batch_sampler_limit=65_536, rounds=3,
                      min_run_time=0.02),
    "contract": dict(sizes=(1, 7, 30), batch_sizes=(1, 4, 40), epochs=2),
    "compile_recompiles": dict(n=20, batch_size=8, epochs=2),
    "distributed_shards": dict(world_size=2, sizes=(5, 8), batch_sizes=(1, 3), epochs=2),
    "counts": dict(epochs=10),
}
# The checks each experiment's result is read by; those marked True depend on timings.
CHECKS = {
    "question_timing": [(checks.question_runs_identical, False), (checks.dataloader_slower, True),
                        (checks.batched_dataset_faster, True)],
    "breakdown": [(checks.tensor_dataset_has_no_getitems, False), (checks.getitem_per_sample, False),
                  (checks.iterator_negligible, True),
                  (checks.copy_negligible, True), (checks.per_sample_dominates, True),
                  (checks.stack_copy_costly, True)],
    "strided_source": [(checks.strided_source_made_contiguous, False),
                       (checks.strided_step_runs_the_same_operators, False)],
    "batch_size_scaling": [(checks.dataloader_slower_at_every_batch_size, True)],
    "size_scaling": [(checks.per_sample_cost_ratio, True)],
    "step_share": [(checks.small_model_dataloader_share, True), (checks.larger_model_smaller_share, True),
                   (checks.tensorloader_share_small, True)],
    "workers": [(checks.fresh_workers_slower, True), (checks.tensorloader_beats_workers, True)],
    "bandwidth": [(checks.dataloader_narrow_rows_slow, True), (checks.dataloader_wide_rows_closer, True),
                  (checks.fresh_memory_slower, True)],
    "compile_recompiles": [(checks.short_last_batch_recompiles, False),
                           (checks.one_compile_with_drop_last_or_mark_dynamic, False)],
    "contract": [(checks.tensorloader_matches_dataloader, False),
                 (checks.batched_dataset_matches_dataloader, False),
                 (checks.persistent_workers_draw_once, False), (checks.workers_draw_sampler_seed_at_iter, False)],
    "distributed_shards": [(checks.tensorloader_shards_like_distributed_sampler, False),
                           (checks.unsharded_tensorloader_refuses_in_a_group, False)],
    "counts": [(checks.dataloader_counts_per_sample, False), (checks.others_count_per_batch, False),
               (checks.only_per_sample_loader_collects, False)],
}
# Checks that read what only a CUDA build measures (tested on synthetic CUDA results in test_checks_loader).
CUDA_CHECKS = {"pin_memory": [(checks.pinned_copy_overlaps, True)]}
if torch.cuda.is_available():
    CHECKS.update(CUDA_CHECKS)
SYNTHETIC = {
    "question_timing": test_checks_loader.question_times, "breakdown": test_checks_loader.breakdown_times,
    "batch_size_scaling": test_checks_loader.batch_size_times, "size_scaling": test_checks_loader.size_times,
    "step_share": test_checks_loader.step_times, "workers": test_checks_loader.worker_times,
    "bandwidth": test_checks_loader.bandwidth_times,
}


@pytest.fixture(scope="module")
def results(tmp_path_factory):
    """Every experiment once, small, through ``run`` with a private cache."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("PITFALLS_CACHE_DIR", str(tmp_path_factory.mktemp("cache")))
        patch.delenv("REFRESH", raising=False)
        # in this process, as every other test's experiments (conftest): a module's fixture is made before the
        # function-scoped fixture that sets this, and would otherwise measure in the build's separate processes
        patch.setenv("PITFALLS_PROCESSES", "1")
        yield {name: _run_as_a_build_does(getattr(measure, name), **params) for name, params in SMALL.items()}


def _run_as_a_build_does(exp, **params):
    """``run``, with the second try a build gives every experiment: one that fails before the pages (``prefetch``)
    is run again by its page. A gloo group's rendezvous can break when another group starts on the machine at the
    same moment (here, the other test process's; in a build, the side-by-side phase's), and did once in CI."""
    try:
        return run(exp, **params)
    except ExperimentError:
        return run(exp, **params)


def test_every_loader_check_is_exercised_here():
    listed = {check.check_name for table in (CHECKS, CUDA_CHECKS) for pairs in table.values() for check, _ in pairs}
    assert listed == set(test_checks_loader.CONTRADICTING)


@pytest.mark.parametrize("name", sorted(CHECKS))
def test_checks_read_the_measured_results(results, name):
    """Every check runs on the real result; those that do not depend on timings hold even at small size."""
    for check, timing in CHECKS[name]:
        outcome = check(results[name])
        assert isinstance(outcome, Check) and outcome.values, check.check_name
        if not timing:
            assert outcome.holds, f"{outcome.name}: {outcome.measured()}"


def _shape(value, depth: int = 0):
    """Keys, and the keys of the first row of each list of rows, without the values."""
    if isinstance(value, dict) and depth < 3:
        return {key: _shape(item, depth + 1) for key, item in value.items()}
    if isinstance(value, list) and value and isinstance(value[0], dict):
        return [_shape(value[0], depth + 1)]
    return None


def _contained(small, large) -> bool:
    if isinstance(small, dict):
        return isinstance(large, dict) and all(k in large and _contained(v, large[k]) for k, v in small.items())
    if isinstance(small, list):
        return isinstance(large, list) and _contained(small[0], large[0])
    return True


@pytest.mark.parametrize("name", sorted(SYNTHETIC))
def test_synthetic_timings_are_shaped_like_the_measured_results(results, name):
    synthetic, measured = _shape(SYNTHETIC[name]()), _shape(results[name].value)
    assert _contained(synthetic, measured), f"{name}: synthetic {synthetic} is not part of measured {measured}"


def test_renderers_produce_tables_and_figures(results):
    r = results
    assert "| direct |" in figures.question_timing(r["question_timing"])
    for render in (figures.breakdown, figures.profile):
        assert "pitfalls-stamp" in render(r["breakdown"])
    numbers = figures.verdict_numbers(r["breakdown"])
    assert numbers["bytes"] == 1000 * 4 * 2 and 0 < numbers["iterator_share"]["value"]
    assert 0 < figures.stages_total(r["breakdown"])["share"]["value"]
    figure = figures.batch_size_scaling(r["batch_size_scaling"])
    assert figure.startswith("<figure") and "<svg" in figure and 'aria-label="' in figure
    assert "<svg" in figures.size_scaling(r["size_scaling"])
    targets = figures.speed_targets(r["batch_size_scaling"])
    assert "TensorLoader" in targets and "pitfalls-stamp" in targets
    assert {"ratio", "target", "met"} <= set(figures.training_target(r["question_timing"]))
    assert figures.training_target(r["question_timing"])["target"] == derive.TRAINING_TARGET
    assert "| Model |" in figures.step_share(r["step_share"])
    assert "num_workers=2" in figures.workers(r["workers"])
    assert [b["n"] for b in figures.fastest_workers(r["workers"])] == [500, 1000]
    costs = figures.size_costs(r["size_scaling"])
    assert "× TensorLoader at the same N" in costs and costs.count("| 10,000 |") == 10, "5 loaders, 2 orders, one N"
    assert "def fetch" in figures.fetcher_source()
    assert "GB/s moved (read + write)" in figures.bandwidth(r["bandwidth"])
    assert [s["row_bytes"] for s in figures.tensorloader_of_clone(r["bandwidth"])] == [64, 1024, 16384]
    for text in (figures.question_timing(r["question_timing"]), figures.breakdown(r["breakdown"]),
                 figures.workers(r["workers"]), figures.bandwidth(r["bandwidth"])):
        assert "pitfalls-claim" not in text, "figures draw; the page states the claims"


def test_speed_target_rows_say_met_by_the_targets_logic():
    timed, wide = test_checks_loader._timed, test_checks_loader.WIDE
    points = [timed(name, median, shuffle=False, batch_size=size, **({"jitter": wide} if size == 1000 else {}))
              for size, name, median in ((1, "hand-written loop", 1.0e-3), (1, "TensorLoader", 1.1e-3),
                                         (10, "hand-written loop", 1.0e-3), (10, "TensorLoader", 1.5e-3),
                                         (100, "hand-written loop", 1.0e-5), (100, "TensorLoader", 1.5e-5),
                                         (1000, "hand-written loop", 1.0e-3), (1000, "TensorLoader", 1.2e-3))]
    rows = figures.speed_target_rows({"points": points})
    assert [(r["batch_size"], r["met"]) for r in rows] == [(1, True), (10, False), (100, True), (1000, None)]
    assert rows[2]["target"].startswith("within")
    assert all(r["ratio"]["low"] <= r["ratio"]["value"] <= r["ratio"]["high"] for r in rows)


def _synthetic(value: dict, name: str) -> Result:
    """A synthetic value as a page sees a result: with this machine's stamp."""
    return made_result(value, f"loader.{name}", timing=True)


def test_tables_show_each_ratio_with_its_interval_and_note_only_a_busy_one():
    steady = _synthetic(test_checks_loader.question_times(), "question_timing")
    text = figures.question_timing(steady)
    assert "× direct (95% interval)" in text and "8.00× (8.00–8.00)" in text
    assert "pitfalls-conditions" not in text and "not measured reliably" not in text
    assert text.splitlines()[0].startswith("| Loader | × direct (95% interval) | median |"), "the ratio comes second"
    wide = test_checks_loader.question_times()
    test_checks_loader._retime(wide["rows"][1], 8.0e-4, test_checks_loader.WIDE)
    text = figures.question_timing(_synthetic(wide, "question_timing"))
    assert "pitfalls-conditions" not in text, "a wide interval is said by its range, not in a note"
    assert "wide" not in text and "REFRESH=timing" not in text
    busy = test_checks_loader.question_times()
    busy["rows"][4]["contention"] = 0.5  # TensorLoader timed while another program held half the machine
    text = figures.question_timing(_synthetic(busy, "question_timing"))
    assert "Measured while the machine was busy or unsteady</summary>" in text and "\n<details class=\"warning" in text
    assert "<li>TensorLoader ÷ direct: " in text and "other programs took 50% of the CPU time it needed" in text
    assert "<li>DataLoader ÷ direct" not in text, "the quiet ratios are not named"
    assert "REFRESH=timing" not in text, "no build command in the page's text"


def test_a_summary_quoting_noisy_numbers_carries_the_warning_too():
    question = _synthetic(test_checks_loader.question_times(), "question_timing")
    parts = _synthetic(test_checks_loader.breakdown_times(), "breakdown")
    steps = _synthetic(test_checks_loader.step_times(), "step_share")
    assert figures.summary_warning(question, parts, ["per_sample", "blamed"], steps) == "", "clear numbers: no warning"
    wide = test_checks_loader.question_times()
    test_checks_loader._retime(wide["rows"][4], wide["rows"][4]["median"], test_checks_loader.WIDE)
    assert figures.summary_warning(_synthetic(wide, "question_timing"), parts, ["per_sample"], steps) == "", (
        "a wide interval alone: no warning, the value says it")
    busy_question = test_checks_loader.question_times()
    busy_question["rows"][4]["contention"] = 0.5
    text = figures.summary_warning(_synthetic(busy_question, "question_timing"), parts, ["per_sample"], steps)
    assert "Measured while the machine was busy or unsteady</summary>" in text and "<li>TensorLoader ÷ direct: " in text
    assert "<li>DataLoader ÷ direct" not in text, "only the disturbed number is named"
    drifted = test_checks_loader.breakdown_times()
    indexing = next(row for row in drifted["inside"] if row["stage"] == "indexing")  # timed inside the epoch
    indexing["contention"] = 0.5
    text = figures.summary_warning(question, _synthetic(drifted, "breakdown"), ["per_sample", "blamed"])
    line = next(item for item in text.split("<li>") if "per-sample share of the epoch" in item)
    assert "%" in line and "×" not in line, f"a share is written as a share: {line}"
    assert "share of the loader and step time" not in text, "no steps given: no step share named"
    busy = test_checks_loader.step_times()
    busy["rows"][-1]["timings"]["step"]["contention"] = 0.5
    text = figures.summary_warning(question, steps=_synthetic(busy, "step_share"))
    assert "<li>DataLoader per batch, MLP 784→512→512→10, cross-entropy: share of the loader and step time: " in text
    assert "other programs took 50% of the CPU time it needed" in text
    shown = render.percent_interval(derive.loader_share(busy, busy["rows"][-1], "DataLoader"))
    assert f": {shown} — other programs" in text, "the number reads as in its table"


def test_rows_timing_the_same_clone_must_agree_or_the_table_says_so():
    result = test_checks_loader.bandwidth_times()
    assert "disagree" not in figures.bandwidth(_synthetic(result, "bandwidth"))
    clone = next(r for r in result["rows"] if r["label"].startswith("clone") and r["width"] == 4096)
    test_checks_loader._retime(clone, clone["median"] * 1.15)  # within the margin: shape, pages landing elsewhere
    assert "disagree" not in figures.bandwidth(_synthetic(result, "bandwidth"))
    test_checks_loader._retime(clone, clone["median"] * 1.5 / 1.15)  # the machine got busy while one clone() ran
    text = figures.bandwidth(_synthetic(result, "bandwidth"))
    assert "they disagree by more than ±25%, beyond their uncertainty" in text and "the machine was busy" in text
    assert "same clone() of the same 64 MiB" in text and "copy_()" not in text.split("disagree on this machine")[1]


def test_question_runs_are_bitwise_identical(results):
    same = results["question_timing"].value["same"]
    assert set(same) == {"direct", "DataLoader", "DataLoader + BatchSampler", "DataLoader + BatchedTensorDataset",
                         "TensorLoader"}
    assert all(v["losses_identical"] and v["weights_identical"] for v in same.values())


def test_breakdown_counts_calls_live(results):
    calls = results["breakdown"].value["calls"]
    assert calls["getitem_per_epoch"] == 1000 and calls["batch_sampler_getitem_per_epoch"] == 1


def test_the_questions_x_is_contiguous_with_the_batchs_strides(results):
    """The page's prose "x is already contiguous, with the same strides as the batch": the question's setup."""
    layout = results["breakdown"].value["layout"]
    assert layout["x_contiguous"] and layout["x_stride"] == layout["batch_stride"]


def test_pin_memory_times_nothing_without_an_accelerator(results):
    value = results["pin_memory"].value
    text = figures.pin_memory(results["pin_memory"])
    if value["device"].startswith("cuda"):
        assert len(value["rows"]) == 6 and "side stream" in text
    else:
        assert value["rows"] == [] and text == "", "no table where nothing was timed"
        if value["accelerator"] is None:
            assert value["batch_is_pinned"] is False
            # torch 2.3 pins nothing and says nothing; later releases warn that no accelerator was found
            assert all("accelerator" in said for said in value["warnings"])
            assert value["torch"] == torch.__version__


def test_pin_memory_table_compares_with_pageable_copies_on_the_compute_stream():
    text = figures.pin_memory(_synthetic(test_checks_loader.pin_times(), "pin_memory"))
    assert "| pageable, .to(device), then compute |" in text and "1 (baseline)" in text
    assert "× pageable, .to(device), then compute (95% interval)" in text and "0.44× (0.44–0.44)" in text


@pytest.mark.cuda
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device; the CPU twin checks the CPU path")
def test_prefetching_steps_bring_every_batch_and_overlap_on_cuda():
    device = torch.device("cuda")
    source = torch.arange(1 << 20, dtype=torch.float32).pin_memory()
    weight = torch.eye(64, device=device)
    measure.prefetching_steps(source, weight, 3)
    measure.serial_steps(source, weight, 3, True)
    torch.cuda.synchronize()
    value = measure.pin_memory.func(megabytes=4, matmul_size=256, steps=2, n=100, min_run_time=0.01)
    assert [row["label"] for row in value["rows"]][:2] == ["copy alone (pinned, non_blocking=True)", "compute alone"]
    assert checks.pinned_copy_overlaps(value).values["device"].startswith("cuda")


@pytest.mark.parametrize("shuffle", [False, True])
@pytest.mark.parametrize("batch_size", [1, 3, 10])
def test_hand_written_baselines_yield_dataloaders_batches(shuffle, batch_size):
    x, y = measure.question_data(10)
    ours = list(measure.HandWritten(x, y, batch_size, shuffle, torch.Generator().manual_seed(0)))
    reference = DataLoader(TensorDataset(x, y), batch_size=batch_size, shuffle=shuffle,
                           generator=torch.Generator().manual_seed(0))
    expected = list(reference)
    assert len(ours) == len(expected)
    for (xa, ya), (xb, yb) in zip(ours, expected):
        assert torch.equal(xa, xb) and torch.equal(ya, yb)


@pytest.mark.parametrize("name", measure.LOADER_NAMES)
def test_every_loader_variant_yields_the_same_batches(name):
    x, y = measure.question_data(12)
    for shuffle in (False, True):
        got = [tuple(b) for b in measure.make_loader(name, x, y, 5, shuffle, seed=3)]
        want = [tuple(b) for b in measure.make_loader("DataLoader", x, y, 5, shuffle, seed=3)]
        assert len(got) == len(want)
        for a, b in zip(got, want):
            assert all(torch.equal(p, q) for p, q in zip(a, b))


def test_unknown_loader_name_is_refused():
    x, y = measure.question_data(4)
    with pytest.raises(ValueError, match="unknown loader"):
        measure.make_loader("Dataloader", x, y, 2, False)


def test_module_holds_no_state_made_at_import():
    for module in (measure, figures, checks, derive):
        made = [name for name, value in vars(module).items()
                if isinstance(value, (torch.Tensor, torch.nn.Module, torch.utils.data.DataLoader))]
        assert made == [], module.__name__


def test_measurement_never_imports_presentation():
    from snippets.lab import code

    for name in SMALL:
        modules = {piece.module for piece in code.reach(getattr(measure, name)).pieces}
        assert "snippets.experiments.loader.measure" in modules
        assert not [m for m in modules if m.rsplit(".", 1)[-1] in ("figures", "checks", "derive")], modules


def test_page_blocks_are_named_and_includes_exist():
    text = PAGE.read_text(encoding="utf-8")
    assert re.search(r"\brun\(measure\.\w+", text), "the page runs no experiments"
    blocks = re.findall(r"```python exec=\"1\"([^\n]*)", text)  # any left beside its named values
    ids = [re.search(r'id="([^"]+)"', b).group(1) for b in blocks]
    assert all(i.startswith("loader-") for i in ids) and len(set(ids)) == len(ids)
    for target in re.findall(r'--8<-- "([^"]+)"', text):
        path, _, section = target.partition(":")
        source = (ROOT / path).read_text(encoding="utf-8")
        if section:
            assert f"[start:{section}]" in source and f"[end:{section}]" in source
    assert '--8<-- "snippets/tensor_loader.py"' in text


def test_contract_spy_refuses_sample_indexing_and_counts_as_a_failure():
    spy = measure.SampleIndexingRefused(torch.arange(4.0))
    with pytest.raises(AssertionError, match="was called"):
        spy[0]
    x, y = measure.question_data(8)
    assert measure._batched_dataset_agrees(x, y, 0, 1, False, batch_size=3)
    # The same spy without its collate function: DataLoader's default_collate stacks the two batched tensors, so
    # the batches differ and the comparison says so.
    original = measure.BatchedTensorDataset.collate
    try:
        measure.BatchedTensorDataset.collate = staticmethod(lambda batch: [torch.zeros(1)])
        assert not measure._batched_dataset_agrees(x, y, 0, 1, False, batch_size=3)
    finally:
        measure.BatchedTensorDataset.collate = original


def test_contract_reports_sample_indexing_in_workers_as_a_failure(monkeypatch):
    x, y = measure.question_data(8)
    monkeypatch.setattr(measure.SampleIndexingRefused, "__getitems__", None)  # falls back to dataset[i]
    assert not measure._batched_dataset_agrees(x, y, 0, 1, False, batch_size=3, num_workers=1)


def test_worker_rng_table_shows_each_setting_epoch_by_epoch(results):
    text = figures.worker_rng(results["contract"])
    assert "| `num_workers=2, persistent_workers=True` | yes, no, no | yes |" in text
    assert "| TensorLoader | yes, yes, yes | no |" in text and "pitfalls-stamp" in text


def test_size_comparison_is_at_the_largest_n_every_loader_ran():
    value = test_checks_loader.size_times()
    value["points"] = [p for p in value["points"] if not (p["label"] == "DataLoader" and p["n"] == 10_000)]
    assert derive.common_n(value) == 1000
    costs = derive.per_sample_costs(value, shuffle=True)
    assert {c["n"] for c in costs.values()} == {1000}
    assert costs["DataLoader"]["per_sample"] == pytest.approx(5e-6)
    assert derive.equal_n_ratio(value, shuffle=True)["value"] == pytest.approx(5e-3 / (5e-6 + 1e-5))


def test_compile_table_lists_each_settings_graphs(results):
    text = figures.compile_recompiles(results["compile_recompiles"])
    assert "| `drop_last=False` | 2, 0 | static: " in text and "<br>dynamic: " in text and "SymInt" in text
    assert "| `drop_last=True` | 1, 0 |" in text


def test_compile_failure_is_reported_not_raised(monkeypatch):
    def unavailable(*args, **kwargs):
        raise RuntimeError("Dynamo is not supported on this Python")

    monkeypatch.setattr(torch, "compile", unavailable)
    value = measure.compile_recompiles.func(n=20, batch_size=8, epochs=2)
    assert value["available"] is False and value["error"] == "RuntimeError: Dynamo is not supported on this Python"


@pytest.mark.parametrize("experiment, sizes", [("batch_size_scaling", dict(n=10, batch_sizes=(1,))),
                                               ("size_scaling", dict(sizes=(10,))),
                                               ("bandwidth", dict(megabytes=1, widths=(16,))),
                                               ("workers", dict(settings=((10, 10),)))])
def test_scaling_needs_three_rounds_for_an_interval(experiment, sizes):
    with pytest.raises(ValueError, match=r"rounds must be >= 3 .* got 2"):
        getattr(measure, experiment).func(**sizes, rounds=2)


def _worker_lines(result: dict) -> dict[str, str]:
    text = figures.workers(_synthetic(result, "workers")).split("**N = 10,000")[0]
    return {line.split("|")[1].strip(): line for line in text.splitlines() if line.startswith("| num_workers")}


def test_a_spread_from_fewer_than_four_blocks_is_not_printed():
    result = test_checks_loader.worker_times()
    for row in result["rows"]:  # one measurement of several blocks per row, not rounds
        row["samples"] = row.pop("rounds")
    result["rows"][1]["blocks"] = 3  # num_workers=1 at N = 1,000: three epochs of about a second
    lines = _worker_lines(result)
    assert "| — |" in lines["num_workers=1"]
    assert "| — |" not in lines["num_workers=0"], "twelve blocks give an IQR"


def test_a_spread_from_fewer_than_four_blocks_per_round_is_not_printed():
    result = test_checks_loader.worker_times()
    rounds = len(result["rows"][0]["rounds"])
    result["rows"][0]["blocks"] = 4 * rounds
    result["rows"][1]["blocks"] = 3 * rounds
    lines = _worker_lines(result)
    assert "| — |" in lines["num_workers=1"], "three blocks per round give no IQR"
    assert "| — |" not in lines["num_workers=0"], "four blocks per round give an IQR"


def test_a_stored_timing_keeps_what_decides_whether_it_is_a_finding(results):
    row = measure._timing_row("x", {"median": 1.0, "rounds": [1.0], "contention": 0.3, "busy_rounds_left_out": 2,
                                    "internal": "dropped"}, n=5)
    assert row == {"label": "x", "median": 1.0, "rounds": [1.0], "contention": 0.3, "busy_rounds_left_out": 2, "n": 5}
    for name in ("question_timing", "workers", "bandwidth"):
        timed = [r for r in results[name].value["rows"] if r.get("median") is not None]
        assert timed and all("contention" in r for r in timed), f"{name}: a timing without the machine's load"


def test_the_distributed_experiment_needs_a_group_of_two_ranks_or_more():
    with pytest.raises(ValueError, match=r"^world_size must be >= 2 for a distributed group, got 1$"):
        measure.distributed_shards.func(world_size=1)


def test_another_host_of_the_same_kind_that_measured_something_else_is_named_beside_the_number(monkeypatch):
    """A recorded machine with this build's fingerprint whose interval does not overlap this build's: its value is
    said in the cell, with its label and date; one whose interval overlaps is not."""
    from types import SimpleNamespace

    from snippets.lab import cache, machines

    here = made_result(test_checks_loader.question_times(), "loader.question_timing", timing=True,
                       exp=measure.question_timing)
    slower = test_checks_loader.question_times()
    test_checks_loader._retime(slower["rows"][1], 1.2e-3)  # DataLoader 12x the direct loop there, 8x here
    other = SimpleNamespace(label="twin-host", manifest={"recorded_at": "2026-11-30T10:00:00+00:00"})
    recorded = Result(slower, "loader.question_timing", {}, environment.fingerprint(), "2026-11-30T10:00:00+00:00",
                      0.0, True, cached=True, exp=measure.question_timing)
    monkeypatch.setattr(machines, "same_kind", lambda: [other])
    monkeypatch.setattr(cache, "from_recording", lambda rec, exp, params: (recorded, ""))
    text = figures.question_timing(here)
    line = next(line for line in text.splitlines() if line.startswith("| DataLoader |"))
    said = line.split('<span class="pitfalls-same-kind" title="twin-host">', 1)
    assert "8.00× (8.00–8.00)" in said[0], "this build's own value comes first"
    assert len(said) == 2 and "another machine of the same type, measured 2026-11-30: " in said[1]
    assert "twin-host" not in said[1].split(">", 1)[1], "the prose itself names no recorded machine"
    assert "12.00× (12.00–12.00)" in said[1]
    assert "another machine" not in next(line for line in text.splitlines() if line.startswith("| TensorLoader |")), \
        "an interval that overlaps is not news"
    monkeypatch.setattr(machines, "same_kind", lambda: [])
    assert "another host" not in figures.question_timing(here)


def test_the_strided_source_is_strided_and_only_dataloader_makes_it_contiguous(results):
    layout = results["strided_source"].value["layout"]
    assert layout["column_stride"] == [4, 1] and not layout["column_contiguous"] and layout["column_equals_x"]
    assert layout["batch_stride"] == [1, 1] and layout["batch_contiguous"] and not layout["batch_shares_memory"]
    assert layout["tensorloader_stride"] == [4, 1] and layout["tensorloader_shares_memory"]
    numbers = figures.strided_numbers(results["strided_source"])
    assert numbers["columns"] == 4 and numbers["stride"] == 4 and numbers["step_on_column"] > 0


def test_a_one_column_table_is_refused_before_anything_runs():
    with pytest.raises(ValueError, match="columns must be >= 2"):
        measure.strided_source.func(columns=1)


def test_torch_calls_counts_each_indexing_once_and_leaves_tensor_as_it_was():
    """x[...] is counted by a wrapper on torch.Tensor.__getitem__ (torch 2.3 never shows it to a function mode), once
    however the release dispatches it, and the wrapper goes when the block ends."""
    from snippets.experiments.loader.measure import TorchCalls

    x = torch.arange(6)
    before = torch.Tensor.__getitem__
    with TorchCalls() as calls:
        x[1], x[[0, 2]], x[1:3], torch.stack([x, x, x])
    assert (calls.indexing, calls.stacks, calls.stacked) == (3, 1, 3)
    assert torch.Tensor.__getitem__ is before and "__getitem__" not in vars(torch.Tensor)


def test_the_epoch_timed_above_is_not_printed_again_in_the_workers_table():
    result = _synthetic(test_checks_loader.worker_times(), "workers")
    plain, pointed = figures.workers(result), figures.workers(result, epoch_above=(1000, 1000))
    (plain_1k, plain_10k), (pointed_1k, pointed_10k) = (text.split("**N = 10,000") for text in (plain, pointed))
    row = [line for line in pointed_1k.splitlines() if line.startswith("| num_workers=0 |")][0]
    assert figures.EPOCH_ABOVE in row and " ms |" not in row and "| 1 (baseline) |" in row
    assert figures.EPOCH_ABOVE not in plain, "only where the page timed that epoch"
    assert plain_10k == pointed_10k, "the other setting keeps its time"
    assert [line for line in plain_1k.splitlines() if "num_workers=1 |" in line] == \
           [line for line in pointed_1k.splitlines() if "num_workers=1 |" in line], "the worker rows keep their times"
