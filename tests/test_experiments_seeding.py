"""The seeding page's claims, checked against the installed torch at small sizes.

If a later torch changes how the DataLoader draws from the global RNG, these fail — and so does the page's
build, through its claims — instead of the site silently describing old behaviour.
"""

from __future__ import annotations

import random

import pytest
import torch
from torch.utils.data import DataLoader, TensorDataset

from snippets.experiments.seeding import checks, figures, measure as seeding

pytestmark = pytest.mark.measures  # CI runs this file on its first Python only (.ci/run)


def test_creation_order():
    result = seeding.creation_order()
    assert not any(row["equal"] for row in result["one_seed"])
    assert all(row["equal"] and row["max_abs_diff"] == 0 for row in result["reseeded"])
    assert result["same_after_reseed"]


def test_training_is_bitwise_identical_from_equal_starts():
    result = seeding.training_equivalence(epochs=60)
    fixed = result["fixed"]
    assert fixed["same_start"] and fixed["same_end"]
    assert fixed["direct"] == fixed["loader"] and result["differing_epochs"] == 0
    assert fixed["pred_direct"] == fixed["pred_loader"]
    asked = result["as_asked"]
    assert not asked["same_start"] and asked["direct"] != asked["loader"]
    # the as-asked second model really went through the DataLoader, and a copy of its start trained directly
    # repeats it: the start explains the whole difference
    assert asked["loader"] == asked["loader_start_direct"] and asked["same_end_as_loader_start_direct"]
    assert result["as_asked_unexplained_epochs"] == 0
    assert len(fixed["direct"]) == 60 and len(result["x"]) == 1000


def test_long_curves_are_kept_at_some_epochs_after_every_epoch_was_compared():
    kept = seeding.curve_epochs(2000)
    assert kept[0] == 1 and kept[-1] == 2000 and kept == sorted(set(kept))
    assert 120 <= len(kept) <= 240  # a recording keeps a few hundred points per curve, not 2,000
    assert kept[:10] == list(range(1, 11))  # dense where the loss falls fastest
    assert max(b - a for a, b in zip(kept, kept[1:])) <= 2000 // 100
    assert seeding.curve_epochs(60) == list(range(1, 61))


def test_an_epoch_that_differs_outside_the_kept_curve_is_still_counted(monkeypatch):
    """The comparison runs on every epoch before the curves are thinned: a difference at an epoch the stored curve
    does not keep still counts. (The curve keeps 10 points here, so that 60 epochs are thinned as 600 would be.)"""
    real, thin = seeding.train_loader, seeding.curve_epochs

    def one_epoch_off(model, loader, epochs):
        losses = real(model, loader, epochs)
        losses[epochs - 2] += 1.0  # the second-to-last epoch, which the thinned curve does not keep
        return losses

    monkeypatch.setattr(seeding, "curve_epochs", lambda epochs: thin(epochs, points=10))
    assert 59 not in seeding.curve_epochs(60) and 60 in seeding.curve_epochs(60)
    monkeypatch.setattr(seeding, "train_loader", one_epoch_off)
    result = seeding.training_equivalence(epochs=60)
    assert result["differing_epochs"] == 1 and result["as_asked_unexplained_epochs"] == 1
    assert result["fixed"]["direct"] == result["fixed"]["loader"]  # the kept points agree...
    assert not checks.equal_starts_identical(result).holds  # ...and the check fails all the same
    assert not checks.as_asked_start_explains(result).holds


def test_as_asked_second_model_is_trained_through_the_dataloader(monkeypatch):
    """The as-asked curve labelled "DataLoader" must come from the DataLoader loop, in both runs."""
    calls = []
    real = seeding.train_loader

    def spy(model, loader, epochs, *args, **kwargs):
        calls.append(type(loader).__name__)
        return real(model, loader, epochs, *args, **kwargs)

    monkeypatch.setattr(seeding, "train_loader", spy)
    seeding.training_equivalence(epochs=3)
    assert calls == ["DataLoader", "DataLoader"]


def test_experiments_do_not_disturb_the_global_stream():
    torch.manual_seed(42)
    before = torch.get_rng_state()
    seeding.training_equivalence(epochs=2)
    seeding.rng_consumers()
    seeding.loader_between_models()
    seeding.generator_isolation()
    assert torch.equal(before, torch.get_rng_state())


