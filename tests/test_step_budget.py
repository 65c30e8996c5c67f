"""The step-count recipe against the real classes: len(DataLoader), DistributedSampler, an accumulation loop."""

from __future__ import annotations

import itertools
import shutil
import re
import subprocess
import sys

import pytest
import torch
from torch.utils.data import DataLoader, DistributedSampler, TensorDataset

from conftest import ROOT
from snippets.step_budget import epochs_for_steps, scaler_stepped, steps_per_epoch, total_steps


def _dataset(n: int) -> TensorDataset:
    return TensorDataset(torch.arange(n))


@pytest.mark.parametrize("drop_last", [False, True])
def test_matches_len_dataloader(drop_last):
    for n, batch in itertools.product([*range(0, 41), 97, 1000, 1023, 10_000], [1, 2, 3, 5, 7, 8, 64, 512, 10_000]):
        loader = DataLoader(_dataset(n), batch_size=batch, drop_last=drop_last)
        assert steps_per_epoch(n, batch, drop_last=drop_last) == len(loader), (n, batch, drop_last)


def test_matches_batches_actually_yielded():
    with torch.random.fork_rng(devices=[]):
        for n, batch, drop_last in itertools.product([0, 1, 9, 10, 11, 100], [1, 3, 10, 64], [False, True]):
            loader = DataLoader(_dataset(n), batch_size=batch, drop_last=drop_last, shuffle=n > 0)
            assert steps_per_epoch(n, batch, drop_last=drop_last) == sum(1 for _ in loader)


def test_matches_distributed_sampler_on_every_rank():
    """DistributedSampler needs no process group when num_replicas and rank are given."""
    checked = 0
    for n, world, batch in itertools.product([0, 1, 2, 3, 5, 10, 11, 97, 1001], [1, 2, 3, 4, 8], [1, 3, 4, 64]):
        for sampler_drop_last, drop_last in itertools.product([False, True], repeat=2):
            expected = steps_per_epoch(n, batch, drop_last=drop_last, world_size=world,
                                       sampler_drop_last=sampler_drop_last)
            for rank in range(world):
                sampler = DistributedSampler(_dataset(n), num_replicas=world, rank=rank, shuffle=False,
                                             drop_last=sampler_drop_last)
                loader = DataLoader(_dataset(n), batch_size=batch, sampler=sampler, drop_last=drop_last)
                assert len(loader) == expected, (n, world, batch, sampler_drop_last, drop_last, rank)
                assert len(list(sampler)) == len(sampler)
                checked += 1
    assert checked > 1000


