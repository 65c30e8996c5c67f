"""The update-step page's experiments at small sizes against the installed torch: what they measure, their
figures and tables, and the page's use of the package (each check's contradicting case is in test_checks_steps)."""

from __future__ import annotations

import math
import re
import shutil
import subprocess
import sys

import pytest
import torch
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset

from conftest import ROOT, made_result
from snippets.experiments.steps import checks, derive, figures, measure as steps, question
from snippets.lab import code as lab_code
from snippets.lab.cache import Experiment, Result
from snippets.step_budget import steps_per_epoch

pytestmark = pytest.mark.measures  # CI runs this file on its first Python only (.ci/run)


def _result(value: dict, name: str, timing: bool = False) -> Result:
    return made_result(value, f"steps.{name}", timing=timing)


@pytest.fixture(autouse=True, scope="module")
def one_thread():
    """Small tensors: one intra-op thread is faster, and steadier on a busy machine."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


# ---- the question's setup ---------------------------------------------------------------------------------------


def _question_second_model(seed: int, batch_size: int, epochs: int, n: int) -> dict:
    """The question's script, literally: seed, train the first model through its DataLoader, build the second."""
    x, y = question.make_data(n)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        model = question.Net()
        optimizer = torch.optim.Adam(model.parameters(), lr=1e-4)
        loader = DataLoader(TensorDataset(x, y), batch_size=batch_size, shuffle=False)
        for _ in range(epochs):
            for bx, by in loader:
                optimizer.zero_grad()
                F.mse_loss(model(bx), by).backward()
                optimizer.step()
        return question.Net().state_dict()


def test_initial_states_replay_the_question():
    first, second = question.initial_states(42, epochs_between=3, batch_size=96, n_samples=300)
    literal = _question_second_model(42, 96, 3, 300)
    assert all(torch.equal(second[k], literal[k]) for k in second)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(42)
        assert all(torch.equal(first[k], v) for k, v in question.Net().state_dict().items())
    assert not all(torch.equal(first[k], second[k]) for k in first)


def test_sliced_training_equals_the_dataloader_loop_bitwise():
    """The curves slice batches from the tensors; unshuffled, that is exactly the DataLoader's batches."""
    x, y = question.make_data(500)
    init, _ = question.initial_states(n_samples=500)
    sliced = steps.train(init, x, y, batch_size=64, epochs=2, checkpoints={16})
    model = steps._model(init, torch.device("cpu"))
    optimizer = torch.optim.Adam(model.parameters(), lr=question.LR)
    with torch.random.fork_rng(devices=[]):
        for _ in range(2):
            for bx, by in DataLoader(TensorDataset(x, y), batch_size=64, shuffle=False):
                optimizer.zero_grad()
                F.mse_loss(model(bx), by).backward()
                optimizer.step()
    assert all(torch.equal(a, b) for a, b in zip(sliced["model"].parameters(), model.parameters()))
    assert sliced["steps"] == 2 * steps_per_epoch(500, 64) and sliced["samples"] == 1000


def test_same_start_is_reproducible_and_leaves_the_global_stream_alone():
    x, y = question.make_data(400)
    init, _ = question.initial_states(n_samples=400)
    torch.manual_seed(123)
    before = torch.get_rng_state()
    one = steps.train(init, x, y, batch_size=50, epochs=2, order="shuffled", checkpoints={4, 16})
    two = steps.train(init, x, y, batch_size=50, epochs=2, order="shuffled", checkpoints={4, 16})
    assert [r["loss"] for r in one["records"]] == [r["loss"] for r in two["records"]]
    assert torch.equal(before, torch.get_rng_state())


def test_experiments_leave_the_global_stream_alone():
    torch.manual_seed(7)
    before = torch.get_rng_state()
    steps.step_arithmetic(n_samples=1000, batch_sizes=(64, 512, 1000))
    steps.logged_vs_true(n_samples=300, batch_size=64, epochs=1)
    steps.scheduler_sizing(n_samples=300, epochs=2, planned_batch=50, smaller_batch=20, larger_batch=100)
    steps.accumulation(n_samples=300, batch_size=64, accumulation_steps=(2,), epochs=1)
    steps.init_effect(n_samples=200, batch_size=64, epochs=1, full_epochs=2, seeds=(1,), long_seeds=())
    assert torch.equal(before, torch.get_rng_state())


