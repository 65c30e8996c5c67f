"""Each check behind a claim on the update-steps page holds on the real measurement and fails on a contradiction.

No check on this page reads a time: every supporting value is a real measurement at a small size.
"""

from __future__ import annotations

import copy
import math

import pytest
import torch

from checks_support import Contradiction, Measured, assert_check_can_fail
from snippets.experiments.steps import checks, derive, measure  # noqa: F401
from snippets.lab.claims import topic_checks

pytestmark = pytest.mark.measures  # CI runs this file on its first Python only (.ci/run)

CHECKS = topic_checks()  # every topic's checks, by name

BATCHNORM = Measured(measure.batchnorm_last_batch)
ARITHMETIC = Measured(measure.step_arithmetic, (("batch_sizes", (64, 512, 10_000)),))
SCALER = Measured(measure.gradscaler_skips, (("steps", 12), ("overflow_at", (0, 5))))
CURVES = Measured(measure.curves, (("n_samples", 600), ("batch_sizes", (16, 120, 600)), ("epochs", 10),
                                   ("min_steps", 12), ("equal_steps", (3, 6, 12)), ("fit_points", 21)))
LOGGED = Measured(measure.logged_vs_true, (("n_samples", 1000), ("batch_size", 96), ("epochs", 3)))
INIT = Measured(measure.init_effect, (("n_samples", 2000), ("batch_size", 100), ("epochs", 20), ("full_epochs", 400),
                                      ("seeds", (42, 1)), ("long_seeds", (42,))))
NOISE = Measured(measure.gradient_noise, (("n_samples", 2000), ("batch_sizes", (8, 64, 512, 1800)), ("draws", 24),
                                          ("train_batch", 100), ("checkpoints", (0, 10, 200)), ("variance_at", 30)))
LR = Measured(measure.lr_sweep, (("n_samples", 2000), ("base_batch", 32), ("multiples", (1, 4)), ("epochs", 2),
                                 ("seeds", (0, 1)), ("tail_points", 4)))
SCHEDULER = Measured(measure.scheduler_sizing, (("n_samples", 1000), ("epochs", 4), ("planned_batch", 100),
                                                ("smaller_batch", 30), ("larger_batch", 400)))
ACCUMULATION = Measured(measure.accumulation, (("n_samples", 1000), ("batch_size", 96),
                                               ("accumulation_steps", (1, 3, 4)), ("epochs", 2)))
DISTRIBUTED = Measured(measure.distributed_sampler, (("world_size", 3), ("n_values", (99, 100)),
                                                     ("batch_size", 16), ("epochs", 3), ("accumulation_steps", 3),
                                                     ("micro_batch", 8), ("timeout_s", 120)))


@pytest.fixture(autouse=True, scope="module")
def one_thread():
    """Small tensors: one intra-op thread is faster, and steadier on a busy machine."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


def _set(path: list, value):
    def edit(result: dict) -> None:
        target = result
        for key in path[:-1]:
            target = target[key]
        target[path[-1]] = value
    return edit


def _row_512(result: dict) -> dict:
    return next(row for row in result["rows"] if row["batch_size"] == 512)


def _record(run: dict, step: int) -> dict:
    return next(rec for rec in run["records"] if rec["step"] == step)


def _runs(result: dict, order: str) -> list[dict]:
    # Shared full-batch runs are copies: editing one must not edit the other order's.
    return sorted((r for r in result["runs"] if r["order"] == order), key=lambda r: r["batch_size"])


def _epochs_close_together(result: dict) -> None:
    for i, run in enumerate(_runs(result, "shuffled")):
        _record(run, result["epochs"] * run["steps_per_epoch"])["loss"] = 0.5 if i == 0 else 1.0


def _one_batch_off_at_mid(result: dict) -> None:
    run = _runs(result, "shuffled")[0]
    _record(run, result["equal_steps"][-2])["loss"] *= 1.5


def _smallest_batch_ahead(result: dict) -> None:
    last = result["equal_steps"][-1]
    runs = _runs(result, "shuffled")
    _record(runs[0], last)["loss"] = min(_record(r, last)["loss"] for r in runs) / 2


def _largest_unshuffled_behind(result: dict) -> None:
    last = result["equal_steps"][-1]
    runs = _runs(result, "sequential")
    _record(runs[-1], last)["loss"] = 10 * _record(runs[0], last)["loss"]


def _smallest_behind_after_one_epoch(result: dict) -> None:
    run = _runs(result, "shuffled")[0]
    _record(run, run["steps_per_epoch"])["loss"] = 1e3


def _plain_mean_exact(result: dict) -> None:
    for row in result["rows"]:
        row["fixed_plain"] = row["true_end"]


def _start_dominates(result: dict) -> None:
    result["rows"][0]["small_from_a"] = result["rows"][0]["small_from_b"] + 1.0


def _full_batch_no_better(result: dict) -> None:
    row = next(r for r in result["rows"] if r["seed"] == 42)
    row["full_long"] = row["small_from_b"]


def _variance_off_the_law(result: dict) -> None:
    result["variance"][0]["measured"] = 3 * result["variance"][0]["law"]


def _shuffled_point(result: dict, i: int) -> dict:
    return sorted((p for p in result["points"] if p["order"] == "shuffled"), key=lambda p: p["step"])[i]


def _uneven(result: dict) -> dict:
    return next(r for r in result["rows"] if r["micro_batches"] % r["k"])


def _set_epoch_ignored(result: dict) -> None:
    """What the runs with set_epoch would show if it had no effect: every epoch like the first."""
    for epoch in result["shuffled"]:
        if epoch["set_epoch"]:
            epoch.update(permutation_of_epoch=[0], same_as_first_epoch=[True] * result["world_size"])


def _sampler_row(result: dict, n_samples: int, drop_last: bool) -> dict:
    return next(r for r in result["rows"] if r["n_samples"] == n_samples and r["sampler_drop_last"] == drop_last)


def _sweep_run(result: dict, seed: int, k: int, lr: float) -> dict:
    return next(r for r in result["runs"] if r["seed"] == seed and r["k"] == k and r["lr"] == lr)


def _set_sweep_score(result: dict, seed: int, k: int, lr: float, loss: float) -> None:
    run = _sweep_run(result, seed, k, lr)
    run["tail"] = [[step, loss] for step, _ in run["tail"]]


def _best_lr_grows_linearly(result: dict) -> None:
    """Seed 0's best learning rate moves one grid step (×2) per doubling of k: an exponent of 1."""
    lrs, multiples = result["lrs"], result["multiples"]
    for k in multiples:
        i = 1 + round(math.log2(k / multiples[0]))
        for j, lr in enumerate(lrs):
            _set_sweep_score(result, 0, k, lr, 1e-6 * 10 ** abs(j - i))