def test_distributed_sampler_layout_is_as_the_docstring_says():
    """Strided shards; padding from the start of the (shuffled) list, at the end of the last ranks; set_epoch."""
    for n, world, shuffle, epoch in itertools.product([1, 5, 10, 11, 97], [2, 3, 4, 8], [False, True], [0, 1]):
        order = torch.randperm(n, generator=torch.Generator().manual_seed(epoch)).tolist() if shuffle \
            else list(range(n))
        pad = -n % world
        padded = (order * (pad // n + 2))[:n + pad]
        for sampler_drop_last in (False, True):
            dealt = order[:n // world * world] if sampler_drop_last else padded
            for rank in range(world):
                sampler = DistributedSampler(_dataset(n), num_replicas=world, rank=rank, shuffle=shuffle,
                                             drop_last=sampler_drop_last)
                sampler.set_epoch(epoch)
                indices = list(sampler)
                assert indices == dealt[rank::world], (n, world, shuffle, epoch, sampler_drop_last, rank)
                assert len(indices) == steps_per_epoch(n, 1, world_size=world, sampler_drop_last=sampler_drop_last)
                if not sampler_drop_last and n >= world:  # the repeats are the last entries of the last ranks
                    assert (indices[-1] in order[:pad]) == (rank >= world - pad), (n, world, rank)
    repeat = DistributedSampler(_dataset(10), num_replicas=2, rank=0)
    assert list(repeat) == list(repeat)  # no set_epoch: the same order every epoch
    repeat.set_epoch(1)
    assert list(repeat) != list(DistributedSampler(_dataset(10), num_replicas=2, rank=0))


def _count_accumulation_steps(loader: DataLoader, k: int) -> int:
    steps = 0
    for i, _ in enumerate(loader):
        if (i + 1) % k == 0 or i + 1 == len(loader):
            steps += 1
    return steps


def test_matches_the_accumulation_loop():
    with torch.random.fork_rng(devices=[]):
        for n, batch, k, drop_last in itertools.product([0, 1, 10, 33, 100], [1, 4, 10], [1, 2, 3, 4, 7, 50],
                                                        [False, True]):
            loader = DataLoader(_dataset(n), batch_size=batch, drop_last=drop_last)
            assert steps_per_epoch(n, batch, drop_last=drop_last, accumulation_steps=k) == \
                _count_accumulation_steps(loader, k), (n, batch, k, drop_last)


def test_distributed_and_accumulation_together():
    with torch.random.fork_rng(devices=[]):
        for n, world, batch, k in itertools.product([10, 11, 103], [2, 3], [2, 5], [1, 2, 3]):
            sampler = DistributedSampler(_dataset(n), num_replicas=world, rank=world - 1, shuffle=False)
            loader = DataLoader(_dataset(n), batch_size=batch, sampler=sampler)
            assert steps_per_epoch(n, batch, world_size=world, accumulation_steps=k) == \
                _count_accumulation_steps(loader, k)


def test_the_question_numbers():
    assert steps_per_epoch(10_000, 512) == 20 and 10_000 // 512 == 19
    assert total_steps(10_000, 512, 20) == 400
    assert total_steps(10_000, 10_000, 400) == 400
    assert epochs_for_steps(400, 10_000, 10_000) == 400
    assert steps_per_epoch(10_000, 512, drop_last=True) == 19
    assert steps_per_epoch(10_000, 512, world_size=2) == 10
    assert steps_per_epoch(10_000, 512, world_size=2, accumulation_steps=3) == 4


def test_total_steps_and_epochs_for_steps_are_consistent():
    options = [{}, {"drop_last": True}, {"world_size": 3}, {"accumulation_steps": 4},
               {"world_size": 2, "sampler_drop_last": True, "accumulation_steps": 3}]
    for n, batch, opts in itertools.product([1, 7, 100, 10_000], [1, 3, 64, 512], options):
        per_epoch = steps_per_epoch(n, batch, **opts)
        for epochs in range(0, 6):
            assert total_steps(n, batch, epochs, **opts) == epochs * per_epoch
        if per_epoch == 0:
            continue
        for target in range(0, 3 * per_epoch + 2):
            e = epochs_for_steps(target, n, batch, **opts)
            assert total_steps(n, batch, e, **opts) >= target
            assert e == 0 or total_steps(n, batch, e - 1, **opts) < target  # the fewest epochs


def test_unreachable_target_raises():
    assert steps_per_epoch(10, 64, drop_last=True) == 0
    assert epochs_for_steps(0, 10, 64, drop_last=True) == 0
    with pytest.raises(ValueError, match="target_steps=5"):
        epochs_for_steps(5, 10, 64, drop_last=True)


def test_accepts_integer_like_values():
    import numpy

    assert steps_per_epoch(numpy.int64(10_000), torch.tensor(512)) == 20


BAD = [
    ("n_samples", -1, ValueError, "n_samples must be >= 0, got -1"),
    ("n_samples", 10.0, TypeError, "n_samples must be an integer, got 10.0 (float)"),
    ("n_samples", True, TypeError, "n_samples must be an integer, got the bool True"),
    ("n_samples", "100", TypeError, "n_samples must be an integer, got '100' (str)"),
    ("n_samples", None, TypeError, "n_samples must be an integer, got None (NoneType)"),
    ("batch_size", 0, ValueError, "batch_size must be >= 1, got 0"),
    ("batch_size", -5, ValueError, "batch_size must be >= 1, got -5"),
    ("batch_size", 2.5, TypeError, "batch_size must be an integer, got 2.5 (float)"),
    ("batch_size", False, TypeError, "batch_size must be an integer, got the bool False"),
    ("world_size", 0, ValueError, "world_size must be >= 1, got 0"),
    ("world_size", 1.0, TypeError, "world_size must be an integer, got 1.0 (float)"),
    ("world_size", True, TypeError, "world_size must be an integer, got the bool True"),
    ("accumulation_steps", 0, ValueError, "accumulation_steps must be >= 1, got 0"),
    ("accumulation_steps", "2", TypeError, "accumulation_steps must be an integer, got '2' (str)"),
    ("accumulation_steps", True, TypeError, "accumulation_steps must be an integer, got the bool True"),
    ("drop_last", 1, TypeError, "drop_last must be a bool, got 1 (int)"),
    ("drop_last", "yes", TypeError, "drop_last must be a bool, got 'yes' (str)"),
    ("sampler_drop_last", None, TypeError, "sampler_drop_last must be a bool, got None (NoneType)"),
]


@pytest.mark.parametrize("name, value, error, message", BAD)
def test_bad_input_names_the_argument_and_value(name, value, error, message):
    arguments = {"n_samples": 100, "batch_size": 10}
    arguments[name] = value
    for function, extra in ((steps_per_epoch, {}), (total_steps, {"epochs": 2}),
                            (epochs_for_steps, {"target_steps": 3})):
        with pytest.raises(error) as caught:
            function(**extra, **arguments)
        assert str(caught.value) == message


@pytest.mark.parametrize("function, extra, error, message", [
    (total_steps, {"epochs": -1}, ValueError, "epochs must be >= 0, got -1"),
    (total_steps, {"epochs": 2.0}, TypeError, "epochs must be an integer, got 2.0 (float)"),
    (total_steps, {"epochs": True}, TypeError, "epochs must be an integer, got the bool True"),
    (epochs_for_steps, {"target_steps": -3}, ValueError, "target_steps must be >= 0, got -3"),
    (epochs_for_steps, {"target_steps": 1.5}, TypeError, "target_steps must be an integer, got 1.5 (float)"),
    (epochs_for_steps, {"target_steps": False}, TypeError, "target_steps must be an integer, got the bool False"),
])
def test_bad_budget_names_the_argument(function, extra, error, message):
    with pytest.raises(error) as caught:
        function(n_samples=100, batch_size=10, **extra)
    assert str(caught.value) == message


def test_unreachable_target_says_why():
    with pytest.raises(ValueError) as caught:
        epochs_for_steps(5, 10, 64, drop_last=True, world_size=2, sampler_drop_last=True)
    assert str(caught.value) == ("target_steps=5 cannot be reached: an epoch holds 0 steps (n_samples=10, "
                                 "batch_size=64, drop_last=True, world_size=2, sampler_drop_last=True)")


def test_copied_alone_it_runs_its_docstring_numbers(tmp_path):
    shutil.copy(ROOT / "snippets" / "step_budget.py", tmp_path / "step_budget.py")
    code = (
        "import sys; sys.modules['snippets'] = None\n"
        "from step_budget import epochs_for_steps, steps_per_epoch, total_steps\n"
        "assert steps_per_epoch(10_000, 512) == 20\n"
        "assert total_steps(10_000, 512, epochs=20) == 400\n"
        "assert epochs_for_steps(400, 10_000, 10_000) == 400\n"
        "import step_budget; print(step_budget.__file__)\n"
    )
    process = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True,
                             env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(tmp_path)}, timeout=60)
    assert process.returncode == 0, process.stderr
    assert process.stdout.strip().startswith(str(tmp_path))


def test_scaler_stepped_reads_a_skipped_step_from_the_lowered_scale():
    assert scaler_stepped(65536.0, 65536.0) and scaler_stepped(65536.0, 131072.0)  # kept, or grown after a step
    assert not scaler_stepped(65536.0, 32768.0)  # lowered: the step was skipped
    assert not scaler_stepped(0.5, 0.25) and scaler_stepped(0.25, 0.5), "a scale below 1 is a scale all the same"
    for bad in (0.0, -1.0, float("nan"), True, "1", None):
        with pytest.raises(ValueError, match=r"^scale_before must be a positive number \(scaler.get_scale\(\)\), got "):
            scaler_stepped(bad, 1.0)
        with pytest.raises(ValueError, match=r"^scale_after must be a positive number \(scaler.get_scale\(\)\), got "
                                             + re.escape(repr(bad)) + "$"):
            scaler_stepped(1.0, bad)


def test_scaler_stepped_follows_a_real_grad_scaler():
    model = torch.nn.Linear(2, 1)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    scaler = torch.amp.GradScaler("cpu", init_scale=2.0 ** 8)
    said = []
    for overflow in (False, True, False):
        optimizer.zero_grad()
        loss = model(torch.ones(3, 2)).sum() * (float("inf") if overflow else 1.0)
        before, weight = scaler.get_scale(), model.weight.detach().clone()
        scaler.scale(loss).backward()
        scaler.step(optimizer)
        scaler.update()
        said.append((scaler_stepped(before, scaler.get_scale()), not torch.equal(weight, model.weight)))
    assert said == [(True, True), (False, False), (True, True)]