def test_batch_indices_cover_every_sample_once():
    for order in ("sequential", "shuffled"):
        seen = []
        for index in steps.batch_indices(103, 10, order, torch.Generator().manual_seed(0)):
            seen += list(range(103))[index] if isinstance(index, slice) else index.tolist()
        assert sorted(seen) == list(range(103))
    with pytest.raises(ValueError, match="order"):
        list(steps.batch_indices(10, 2, "random"))


# ---- 1. arithmetic ---------------------------------------------------------------------------------------------


def test_step_arithmetic_claims():
    result = steps.step_arithmetic()
    q = result["question"]
    assert q["answer_per_epoch"] == 19 and q["steps_512"] == 400 and q["answer_total"] == 380
    assert q["steps_full_400"] == 400 and q["printed_lines_512"] == 0 and q["printed_lines_full"] == 8
    row = next(r for r in result["rows"] if r["batch_size"] == 512)
    assert row["keep"]["last_batch"] == 272 and row["drop"]["len_loader"] == 19
    r = _result(result, "step_arithmetic")
    assert checks.counts_agree(r).holds
    assert derive.question_arithmetic(r) == {"epochs": 20, "full_epochs": 400, "print_every": 50, "steps": 400,
                                             "answer_total": 380, "steps_full_short": 20, "steps_full_long": 400,
                                             "printed_512": 0, "printed_full": 8}
    assert "| 512 |" in figures.arithmetic(r)


# ---- 2. curves -------------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def small_curves() -> dict:
    return steps.curves(n_samples=600, batch_sizes=(16, 120, 600), epochs=2, min_steps=12,
                        equal_steps=(3, 6, 12), fit_points=21)


def test_curves_share_one_start_and_count_steps(small_curves):
    runs = small_curves["runs"]
    assert {r["records"][0]["loss"] for r in runs} == {runs[0]["records"][0]["loss"]}  # same initial weights
    for run in runs:
        per_epoch = steps_per_epoch(600, run["batch_size"])
        assert run["steps"] == run["epochs"] * per_epoch and run["samples"] == run["epochs"] * 600
        assert run["epochs"] == max(2, math.ceil(12 / per_epoch))
        recs = run["records"]
        assert [r["step"] for r in recs] == sorted(r["step"] for r in recs)
        assert all(b["seconds"] >= a["seconds"] for a, b in zip(recs, recs[1:]))
        assert {3, 6, 12} <= {r["step"] for r in recs}
    shared = [r for r in runs if r["shared"]]
    assert [(r["order"], r["batch_size"]) for r in shared] == [("shuffled", 600)]


def test_the_curves_keep_no_time_of_their_own(small_curves):
    """What a step costs is timed by step_cost, with its protocol; the curves' runs are not timed results."""
    assert not steps.curves.timing
    assert all("seconds" not in run and "epoch_seconds" not in run for run in small_curves["runs"])


def test_the_cost_of_a_step_is_timed_in_alternation_and_gets_an_interval():
    """The wall-clock paragraph compares steps by a ratio of times: every batch size timed in the same rounds."""
    result = steps.step_cost.func(n_samples=600, batch_sizes=(16, 120, 600), rounds=3, min_run_time=0.05)
    costs = derive.step_costs(result)
    assert sorted(costs) == [16, 120, 600]
    assert len({len(c["rounds"]) for c in costs.values()}) == 1 and len(costs[16]["rounds"]) >= 3
    spread = derive.step_cost_ratio(result)
    assert {spread["cheapest"], spread["dearest"]} <= set(costs) and spread["cheapest"] != spread["dearest"]
    ratio = spread["ratio"]
    assert ratio["paired"] and ratio["low"] <= ratio["value"] <= ratio["high"] and ratio["value"] >= 1