def test_dataloader_draws_match_the_installed_torch():
    rows = seeding.rng_consumers()["by_name"]
    assert rows["iter(DataLoader(..., shuffle=False))"]["int64_draws"] == 1
    assert rows["one epoch, shuffle=False"]["int64_draws"] == 1
    assert rows["iter(DataLoader(..., shuffle=True))"]["int64_draws"] == 1  # the sampler draws lazily
    assert rows["one epoch, shuffle=True"]["int64_draws"] == 2
    assert not rows["one epoch, shuffle=True, generator=g"]["advances"]
    assert rows["nn.Linear(1, 10) — module construction"]["advances"]
    assert rows["nn.Dropout(0.5) forward, train mode"]["advances"]
    assert not rows["nn.Dropout(0.5) forward, eval mode"]["advances"]
    assert not rows["len(DataLoader(...))"]["advances"]
    assert not rows["torch.linspace(-10, 10, 1000)"]["advances"]
    # with workers, iter() prefetches: the sampler's seed is drawn there, beside the base seed
    assert rows["iter(DataLoader(..., shuffle=False, num_workers=2))"]["int64_draws"] == 1
    assert rows["iter(DataLoader(..., shuffle=True, num_workers=2))"]["int64_draws"] == 2
    # persistent workers: one iterator for all epochs, so the base seed is drawn once
    persistent = [[rows[f"epoch {epoch}, shuffle={shuffle}, num_workers=2, persistent_workers=True"]["int64_draws"]
                   for epoch in (1, 2, 3)] for shuffle in (False, True)]
    assert persistent == [[1, 0, 0], [2, 1, 1]]


def test_rng_consumers_leaves_no_worker_running():
    import multiprocessing

    before = set(multiprocessing.active_children())
    seeding.rng_consumers(num_workers=2)
    assert set(multiprocessing.active_children()) <= before


def test_rng_consumers_rejects_no_workers():
    import pytest

    with pytest.raises(ValueError, match="num_workers"):
        seeding.rng_consumers(num_workers=0)


def test_int64_draw_count_is_exact():
    """The counter itself: k explicit draws are recognised as k, and a float draw as none."""
    torch.manual_seed(0)
    for k in range(4):
        before = torch.get_rng_state()
        for _ in range(k):
            torch.empty((), dtype=torch.int64).random_()
        assert seeding._int64_draws(before, torch.get_rng_state()) == k
    before = torch.get_rng_state()
    torch.rand(1000)
    assert seeding._int64_draws(before, torch.get_rng_state()) is None


def test_loader_iterator_between_models_changes_the_second():
    result = seeding.loader_between_models()
    assert result == {"first_model_unchanged": True, "second_model_unchanged": False, "seeded_models_equal": True}


def test_generator_isolation():
    result = seeding.generator_isolation(n_samples=30, batch_size=5)
    assert result["global_untouched"] and result["order_repeats"] and result["global_order_shifted"]
    # the page's figure of a first batch must be what a loader with that generator yields
    loader = DataLoader(TensorDataset(torch.arange(30)), batch_size=5, shuffle=True,
                        generator=torch.Generator().manual_seed(1234))
    assert next(iter(loader))[0].tolist() == result["first_batch"]


def test_worker_seeds():
    result = seeding.worker_seeds(num_workers=2)
    rows = result["rows"]
    assert result["workers"] == 2 and [row["worker"] for row in rows] == [0, 1]
    assert result["repeatable"] and result["fixed_repeatable"]
    # torch seeds itself and random with base_seed + worker_id, and reports it as get_worker_info().seed
    assert rows[1]["torch_seed"] - rows[0]["torch_seed"] == 1
    assert all(row["torch_seed"] == row["info_seed"] for row in rows)
    assert all(row["random"] == row["random_from_info_seed"] for row in rows)
    # NumPy: seeded per worker, not with base_seed + worker_id
    assert rows[0]["numpy"] != rows[1]["numpy"]
    assert all(row["numpy"] != row["numpy_seed_worker"] for row in rows)
    # a generator the dataset owns: copied as it was into every worker, unless worker_init_fn re-seeds it
    assert rows[0]["own_generator"] == rows[1]["own_generator"]
    fixed = result["fixed_rows"]
    assert fixed[0]["own_generator"] != fixed[1]["own_generator"]
    assert [row["numpy"] for row in fixed] == [row["numpy"] for row in rows], "the init fn touches only its generator"