def _largest_batch_catches_up(result: dict) -> None:
    """At the largest k, one learning rate of seed 1 ends below anything the smallest k reached."""
    lowest = min(loss for r in result["runs"] for _, loss in r["tail"])
    _set_sweep_score(result, 1, max(result["multiples"]), result["lrs"][2], lowest / 10)


CONTRADICTING = {
    "steps.counts_agree": Contradiction(ARITHMETIC, lambda r: r["rows"][0]["keep"].update(len_loader=0)),
    "steps.batchnorm_last_batch_raises": Contradiction(BATCHNORM, lambda r: r["keep"].update(error=None)),
    "steps.epochs_separate_batch_sizes": Contradiction(CURVES, _epochs_close_together),
    "steps.shuffled_steps_align": Contradiction(CURVES, _one_batch_off_at_mid),
    "steps.smallest_batch_falls_behind": Contradiction(CURVES, _smallest_batch_ahead),
    "steps.unshuffled_loss_falls_with_batch": Contradiction(CURVES, _largest_unshuffled_behind),
    "steps.full_batch_behind_per_sample": Contradiction(CURVES, _smallest_behind_after_one_epoch),
    "steps.logged_above_true": Contradiction(
        LOGGED, lambda r: r["rows"][0].update(logged=r["rows"][0]["true_end"] / 2)),
    "steps.plain_mean_is_off": Contradiction(LOGGED, _plain_mean_exact),
    "steps.epoch_gap_exceeds_start_effect": Contradiction(INIT, _start_dominates),
    "steps.full_batch_ahead_at_equal_steps": Contradiction(INIT, _full_batch_no_better, extra=(42,)),
    "steps.variance_follows_the_law": Contradiction(NOISE, _variance_off_the_law),
    "steps.plain_law_overestimates": Contradiction(
        NOISE, lambda r: r["variance"][-1].update(plain=r["variance"][-1]["measured"])),
    "steps.contiguous_batches_scatter": Contradiction(
        NOISE, lambda r: r["contiguous"].update(measured=r["contiguous"]["law_random"])),
    "steps.noise_scale_grows": Contradiction(NOISE, lambda r: _shuffled_point(r, -1).update(
        b_simple=_shuffled_point(r, 0)["b_simple"])),
    "steps.noise_scale_passes_smallest_batch": Contradiction(
        NOISE, lambda r: _shuffled_point(r, -1).update(b_simple=20.0), extra=([32, 100],)),
    "steps.best_lr_inside_grid": Contradiction(LR, lambda r: _set_sweep_score(r, 0, 1, r["lrs"][-1], 1e-12)),
    "steps.best_lr_exponent_near_zero": Contradiction(LR, _best_lr_grows_linearly),
    "steps.tuned_larger_batch_falls_behind": Contradiction(LR, _largest_batch_catches_up),
    "steps.undersized_schedule_raises": Contradiction(SCHEDULER, _set(["smaller", "error"], None)),
    "steps.oversized_schedule_ends_warm": Contradiction(SCHEDULER, lambda r: r["larger"]["lrs"].append(0.0)),
    "steps.resized_schedule_anneals": Contradiction(
        SCHEDULER, lambda r: r["larger_resized"]["lrs"].append(r["max_lr"])),
    "steps.accumulation_counts_match_recipe": Contradiction(
        ACCUMULATION, lambda r: r["rows"][0]["with"]["steps_per_epoch"].append(0)),
    "steps.last_group_scaled_down": Contradiction(
        ACCUMULATION, lambda r: _uneven(r)["with"].update(partial_group_scale=1.0)),
    "steps.leftovers_carry_over": Contradiction(
        ACCUMULATION, lambda r: _uneven(r)["without"].update(largest_group=_uneven(r)["k"])),
    "steps.rank_steps_match_recipe": Contradiction(
        DISTRIBUTED, lambda r: r["rows"][0].update(per_rank_steps=[0] * r["world_size"])),
    "steps.ranks_take_fewer_steps": Contradiction(
        DISTRIBUTED, lambda r: _sampler_row(r, 99, False).update(repeated=[0]), extra=(99,)),
    "steps.padding_repeats_indices": Contradiction(
        DISTRIBUTED, lambda r: _sampler_row(r, 100, False).update(ranks_ending_in_a_repeat=[0, 1]), extra=(100,)),
    "steps.drop_last_skips_indices": Contradiction(
        DISTRIBUTED, lambda r: _sampler_row(r, 100, True).update(dropped=[]), extra=(100,)),
    "steps.shards_are_strided": Contradiction(DISTRIBUTED, lambda r: r["shuffled"][-1].update(strided=False)),
    "steps.set_epoch_reshuffles": Contradiction(DISTRIBUTED, _set_epoch_ignored),
    "steps.shuffled_padding_repeats_permutation_start": Contradiction(
        DISTRIBUTED, lambda r: r["shuffled"][-1].update(repeated=sorted(r["shuffled"][-1]["order_head"][1:3]))),
    "steps.padded_evaluation_is_off": Contradiction(
        DISTRIBUTED, lambda r: r["evaluation"]["padded"].update(count=r["evaluation"]["n_samples"])),
    "steps.no_sync_all_reduces_once": Contradiction(
        DISTRIBUTED, lambda r: r["accumulation"]["per_rank"][-1]["no_sync"].update(
            all_reduces=r["accumulation"]["per_rank"][-1]["all_reduce_each"]["all_reduces"])),
    "steps.gradscaler_schedule_runs_ahead": Contradiction(
        SCALER, lambda r: r["guarded"].update(scheduler_steps=r["iterations"])),
}