def test_curves_renderers(small_curves):
    result = _result(small_curves, "curves", timing=True)
    for order in ("sequential", "shuffled"):
        figure = figures.curves(result, order)
        assert figure.count("<svg") == 1 and 'data-timing="true"' in figure and "pitfalls-stamp" in figure
    table = figures.equal_steps(result)
    by_steps, by_epochs = table.split("**At equal epochs (2), as the question compares them**")
    runs = len(small_curves["runs"])
    assert by_steps.count("\n| ") == 2 + runs and "| loss @ 12 steps | samples for 12 steps |" in by_steps
    assert by_epochs.count("\n| ") == 2 + runs and "| steps in 2 epochs | loss @ 2 epochs |" in by_epochs
    assert "pitfalls-stamp" in by_epochs
    assert "<svg" in figures.fit(result)


# ---- 3. what the code hides ------------------------------------------------------------------------------------


def test_logged_loss_against_true_loss():
    result = steps.logged_vs_true(n_samples=1000, batch_size=96, epochs=3)
    assert result["batches"] == 11 and result["last_batch"] == 40
    for row in result["rows"]:
        assert math.isclose(row["fixed_weighted"], row["true_end"], rel_tol=1e-5)
        assert not math.isclose(row["fixed_plain"], row["true_end"], rel_tol=1e-4)
        assert row["logged"] != row["true_end"]
    r = _result(result, "logged_vs_true")
    # the page's "weighting each batch's loss by its size gives the full-dataset loss back" (arithmetic)
    assert all(math.isclose(row["fixed_weighted"], row["true_end"], rel_tol=1e-5) for row in result["rows"])
    assert all(c(r).holds for c in (checks.logged_above_true, checks.plain_mean_is_off))
    assert "<svg" in figures.logged(r)


def test_init_effect_small():
    result = steps.init_effect(n_samples=600, batch_size=96, epochs=2, full_epochs=12, seeds=(42, 1),
                               long_seeds=(42,))
    rows = {r["seed"]: r for r in result["rows"]}
    assert rows[42]["full_long"] is not None and rows[1]["full_long"] is None
    assert all(r["start_max_abs_diff"] > 0 and r["small_from_a"] != r["small_from_b"] for r in rows.values())
    assert "| 42 |" in figures.init(_result(result, "init_effect"))


# ---- 4. gradient noise -----------------------------------------------------------------------------------------


def test_per_sample_gradient_norms_match_torch_func():
    from torch.func import functional_call, grad, vmap

    x, y = question.make_data(300)
    init, _ = question.initial_states(n_samples=300)
    model = steps._model(init, torch.device("cpu"))
    params = {k: v.detach() for k, v in model.named_parameters()}

    def loss_one(p, xi, yi):
        return F.mse_loss(functional_call(model, p, (xi.unsqueeze(0),)), yi.unsqueeze(0))

    per_sample = vmap(grad(loss_one), in_dims=(None, 0, 0))(params, x, y)
    expected = sum((g.double() ** 2).sum().item() for g in per_sample.values())
    assert math.isclose(steps.per_sample_grad_sq_sum(model, x, y), expected, rel_tol=1e-6)
    assert all(p.grad is None for p in model.parameters())


def test_gradient_noise_follows_the_finite_population_law():
    result = steps.gradient_noise(n_samples=2000, batch_sizes=(8, 64, 512, 1800), draws=24, checkpoints=(0, 30),
                                  variance_at=30)
    for row in result["variance"]:
        assert 0.5 < row["measured"] / row["law"] < 2, row
    top = result["variance"][-1]
    assert top["plain"] > 2 * top["measured"]  # (N − B)/(N − 1) matters at large B
    c = result["contiguous"]
    assert c["measured"] > 10 * c["law_random"]
    assert all(p["b_simple"] > 0 and p["trace"] > 0 for p in result["points"])
    assert [(p["order"], p["step"]) for p in result["points"]] == [("shuffled", 0), ("shuffled", 30),
                                                                    ("sequential", 0), ("sequential", 30)]
    assert c["order"] == "sequential" and c["at"]["order"] == "sequential" and c["at"]["step"] == 30
    r = _result(result, "gradient_noise")
    assert "<svg" in figures.noise(r) and "B_simple" in figures.noise_scale(r)
    assert "| 1,800 |" in figures.noise_table(r)
    assert all(c(r).holds for c in (checks.variance_follows_the_law, checks.plain_law_overestimates,
                                    checks.contiguous_batches_scatter))


