"""Each check behind a claim on the seeding page holds on the real measurement and fails on a contradiction."""

from __future__ import annotations

import pytest

from checks_support import Contradiction, Measured, Synthetic, assert_check_can_fail
from snippets.experiments.seeding import checks, measure  # noqa: F401
from snippets.lab.claims import topic_checks as claims_of_topics

pytestmark = pytest.mark.measures  # CI runs this file on its first Python only (.ci/run)


def _set(path: list, value):
    def edit(result: dict) -> None:
        target = result
        for key in path[:-1]:
            target = target[key]
        target[path[-1]] = value
    return edit


CREATION = Measured(measure.creation_order)
TRAINING = Measured(measure.training_equivalence, (("epochs", 20),))
CONSUMERS = Measured(measure.rng_consumers)
BETWEEN = Measured(measure.loader_between_models)
SPLIT = Measured(measure.split_order)
GENERATOR = Measured(measure.generator_isolation, (("n_samples", 30), ("batch_size", 5)))
WORKERS = Measured(measure.worker_seeds)
THREADS = Measured(measure.thread_count_effect, (("n_values", 100_003), ("size", 32), ("epochs", 3)))
DDP = Measured(measure.ddp_seeds)
RESUME = Measured(measure.checkpoint_resume, (("epochs", 2), ("n_samples", 64)))
COMPILED = Measured(measure.compiled_randomness, (("n", 16),))
DETERMINISTIC = Measured(measure.deterministic_mode, (("epochs", 5), ("n_indices", 100_000), ("runs", 3)))


def _unshuffled_draws_twice(result: dict) -> None:
    result["by_name"]["one epoch, shuffle=False"]["int64_draws"] = 2


def _cuda_rows() -> dict:
    # what a CUDA machine measures (its twin on the GPU: test_experiments_seeding.test_cuda_generator_rows)
    def row(operation, cpu, cuda):
        return {"operation": operation, "cpu_advances": cpu, "cuda_advances": cuda}

    return {"cuda_rows": [row('nn.Linear(1, 10, device="cuda")', False, True),
                          row('nn.Linear(1, 10).to("cuda")', True, False),
                          row("nn.Dropout(0.5) forward on CUDA, train mode", False, True),
                          row('torch.randn(8, device="cuda")', False, True)]}


def _cuda_dropout_draws_on_the_cpu(result: dict) -> None:
    result["cuda_rows"][2].update(cpu_advances=True, cuda_advances=False)


def _persistent_epochs_all_draw(result: dict) -> None:
    # what torch would measure if every epoch created a new iterator, as without persistent workers
    result["by_name"]["epoch 2, shuffle=False, num_workers=2, persistent_workers=True"]["int64_draws"] = 1


def _workers_share_a_seed(result: dict) -> None:
    for row in result["rows"]:
        row["torch_seed"] = row["info_seed"] = 7


def _numpy_seeded_as_the_recipe_does(result: dict) -> None:
    # what a torch that seeded NumPy with base_seed + worker_id, as seed_worker does, would give
    for row in result["rows"]:
        row["numpy"] = row["numpy_seed_worker"]


def _thread_invariant(result: dict) -> None:
    # what a torch whose reductions did not depend on the thread count would measure
    for row in result["rows"]:
        row.update(equal=True, max_abs_diff=0.0)