def test_worker_numpy_seed_is_torchs_seed_sequence_hash():
    """What the page says torch does, checked against torch's own function for it."""
    import numpy
    from torch.utils.data._utils.worker import _generate_state

    rows = seeding.worker_seeds(num_workers=2)["rows"]
    base = rows[0]["torch_seed"]
    for row in rows:
        expected = numpy.random.RandomState(_generate_state(base, row["worker"])).random_sample()
        assert row["numpy"] == expected


def test_worker_seeds_needs_two_workers():
    with pytest.raises(ValueError, match="num_workers"):
        seeding.worker_seeds(num_workers=1)


def test_thread_count_effect_restores_threads_and_reports_what_it_measured():
    threads = torch.get_num_threads()
    result = seeding.thread_count_effect(n_values=100_003, size=32, epochs=3)
    assert torch.get_num_threads() == threads
    assert result["thread_counts"] == [1, max(2, threads)], "always two counts, also on a one-thread machine"
    assert len(result["rows"]) == 4
    # "equal" (torch.equal) and the largest difference are measured separately: they must agree row by row,
    # and the verdict must follow the differences.
    for row in result["rows"]:
        assert row["equal"] == (row["max_abs_diff"] == 0), row
        assert row["repeatable"], row
    assert result["any_differs"] == any(row["max_abs_diff"] > 0 for row in result["rows"])
    # The first row, measured again here: the same vector summed with one thread and with more.
    vector = torch.randn(100_003, generator=torch.Generator().manual_seed(0))
    sums = []
    try:
        for count in result["thread_counts"]:
            torch.set_num_threads(count)
            sums.append(vector.sum())
    finally:
        torch.set_num_threads(threads)
    assert result["rows"][0]["equal"] == torch.equal(sums[0], sums[-1])
    assert result["rows"][0]["max_abs_value"] == pytest.approx(sums[0].abs().item(), rel=1e-4)
    # the table puts each difference on the scale of its values
    table = figures.thread_count_effect(result)
    assert r"max \|Δ\| ÷ max \|value\|" in table
    first = result["rows"][0]
    expected = f"{first['max_abs_diff'] / first['max_abs_value']:.2g}"
    assert f"| {expected} |" in table.splitlines()[2], table


def test_thread_count_effect_tells_a_repeat_from_a_thread_effect(monkeypatch):
    """A computation that differs from call to call is reported as not repeatable, not as a thread effect."""
    calls = iter(range(1000))
    real_train = seeding.train_direct

    def noisy_train(model, x, y, epochs, *args, **kwargs):
        losses = real_train(model, x, y, epochs, *args, **kwargs)
        return [losses[0] + next(calls)] + losses[1:]

    monkeypatch.setattr(seeding, "train_direct", noisy_train)
    rows = seeding.thread_count_effect(n_values=1_001, size=8, epochs=2)["rows"]
    assert [row["repeatable"] for row in rows] == [True, True, True, False]


def test_renderers_produce_tables_and_svg(private_cache):
    from snippets.lab import run

    assert "| `fc1.weight` | 10×1 | **no** |" in figures.creation_order(run(seeding.creation_order))
    eq = run(seeding.training_equivalence, epochs=5)
    assert figures.loss_curves(eq).count("<svg") == 1
    assert figures.fits(eq).count("<svg") == 1
    assert "`iter(DataLoader(..., shuffle=False))` | **yes** | 1 |" in figures.rng_consumers(run(seeding.rng_consumers))
    table = figures.deterministic_operations(run(seeding.deterministic_mode, epochs=2, runs=2))
    assert "| `index_put_(..., accumulate=True)` |" in table and "distinct results in 2 runs, flag off" in table


def test_deterministic_mode_runs_on_the_pages_device_and_restores_settings(monkeypatch):
    monkeypatch.setenv("PITFALLS_DEVICE", "cpu")
    threads = torch.get_num_threads()
    flags = (torch.are_deterministic_algorithms_enabled(), torch.is_deterministic_algorithms_warn_only_enabled())
    result = seeding.deterministic_mode(epochs=3, n_indices=100_000, runs=4)
    assert torch.get_num_threads() == threads
    assert (torch.are_deterministic_algorithms_enabled(), torch.is_deterministic_algorithms_warn_only_enabled()) == flags
    assert result["device"] == "cpu" and result["threads"] == max(2, threads)
    assert result["identical"]
    assert result["strict_raises"] and result["warn_only_runs"] and result["warn_only_warned"]
    assert result["fill_uninitialized_memory"] and result["empty_all_nan"] and result["empty_int_all_max"]
    rows = {row["operation"]: row for row in result["rows"]}
    assert len(rows) == 4 and "__getitem__ (backward of w[index])" in rows and all(row["distinct_on"] == 1 and not row["raises_on"] for row in rows.values())
    assert all(1 <= row["distinct_off"] <= 4 and 0 <= row["off_equal_to_on"] <= 4 for row in rows.values())
    # the measured operations are the ones the installed docstring lists for the CPU
    for row in rows.values():
        assert any(f"`{row['documented_as']}`" in entry for entry in result["documented_cpu"]), row