def test_noise_scale_is_measured_along_the_runs_the_curves_show():
    """Same start, learning rate and shuffling: at every checkpoint, the same weights as the curve of that order
    (compared through the full-dataset loss, bit for bit), and the variance at ``variance_at`` along the question's
    unshuffled run."""
    noise = steps.gradient_noise(n_samples=800, batch_sizes=(8, 700), draws=4, train_batch=50, checkpoints=(0, 7, 40),
                                 variance_at=16)
    curves = steps.curves(n_samples=800, batch_sizes=(50,), epochs=1, min_steps=40, equal_steps=(7, 16, 40),
                          fit_points=5)
    for point in noise["points"]:
        run = next(r for r in curves["runs"] if r["order"] == point["order"] and r["batch_size"] == 50)
        assert derive.at_step(run, point["step"])["loss"] == point["loss"], point
    sequential = next(r for r in curves["runs"] if r["order"] == "sequential")
    assert derive.at_step(sequential, 16)["loss"] == noise["contiguous"]["at"]["loss"]
    shuffled_40 = next(p for p in noise["points"] if p["order"] == "shuffled" and p["step"] == 40)
    assert shuffled_40["loss"] != derive.at_step(sequential, 40)["loss"]  # the orders are different runs
    # the page's "the model measured here is the run the curves show": another shuffle is another run
    other_seed = steps.curves(n_samples=800, batch_sizes=(50,), epochs=1, min_steps=40, equal_steps=(7, 16, 40),
                              fit_points=5, shuffle_seed=1)
    shuffled = next(r for r in other_seed["runs"] if r["order"] == "shuffled")
    assert any(derive.at_step(shuffled, p["step"])["loss"] != p["loss"] for p in noise["points"]
               if p["order"] == "shuffled" and p["step"] > 0)


def test_train_inspects_at_checkpoints_without_changing_the_run():
    x, y = question.make_data(300)
    init, _ = question.initial_states(n_samples=300)
    seen = []

    def inspect(step, model):
        seen.append(step)
        steps._batch_grad(model, x, y)  # leaves .grad populated: the next step must clear it

    plain = steps.train(init, x, y, batch_size=64, epochs=2, order="shuffled", checkpoints={0, 3, 10})
    inspected = steps.train(init, x, y, batch_size=64, epochs=2, order="shuffled", checkpoints={0, 3, 10},
                            inspect=inspect)
    assert seen == [0, 3, 10]
    assert [r["loss"] for r in plain["records"]] == [r["loss"] for r in inspected["records"]]
    assert all(torch.equal(a, b) for a, b in zip(plain["model"].parameters(), inspected["model"].parameters()))


# ---- 5. pitfalls -----------------------------------------------------------------------------------------------