@pytest.mark.parametrize("name", sorted(CONTRADICTING))
def test_check_holds_on_the_measurement_and_fails_on_a_contradiction(name):
    assert_check_can_fail(name, CONTRADICTING[name])


def test_evaluation_check_fails_when_unpadded_shards_are_off():
    bad = DISTRIBUTED.value()
    bad = {**bad, "evaluation": {**bad["evaluation"], "unpadded": {**bad["evaluation"]["unpadded"]}}}
    bad["evaluation"]["unpadded"]["sum"] *= 1.001
    assert not checks.padded_evaluation_is_off(bad).holds


def test_set_epoch_check_fails_when_epochs_without_it_differ():
    bad = DISTRIBUTED.value()
    bad = {**bad, "shuffled": [dict(e) for e in bad["shuffled"]]}
    last = next(e for e in reversed(bad["shuffled"]) if not e["set_epoch"])
    last.update(permutation_of_epoch=[last["epoch"]], same_as_first_epoch=[False] * bad["world_size"])
    assert not checks.set_epoch_reshuffles(bad).holds


# ---- claims about curves hold from every start ------------------------------------------------------------------

CURVE_EDITS = {
    "steps.epochs_separate_batch_sizes": _epochs_close_together,
    "steps.shuffled_steps_align": _one_batch_off_at_mid,
    "steps.smallest_batch_falls_behind": _smallest_batch_ahead,
    "steps.unshuffled_loss_falls_with_batch": _largest_unshuffled_behind,
    "steps.full_batch_behind_per_sample": _smallest_behind_after_one_epoch,
}


@pytest.mark.parametrize("name", sorted(CURVE_EDITS))
def test_a_curve_claim_that_fails_from_one_other_start_fails(name):
    """The page's own start untouched, one of the other starts contradicted: one lucky start never makes a claim."""
    value = copy.deepcopy(CURVES.value())
    assert len(value["others"]) >= 1, "the curves are run from more than one start"
    assert CHECKS[name](copy.deepcopy(value)).holds, f"{name} does not hold from every start to begin with"
    other = value["others"][-1]
    CURVE_EDITS[name]({**value, "runs": other["runs"]})  # edits that start's runs in place
    outcome = CHECKS[name](value)
    assert not outcome.holds and outcome.values["failing_starts"] == [[other["seed"], other["shuffle_seed"]]]
    assert outcome.values["starts"] == 1 + len(value["others"])


def test_a_curve_claim_reports_the_range_over_the_starts():
    value = CURVES.value()
    outcome = checks.shuffled_steps_align(value)
    per_start = [checks._shuffled_steps_align(view)[1]["spread_pct"] for view in derive.starts(value)]
    assert outcome.values["spread_pct_max"] == max(per_start) and outcome.values["spread_pct_min"] == min(per_start)
    assert outcome.values["spread_pct"] == per_start[0], "the sentence's own number is the figure's start"