def test_documented_cpu_operations_parse_the_docstring(monkeypatch):
    doc = """Sets whether...
    The following normally-nondeterministic operations will act
    deterministically when ``mode=True``:

        * :class:`torch.nn.Conv1d` when called on CUDA tensor
        * :func:`torch.Tensor.put_` with ``accumulate=True`` when called on a CPU
          tensor

    The following normally-nondeterministic operations will throw a
    :class:`RuntimeError` when ``mode=True``:

        * :class:`torch.nn.MaxUnpool1d` on a CPU tensor
    """
    monkeypatch.setattr(torch.use_deterministic_algorithms, "__doc__", doc)
    assert seeding._documented_cpu_operations() == ["`torch.Tensor.put_` with `accumulate=True` when called on a "
                                                    "CPU tensor"]


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device; CPU twin: "
                    "test_deterministic_mode_runs_on_the_pages_device_and_restores_settings")
def test_deterministic_mode_on_cuda(monkeypatch):
    monkeypatch.setenv("PITFALLS_DEVICE", "cuda")
    result = seeding.deterministic_mode(epochs=3, n_indices=100_000, runs=3)
    assert result["device"] == "cuda"
    assert all(row["distinct_on"] == 1 or row["raises_on"] for row in result["rows"])


def test_cublas_requirement_is_read_from_the_installed_docstring(monkeypatch):
    monkeypatch.setenv("PITFALLS_DEVICE", "cpu")
    doc = torch.use_deterministic_algorithms.__doc__ or ""
    assert seeding.cublas_workspace_config()["documented"] == ("CUBLAS_WORKSPACE_CONFIG" in doc)
    monkeypatch.setattr(torch.use_deterministic_algorithms, "__doc__", doc + "\n set CUBLAS_WORKSPACE_CONFIG=:4096:8")
    assert seeding.cublas_workspace_config() == {"torch": torch.__version__, "device": "cpu", "documented": True,
                                                 "raises_without": None}
    monkeypatch.setattr(torch.use_deterministic_algorithms, "__doc__", "nothing about cuBLAS")
    assert seeding.cublas_workspace_config()["documented"] is False


def test_cublas_config_is_set_only_for_cuda_on_a_torch_that_asks(monkeypatch):
    import os

    monkeypatch.delenv("CUBLAS_WORKSPACE_CONFIG", raising=False)
    monkeypatch.setattr(torch.use_deterministic_algorithms, "__doc__", "needs CUBLAS_WORKSPACE_CONFIG=:4096:8")
    with seeding._cublas_config_if_required(torch.device("cuda")):
        assert os.environ["CUBLAS_WORKSPACE_CONFIG"] == ":4096:8"
    assert "CUBLAS_WORKSPACE_CONFIG" not in os.environ
    with seeding._cublas_config_if_required(torch.device("cpu")):
        assert "CUBLAS_WORKSPACE_CONFIG" not in os.environ
    monkeypatch.setenv("CUBLAS_WORKSPACE_CONFIG", ":16:8")
    with seeding._cublas_config_if_required(torch.device("cuda")):
        assert os.environ["CUBLAS_WORKSPACE_CONFIG"] == ":16:8"
    monkeypatch.setattr(torch.use_deterministic_algorithms, "__doc__", "no such paragraph")
    monkeypatch.delenv("CUBLAS_WORKSPACE_CONFIG")
    with seeding._cublas_config_if_required(torch.device("cuda")):
        assert "CUBLAS_WORKSPACE_CONFIG" not in os.environ


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device; CPU twin: "
                    "test_cublas_requirement_is_read_from_the_installed_docstring")
def test_cublas_requirement_matches_behaviour_on_cuda(monkeypatch):
    monkeypatch.setenv("PITFALLS_DEVICE", "cuda")
    result = seeding.cublas_workspace_config()
    assert result["raises_without"] == result["documented"]