def test_lr_sweep_small():
    before = torch.get_num_threads()
    result = steps.lr_sweep(n_samples=600, base_batch=20, multiples=(1, 3), lrs=(1e-3, 4e-3, 1.6e-2), epochs=2,
                            seeds=(0, 1), tail_points=3, threads=2)
    assert torch.get_num_threads() == before  # the sweep's own thread count does not leak
    assert result["threads"] == 2 and result["question_lr"] == question.LR
    plan = [(r["seed"], r["k"], r["lr"]) for r in result["runs"]]
    assert plan == [(s, k, lr) for s in (0, 1) for k in (1, 3) for lr in (1e-3, 4e-3, 1.6e-2)]
    for run in result["runs"]:
        total = 2 * steps_per_epoch(600, 20 * run["k"])
        assert run["batch_size"] == 20 * run["k"] and run["steps"] == total
        steps_seen = [step for step, _ in run["tail"]]
        assert len(steps_seen) == 3 and steps_seen[-1] == total and steps_seen[0] > total / 2
        assert run["tail"][-1][1] == run["final_loss"]
    # every batch size and learning rate of one seed starts from that seed's first Net()
    x, y = question.make_data(600)
    again = steps.train(question.initial_states(1, n_samples=600)[0], x, y, batch_size=60, epochs=2, lr=4e-3,
                        order="shuffled", shuffle_seed=1)
    assert again["final_loss"] == next(r["final_loss"] for r in result["runs"]
                                       if (r["seed"], r["k"], r["lr"]) == (1, 3, 4e-3))
    shown = _result(result, "lr_sweep")
    assert "<svg" in figures.lr_sweep(shown)
    table = figures.lr_sweep_table(shown)
    assert "| 1 | 20 | 60 |" in table and "best lr, seed 1" in table and "| slope |" in table


def test_best_lr_refines_on_a_parabola_and_stays_on_an_edge():
    lrs = [1e-3 * 2 ** i for i in range(6)]
    vertex = math.log(1e-3 * 2 ** 2.3)
    scores = [(math.log(lr) - vertex) ** 2 for lr in lrs]
    found = derive.best_lr(lrs, scores)
    assert found["index"] == 2 and not found["edge"]
    assert math.isclose(found["lr"], 1e-3 * 2 ** 2.3, rel_tol=1e-9)
    falling = derive.best_lr(lrs, [-i for i in range(6)])
    assert falling["edge"] and falling["lr"] == lrs[-1]
    # a flat triple is not refined past half a grid step
    assert derive.best_lr(lrs, [3, 2, 1, 1, 2, 3])["lr"] == pytest.approx(lrs[2] * 2 ** 0.5)


def test_best_lrs_fits_the_exponent_of_k():
    lrs = [1e-3 * 2 ** i for i in range(8)]
    runs = []
    for seed, power in ((0, 0.5), (1, 1.0)):
        for k in (1, 4, 16):
            centre = math.log(2e-3 * k ** power)
            runs += [{"seed": seed, "k": k, "lr": lr, "tail": [[1, 10 ** ((math.log(lr) - centre) ** 2 - 5)]]}
                     for lr in lrs]
    result = {"multiples": [1, 4, 16], "lrs": lrs, "seeds": [0, 1], "runs": runs}
    found = derive.best_lrs(result)
    assert found["exponent"][0] == pytest.approx(0.5) and found["exponent"][1] == pytest.approx(1.0)
    assert found["median"][1] == pytest.approx(2e-3)
    assert [derive.nearest_rule(e) for e in (0.2, 0.3, 0.8, -0.7)] == [0.0, 0.5, 1.0, 0.0]


def test_scheduler_sized_for_another_batch():
    result = steps.scheduler_sizing(n_samples=1000, epochs=4, planned_batch=100, smaller_batch=30, larger_batch=400)
    assert result["planned_total"] == 40
    error = result["smaller"]["error"]
    assert error["type"] == "ValueError" and error["step"] == 41 and "40" in error["message"]
    assert result["larger"]["steps_run"] == 12 and result["larger"]["error"] is None
    assert result["larger"]["lrs"][-1] > 0.5 * result["max_lr"] > 100 * result["larger_resized"]["lrs"][-1]
    assert "Tried to step 41 times" in error["message"]
    r = _result(result, "scheduler_sizing")
    assert all(c(r).holds for c in (checks.undersized_schedule_raises, checks.oversized_schedule_ends_warm,
                                    checks.resized_schedule_anneals))
    assert "<svg" in figures.scheduler(r)