CONTRADICTING = {
    "seeding.equal_starts_identical": Contradiction(TRAINING, _set(["differing_epochs"], 1)),
    "seeding.same_final_weights": Contradiction(TRAINING, _set(["fixed", "same_end"], False)),
    "seeding.as_asked_differ": Contradiction(TRAINING, _set(["as_asked", "same_start"], True)),
    "seeding.as_asked_start_explains": Contradiction(
        TRAINING, lambda r: r["as_asked"]["loader_start_direct"].__setitem__(-1, r["as_asked"]["loader"][-1] + 1.0)),
    "seeding.unshuffled_loader_draws": Contradiction(CONSUMERS, _unshuffled_draws_twice),
    "seeding.shuffled_loader_draws": Contradiction(
        CONSUMERS, lambda r: r["by_name"]["one epoch, shuffle=True"].update(int64_draws=1)),
    "seeding.workers_draw_at_iter": Contradiction(
        CONSUMERS, lambda r: r["by_name"]["iter(DataLoader(..., shuffle=True, num_workers=2))"].update(int64_draws=1)),
    "seeding.persistent_workers_draw_once": Contradiction(CONSUMERS, _persistent_epochs_all_draw),
    "seeding.cuda_has_its_own_generator": Contradiction(Synthetic(_cuda_rows), _cuda_dropout_draws_on_the_cpu),
    "seeding.generator_loader_draws_nothing": Contradiction(
        CONSUMERS, lambda r: r["by_name"]["one epoch, shuffle=True, generator=g"].update(advances=True)),
    "seeding.peek_changes_second": Contradiction(BETWEEN, _set(["second_model_unchanged"], True)),
    "seeding.seeded_blocks_equal": Contradiction(BETWEEN, _set(["seeded_models_equal"], False)),
    "seeding.split_moved_by_model": Contradiction(SPLIT, _set(["moved"], 0)),
    "seeding.split_generator_stable": Contradiction(SPLIT, _set(["generator_same"], False)),
    "seeding.generator_leaves_global": Contradiction(GENERATOR, _set(["global_untouched"], False)),
    "seeding.generator_order_repeats": Contradiction(GENERATOR, _set(["order_repeats"], False)),
    "seeding.global_order_shifted": Contradiction(GENERATOR, _set(["global_order_shifted"], False)),
    "seeding.workers_distinct_torch_seeds": Contradiction(WORKERS, _workers_share_a_seed),
    "seeding.workers_random_seeded": Contradiction(WORKERS, lambda r: r["rows"][1].update(random=0.5)),
    "seeding.workers_numpy_not_seed_worker": Contradiction(WORKERS, _numpy_seeded_as_the_recipe_does),
    "seeding.workers_own_generator_copied": Contradiction(
        WORKERS, lambda r: r["rows"][1].update(own_generator=r["rows"][1]["own_generator"] / 2)),
    "seeding.workers_init_fn_reseeds": Contradiction(WORKERS, _set(["fixed_repeatable"], False)),
    "seeding.threads_repeatable": Contradiction(THREADS, lambda r: r["rows"][2].update(repeatable=False)),
    "seeding.threads_change_results": Contradiction(THREADS, _thread_invariant),
    "seeding.deterministic_identical": Contradiction(DETERMINISTIC, _set(["identical"], False)),
    "seeding.docstring_lists_cpu_operations": Contradiction(DETERMINISTIC, _set(["documented_cpu"], [])),
    "seeding.deterministic_listed_repeat": Contradiction(
        DETERMINISTIC, lambda r: r["rows"][0].update(distinct_on=2)),
    "seeding.deterministic_warn_only": Contradiction(DETERMINISTIC, _set(["warn_only_warned"], False)),
    "seeding.deterministic_fills_empty": Contradiction(DETERMINISTIC, _set(["empty_all_nan"], False)),
    "seeding.ddp_workers_share_streams": Contradiction(DDP, _set(["per_rank_draws_equal"], True)),
    "seeding.ddp_sampler_seed_shared": Contradiction(DDP, lambda r: r["seed_per_rank"].update(on_no_rank=0)),
    "seeding.resume_needs_every_state": Contradiction(RESUME, lambda r: r["variants"][3].update(equal=True)),
    "seeding.resume_sampler_epoch": Contradiction(RESUME, _set(["sampler_epoch_order_differs"], False)),
    "seeding.compiled_dropout_differs": Contradiction(
        COMPILED, lambda r: r["fallback_random"].update(same_state=False)),
    "seeding.cublas_config_as_documented": Contradiction(
        Synthetic(lambda: {"torch": "2.13.0", "device": "cuda", "documented": False, "raises_without": False}),
        _set(["raises_without"], True)),
}


@pytest.mark.parametrize("name", sorted(CONTRADICTING))
def test_check_holds_on_the_measurement_and_fails_on_a_contradiction(name):
    assert_check_can_fail(name, CONTRADICTING[name])


def test_cublas_check_cannot_hold_without_a_gpu_measurement():
    """On a CPU-only machine the page prints no cuBLAS claim; the check itself must not hold there."""
    CHECKS = claims_of_topics()

    cpu = {"torch": "2.13.0", "device": "cpu", "documented": False, "raises_without": None}
    assert not CHECKS["seeding.cublas_config_as_documented"](cpu).holds
    old_torch_on_gpu = {"torch": "2.3.0", "device": "cuda", "documented": True, "raises_without": True}
    assert CHECKS["seeding.cublas_config_as_documented"](old_torch_on_gpu).holds


def test_docstring_check_fails_when_a_measured_operation_is_not_listed():
    CHECKS = claims_of_topics()

    result = {"documented_cpu": ["`torch.Tensor.index_put` with `accumulate=True` when called on a CPU tensor"],
              "rows": [{"documented_as": "torch.Tensor.index_put"}, {"documented_as": "torch.Tensor.put_"}]}
    assert not CHECKS["seeding.docstring_lists_cpu_operations"](result).holds
    result["rows"].pop()
    assert CHECKS["seeding.docstring_lists_cpu_operations"](result).holds


def test_cuda_generator_check_cannot_hold_without_cuda_rows():
    CHECKS = claims_of_topics()

    assert not CHECKS["seeding.cuda_has_its_own_generator"]({"cuda_rows": []}).holds