def test_rng_consumers_has_no_cuda_rows_on_the_cpu(monkeypatch):
    monkeypatch.setenv("PITFALLS_DEVICE", "cpu")
    assert seeding.rng_consumers()["cuda_rows"] == []


@pytest.mark.cuda
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device; CPU twin: "
                    "test_rng_consumers_has_no_cuda_rows_on_the_cpu, and the synthetic CUDA rows of "
                    "test_checks_seeding")
def test_cuda_generator_rows(monkeypatch):
    monkeypatch.setenv("PITFALLS_DEVICE", "cuda")
    rows = {row["operation"]: row for row in seeding.rng_consumers()["cuda_rows"]}
    assert rows['nn.Linear(1, 10, device="cuda")'] == {"operation": 'nn.Linear(1, 10, device="cuda")',
                                                       "cpu_advances": False, "cuda_advances": True}
    assert rows['nn.Linear(1, 10).to("cuda")']["cpu_advances"]
    assert not rows['nn.Linear(1, 10).to("cuda")']["cuda_advances"]


def test_every_rank_seeded_alike_shares_its_workers_streams_and_a_sampler_seed_per_rank_breaks_the_shards():
    result = seeding.ddp_seeds()
    assert result["alike_draws_equal"] and result["alike_indices_differ"] and not result["per_rank_draws_equal"]
    assert result["one_seed"] == {"on_two_or_more_ranks": 0, "on_no_rank": 0}
    assert result["seed_per_rank"]["on_two_or_more_ranks"] > 0 and result["seed_per_rank"]["on_no_rank"] > 0
    # every sample is counted once: as many land on two ranks as on none (world size 2, equal shards)
    assert result["seed_per_rank"]["on_two_or_more_ranks"] == result["seed_per_rank"]["on_no_rank"]
    assert checks.ddp_workers_share_streams(result).holds and checks.ddp_sampler_seed_shared(result).holds
    with pytest.raises(ValueError, match="world_size must be >= 2"):
        seeding.ddp_seeds(world_size=1)


def test_a_resumed_run_repeats_the_uninterrupted_one_only_with_every_random_state():
    result = seeding.checkpoint_resume(n_samples=64, epochs=2)
    by = {tuple(v["restored"]): v["equal"] for v in result["variants"]}
    assert len(by) == 2 ** len(seeding.RESUME_STATES) + 1
    assert [key for key, equal in by.items() if equal] == [("torch", "loader", "random"), ("recipe",)]
    assert result["sampler_epoch_order_differs"]
    assert checks.resume_needs_every_state(result).holds and checks.resume_sampler_epoch(result).holds
    python_before, torch_before = random.getstate(), torch.get_rng_state()
    seeding.checkpoint_resume(n_samples=32, epochs=2)
    assert random.getstate() == python_before and torch.equal(torch_before, torch.get_rng_state()), \
        "the experiment leaves the streams it seeds as it found them"
    with pytest.raises(ValueError, match="epochs must be >= 2"):
        seeding.checkpoint_resume(epochs=1)


def test_compiled_dropout_draws_its_own_way_unless_inductor_falls_back_to_eager_random():
    import torch._inductor.config as inductor_config

    before = inductor_config.fallback_random
    result = seeding.compiled_randomness(n=16)
    assert inductor_config.fallback_random == before, "the Inductor setting is put back"
    if not result["available"]:  # no C++ compiler here: said on the page, and the check does not hold
        assert result["error"] and not checks.compiled_dropout_differs(result).holds
        return
    assert not result["default"]["same_mask"] and not result["default"]["same_state"]
    assert result["fallback_random"]["same_mask"] and result["fallback_random"]["same_state"]
    assert checks.compiled_dropout_differs(result).holds


def test_a_compiler_that_cannot_run_is_kept_as_an_error_not_raised(monkeypatch):
    def no_compiler(*args, **kwargs):
        raise RuntimeError("InvalidCxxCompiler: No working C++ compiler found\nmore lines")

    monkeypatch.setattr(torch, "compile", no_compiler)
    result = seeding.compiled_randomness(n=8)
    assert result == {"n": 8, "p": 0.5, "available": False,
                      "error": "RuntimeError: InvalidCxxCompiler: No working C++ compiler found"}
    outcome = checks.compiled_dropout_differs(result)
    assert not outcome.holds and outcome.values == {"error": result["error"]}