def test_accumulation_counts_from_a_real_loop():
    result = steps.accumulation(n_samples=1000, batch_size=96, accumulation_steps=(1, 3, 4), epochs=2)
    for row in result["rows"]:
        assert row["with"]["steps_per_epoch"] == [row["recipe"]] * 2 == [math.ceil(11 / row["k"])] * 2
    k3 = next(r for r in result["rows"] if r["k"] == 3)
    assert k3["without"]["steps_per_epoch"] == [3, 3] and k3["without"]["largest_group"] == 5
    assert k3["with"]["partial_group_scale"] < 0.9
    r = _result(result, "accumulation")
    assert all(c(r).holds for c in (checks.accumulation_counts_match_recipe, checks.last_group_scaled_down,
                                    checks.leftovers_carry_over))
    assert checks.last_group_scaled_down(r).values["k"] == 3
    assert "| 3 |" in figures.accumulation(r)


def test_distributed_sampler_in_a_real_process_group():
    result = steps.distributed_sampler(world_size=3, n_values=(99, 100), batch_size=16, epochs=3,
                                       accumulation_steps=3, micro_batch=8, timeout_s=120)
    rows = {(r["n_samples"], r["sampler_drop_last"]): r for r in result["rows"]}
    assert rows[99, False]["per_rank_steps"] == [3, 3, 3] and rows[99, False]["single_process_steps"] == 7
    assert rows[100, False]["per_rank_samples"] == [34, 34, 34] and rows[100, False]["repeated"] == [0, 1]
    assert rows[100, False]["all_reduce_samples"] == 102 and rows[100, False]["ranks_ending_in_a_repeat"] == [1, 2]
    assert rows[100, True]["per_rank_samples"] == [33, 33, 33] and rows[100, True]["dropped"] == [99]
    # strided, not contiguous: rank r starts at r
    assert rows[100, False]["per_rank_head"] == [[0, 3, 6], [1, 4, 7], [2, 5, 8]]
    assert all(r["per_rank_steps"] == [r["recipe_steps"]] * 3 and r["backend"] == "gloo" for r in rows.values())
    assert all(r["strided"] for r in rows.values())
    # shuffled epochs: the sampler's permutation is randperm(N) seeded with seed + epoch
    shuffled = {(e["set_epoch"], e["epoch"]): e for e in result["shuffled"]}
    assert [shuffled[False, e]["permutation_of_epoch"] for e in range(3)] == [[0], [0], [0]]
    assert [shuffled[True, e]["permutation_of_epoch"] for e in range(3)] == [[0], [1], [2]]
    assert all(shuffled[False, e]["same_as_first_epoch"] == [True] * 3 for e in range(3))
    assert not any(shuffled[True, 2]["same_as_first_epoch"])
    for e in range(3):
        perm = torch.randperm(100, generator=torch.Generator().manual_seed(e)).tolist()
        assert shuffled[True, e]["repeated"] == sorted(perm[:2]) and shuffled[True, e]["order_head"] == perm[:3]
        assert shuffled[True, e]["per_rank_head"][1] == perm[1:9:3]
        assert shuffled[True, e]["ranks_ending_in_a_repeat"] == [1, 2]
    # evaluation: padded 102 samples, trimmed 99, unpadded 100 and the dataset's mean
    ev = result["evaluation"]
    assert (ev["padded"]["count"], ev["drop_last"]["count"], ev["unpadded"]["count"]) == (102, 99, 100)
    assert math.isclose(ev["unpadded"]["sum"], ev["exact"]["sum"], rel_tol=1e-6)
    assert not math.isclose(ev["padded"]["sum"] / 102, ev["exact"]["sum"] / 100, rel_tol=1e-5)
    # no_sync: one all-reduce (one bucket, this model is small) instead of k, same gradients
    for rank in result["accumulation"]["per_rank"]:
        assert rank["all_reduce_each"]["all_reduces"] == 3 and rank["no_sync"]["all_reduces"] == 1
        assert rank["no_sync"]["elements"] == sum(p.numel() for p in question.Net().parameters())
        assert rank["max_grad_difference"] <= 1e-5 * rank["max_grad"]
    r = _result(result, "distributed_sampler")
    assert checks.rank_steps_match_recipe(r).holds and checks.ranks_take_fewer_steps(r, 99).holds
    assert checks.padding_repeats_indices(r, 100).holds and checks.drop_last_skips_indices(r, 100).holds
    assert all(c(r).holds for c in (checks.shards_are_strided, checks.set_epoch_reshuffles,
                                    checks.shuffled_padding_repeats_permutation_start,
                                    checks.padded_evaluation_is_off, checks.no_sync_all_reduces_once))
    assert "| 100 |" in figures.distributed(r)
    assert "seed + 2" in figures.distributed_shards(r) and "| 102 |" in figures.distributed_evaluation(r)


def test_layout_reads_strides_repeats_and_drops():
    per_rank = [[0, 3, 6, 9], [1, 4, 7, 0], [2, 5, 8, 1]]  # N = 10 over 3 ranks, padded with 0 and 1
    layout = steps._layout(per_rank, list(range(10)), drop_last=False)
    assert layout["strided"] and layout["repeated"] == [0, 1] and layout["ranks_ending_in_a_repeat"] == [1, 2]
    contiguous = [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9, 0, 1]]
    assert not steps._layout(contiguous, list(range(10)), drop_last=False)["strided"]
    trimmed = steps._layout([[0, 3, 6], [1, 4, 7], [2, 5, 8]], list(range(10)), drop_last=True)
    assert trimmed["strided"] and trimmed["dropped"] == [9] and not trimmed["repeated"]


# ---- the page --------------------------------------------------------------------------------------------------


PAGE = ROOT / "docs" / "update-steps.md"


def test_page_blocks_are_named_and_use_the_package():
    text = PAGE.read_text()
    ids = re.findall(r'exec="1"[^\n]*\bid="([^"]+)"', text)
    assert ids and all(i.startswith("steps-") for i in ids) and len(ids) == len(set(ids))
    assert text.count('exec="1"') == len(ids)
    assert '--8<-- "snippets/step_budget.py"' in text
    modules = {"measure": steps, "figures": figures, "checks": checks, "derive": derive}
    used = re.findall(r"\b(measure|figures|checks|derive)\.(\w+)\b", text)
    assert {module for module, _ in used} == set(modules)
    for module, name in used:
        assert hasattr(modules[module], name), f"{module}.{name}"
    experiments = {name for module, name in used if module == "measure"}
    assert experiments == {name for name, value in vars(steps).items() if isinstance(value, Experiment)}, \
        "every experiment of the page's package is run on the page"
    assert "!!! success \"Takeaways\"" in text


def test_measuring_code_never_imports_presentation():
    """Editing a figure, a check or the page's words must re-run no experiment: none of them keys the cache."""
    for value in vars(steps).values():
        if isinstance(value, Experiment):
            modules = {piece.module for piece in lab_code.reach(value).pieces}
            assert modules <= {"snippets.experiments.steps.measure", "snippets.experiments.steps.question",
                               "snippets.step_budget", "snippets.lab.environment", "snippets.lab.timing",
                               "snippets.lab.progress"}, modules


def test_importing_the_package_does_no_work_and_it_runs_as_a_script():
    """In a fresh interpreter, so that no module of this test session is reloaded."""
    code = ("import torch\n"
            "torch.manual_seed(0)\n"
            "before = torch.get_rng_state()\n"
            "import snippets.experiments.steps.measure, snippets.experiments.steps.figures\n"
            "import snippets.experiments.steps.checks, snippets.experiments.steps.derive\n"
            "assert torch.equal(before, torch.get_rng_state())\n")
    process = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert process.returncode == 0, process.stderr[-3000:]
    main = ROOT / "snippets" / "experiments" / "steps" / "__main__.py"
    compile(main.read_text(), str(main), "exec")
    assert "figures." in main.read_text() and "run(measure." in main.read_text()


def test_notebook_link_resolves_in_a_strict_build(tmp_path):
    """The page's link to the notebook, in a strict build with the real notebook and mkdocs-jupyter."""
    docs = tmp_path / "docs"
    (docs / "notebooks").mkdir(parents=True)
    shutil.copy(ROOT / "docs" / "notebooks" / "question_steps.py", docs / "notebooks" / "question_steps.py")
    links = [line for line in PAGE.read_text().splitlines() if "notebooks/question_steps.py" in line]
    assert links, "the page does not link its notebook"
    (docs / "index.md").write_text("# Home\n")
    (docs / "update-steps.md").write_text("# Update-step counts\n\n" + "\n".join(links) + "\n")
    (tmp_path / "mkdocs.yml").write_text(
        "site_name: link check\n"
        "nav:\n  - index.md\n  - update-steps.md\n  - 'Question 2, reproduced': notebooks/question_steps.py\n"
        "plugins:\n  - mkdocs-jupyter:\n      include: ['notebooks/*.py']\n      execute: false\n"
        "validation:\n  links:\n    not_found: warn\n    unrecognized_links: warn\n"
    )
    process = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "-d", str(tmp_path / "site")],
                             cwd=tmp_path, capture_output=True, text=True, timeout=300,
                             env={**__import__("os").environ, "NO_MKDOCS_2_WARNING": "1"})
    assert process.returncode == 0, process.stderr[-3000:]
    html = (tmp_path / "site" / "update-steps" / "index.html").read_text()
    assert 'href="../notebooks/question_steps/"' in html
    assert (tmp_path / "site" / "notebooks" / "question_steps" / "index.html").is_file()


class _BrokenGroup:
    """What ``start_processes`` returns when a rank dies before writing its results: join raises, no files."""

    def __init__(self):
        self.processes = []

    def join(self, timeout=None):
        from torch.multiprocessing.spawn import ProcessExitedException
        raise ProcessExitedException("process 2 terminated with signal SIGABRT", error_index=2, error_pid=0,
                                     exit_code=-6, signal_name="SIGABRT")


def test_distributed_run_is_started_again_once_when_a_rank_dies(monkeypatch):
    import torch.multiprocessing as mp
    real, starts = mp.start_processes, []

    def first_one_breaks(*args, **kwargs):
        starts.append(kwargs.get("nprocs"))
        return _BrokenGroup() if len(starts) == 1 else real(*args, **kwargs)

    monkeypatch.setattr(mp, "start_processes", first_one_breaks)
    result = steps.distributed_sampler.func(world_size=2, n_values=(10, 11), batch_size=4, epochs=2,
                                            accumulation_steps=2, micro_batch=2, timeout_s=120)
    assert starts == [2, 2]
    assert [r["per_rank_samples"] for r in result["rows"]][0] == [5, 5]


def test_distributed_run_that_breaks_twice_says_so(monkeypatch):
    import torch.multiprocessing as mp
    monkeypatch.setattr(mp, "start_processes", lambda *a, **k: _BrokenGroup())
    with pytest.raises(RuntimeError, match=r"2-process gloo run failed twice; last time: process 2 terminated"):
        steps.distributed_sampler.func(world_size=2, n_values=(10, 11), batch_size=4, timeout_s=120)


def test_a_scheduler_beside_a_grad_scaler_counts_skipped_steps_unless_guarded():
    result = steps.gradscaler_skips(steps=12, overflow_at=(0, 5))
    plain, guarded = result["plain"], result["guarded"]
    assert plain["optimizer_steps"] == guarded["optimizer_steps"] == 10
    assert plain["scheduler_steps"] == 12 and guarded["scheduler_steps"] == 10
    assert plain["final_lr_factor"] == pytest.approx(0.0) and guarded["final_lr_factor"] == pytest.approx(2 / 12)
    assert plain["warnings"] and not guarded["warnings"], "a skipped first step makes torch warn of the order"
    assert checks.gradscaler_schedule_runs_ahead(_result(result, "gradscaler_skips")).holds
    with pytest.raises(ValueError, match="overflow_at within range"):
        steps.gradscaler_skips(steps=3, overflow_at=(3,))
