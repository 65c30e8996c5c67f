"""TensorLoader under distributed training: each rank's shard is the one ``DistributedSampler`` gives it (shuffled
or not, padded or with its tail dropped, epoch after epoch with ``set_epoch``), and a loader that was not told
to shard refuses to run inside a process group of several ranks, where every rank would silently iterate over
the whole dataset. Checked in a real 3-process gloo group on the CPU, and rank by rank in one process."""

from __future__ import annotations

import itertools
import json
import multiprocessing
import os
from pathlib import Path

import pytest
import torch
from torch.utils.data import DataLoader, DistributedSampler, TensorDataset

from snippets.tensor_loader import TensorLoader

WORLD = 3
CASES = [(n, batch, shuffle, drop_last) for n in (10, 12) for batch in (1, 4, 100)
         for shuffle in (False, True) for drop_last in (False, True)]


def _rows(batches) -> list[list[int]]:
    """The sample ids of each batch (the second tensor holds each row's id)."""
    return [batch[1].tolist() for batch in batches]


def _on_rank(rank: int, store: str, out: str) -> None:
    built_before = TensorLoader(torch.zeros(4, 1), batch_size=2)  # before the group exists: nothing to refuse yet
    torch.distributed.init_process_group("gloo", init_method=f"file://{store}", rank=rank, world_size=WORLD)
    try:
        report: dict = {"cases": []}
        for n, batch, shuffle, drop_last in CASES:
            x, ids = torch.randn(n, 3), torch.arange(n)
            dataset = TensorDataset(x, ids)
            sampler = DistributedSampler(dataset, shuffle=shuffle, seed=5, drop_last=drop_last)
            reference = DataLoader(dataset, batch_size=batch, sampler=sampler, drop_last=drop_last)
            ours = TensorLoader(x, ids, batch_size=batch, shuffle=shuffle, drop_last=drop_last, seed=5,
                                distributed=True)
            epochs = []
            for epoch in range(3):
                sampler.set_epoch(epoch)
                ours.set_epoch(epoch)
                theirs, mine = list(reference), list(ours)
                same_rows = all(torch.equal(a, b) for p, q in zip(theirs, mine) for a, b in zip(p, q))
                epochs.append({"theirs": _rows(theirs), "mine": _rows(mine), "same_rows": same_rows,
                               "lengths": [len(reference), len(ours)]})
            report["cases"].append(epochs)
        try:
            TensorLoader(torch.zeros(4, 1), batch_size=2)
            report["unsharded"] = "accepted"
        except RuntimeError as error:
            report["unsharded"] = str(error)
        report["opted_out"] = len(list(TensorLoader(torch.zeros(4, 1), batch_size=2, distributed=False)))
        try:
            list(built_before)
            report["built_before"] = "iterated"
        except RuntimeError as error:
            report["built_before"] = str(error)
        Path(out).write_text(json.dumps(report))
    finally:
        torch.distributed.destroy_process_group()


@pytest.fixture(scope="module")
def reports(tmp_path_factory):
    """What each of the 3 ranks of a gloo group saw (spawned processes, as torchrun starts them)."""
    folder = tmp_path_factory.mktemp("gloo")
    context = multiprocessing.get_context("spawn")
    processes = [context.Process(target=_on_rank, args=(rank, str(folder / "store"), str(folder / f"{rank}.json")))
                 for rank in range(WORLD)]
    for process in processes:
        process.start()
    for process in processes:
        process.join(timeout=300)
        assert process.exitcode == 0, f"a rank of the gloo group exited with {process.exitcode}"
    return [json.loads((folder / f"{rank}.json").read_text()) for rank in range(WORLD)]


def test_every_ranks_shard_is_distributed_samplers_epoch_after_epoch(reports):
    for rank, report in enumerate(reports):
        for case, epochs in zip(CASES, report["cases"]):
            for epoch, seen in enumerate(epochs):
                assert seen["mine"] == seen["theirs"] and seen["same_rows"], (rank, case, epoch)
                assert seen["lengths"][0] == seen["lengths"][1], (rank, case, epoch)


def test_the_shards_cover_the_dataset_once_padded_or_trimmed_and_reshuffle_with_set_epoch(reports):
    for number, (n, batch, shuffle, drop_last) in enumerate(CASES):
        for epoch in range(3):
            shards = [sum(report["cases"][number][epoch]["mine"], []) for report in reports]
            every = sorted(sum(shards, []))
            assert len({len(shard) for shard in shards}) == 1, "every rank takes as many samples"
            if drop_last:  # the tail that does not divide among the ranks, then each rank's short last batch
                shard = (n - n % WORLD) // WORLD
                assert len(every) == WORLD * (shard - shard % batch) and len(set(every)) == len(every)
            else:
                assert set(every) == set(range(n)) and len(every) == -(-n // WORLD) * WORLD
        first, second = (reports[0]["cases"][number][epoch]["mine"] for epoch in (0, 1))
        if shuffle and first:  # set_epoch reshuffles (a shard of 3 or 4 rows out of 10 or 12)
            assert first != second, (n, batch, drop_last)


def test_an_unsharded_loader_in_a_group_of_several_ranks_refuses_and_can_opt_out(reports):
    for report in reports:
        assert report["unsharded"].startswith("TensorLoader: a torch.distributed process group of 3 ranks is "
                                              "initialised, but this loader was not told to shard")
        assert "distributed=True" in report["unsharded"] and "distributed=False" in report["unsharded"]
        assert report["opted_out"] == 2, "distributed=False iterates over the whole dataset on every rank"
        assert report["built_before"] == report["unsharded"], "a loader built before the group refuses at iter()"


@pytest.mark.parametrize("n, world, batch, shuffle, drop_last",
                         [(n, w, b, s, d) for n, w, b, s, d in itertools.product(
                             (1, 2, 7, 13), (1, 2, 4), (1, 3, 100), (False, True), (False, True))])
def test_each_rank_by_hand_matches_distributed_sampler_and_its_random_draws(n, world, batch, shuffle, drop_last):
    x, ids = torch.randn(n, 2), torch.arange(n)
    dataset = TensorDataset(x, ids)
    for rank in range(world):
        sampler = DistributedSampler(dataset, num_replicas=world, rank=rank, shuffle=shuffle, seed=3,
                                     drop_last=drop_last)
        reference = DataLoader(dataset, batch_size=batch, sampler=sampler, drop_last=drop_last)
        ours = TensorLoader(x, ids, batch_size=batch, shuffle=shuffle, drop_last=drop_last, rank=rank,
                            world_size=world, seed=3)
        assert len(ours) == len(reference)
        for epoch in range(2):
            sampler.set_epoch(epoch)
            ours.set_epoch(epoch)
            torch.manual_seed(epoch)
            theirs, their_state = list(reference), torch.get_rng_state()
            torch.manual_seed(epoch)
            mine, my_state = list(ours), torch.get_rng_state()
            assert _rows(mine) == _rows(theirs), (rank, epoch)
            assert all(torch.equal(a, b) for p, q in zip(theirs, mine) for a, b in zip(p, q))
            assert torch.equal(my_state, their_state), "the global RNG ends the epoch where DataLoader leaves it"


@pytest.mark.parametrize("options, error, message", [
    ({"rank": 0}, ValueError, "rank and world_size go together"),
    ({"rank": 2, "world_size": 2}, ValueError, "rank must be in [0, world_size)"),
    ({"rank": 0, "world_size": 0}, ValueError, "world_size >= 1"),
    ({"rank": "0", "world_size": 2}, TypeError, "rank must be an int, got str"),
    ({"rank": 0, "world_size": 2.0}, TypeError, "world_size must be an int, got float"),
    ({"distributed": "yes"}, TypeError, "distributed must be True, False or None"),
    ({"distributed": False, "rank": 0, "world_size": 1}, ValueError, "takes no rank or world_size"),
    ({"distributed": True}, RuntimeError, "needs an initialised torch.distributed process group"),
    ({"seed": 1.5}, TypeError, "seed must be an int"),
])
def test_bad_sharding_arguments_are_named(options, error, message):
    with pytest.raises(error) as raised:
        TensorLoader(torch.zeros(4, 1), batch_size=2, **options)
    assert message in str(raised.value)


def test_set_epoch_takes_an_int_and_changes_nothing_unsharded():
    import numpy

    loader = TensorLoader(torch.arange(6), batch_size=4, shuffle=True)
    for bad in (1.0, True, "1"):
        with pytest.raises(TypeError, match="epoch must be an int"):
            loader.set_epoch(bad)
    loader.set_epoch(numpy.int64(3))  # as DistributedSampler.set_epoch: any integer
    assert loader.epoch == 3 and type(loader.epoch) is int
    torch.manual_seed(0)
    before = [b[0].tolist() for b in loader]
    loader.set_epoch(5)
    torch.manual_seed(0)
    assert [b[0].tolist() for b in loader] == before


def test_outside_a_process_group_nothing_changes_and_the_dataset_is_there():
    x = torch.arange(10).float()
    loader = TensorLoader(x, batch_size=4)
    assert [b[0].tolist() for b in loader] == [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9]]
    assert len(loader.dataset) == 10 and torch.equal(loader.dataset[3][0], x[3])
    assert loader.rank is None and loader.world_size is None
    assert repr(TensorLoader(x, batch_size=4, rank=1, world_size=2)).endswith("rank=1, world_size=2)")


@pytest.fixture()
def group(monkeypatch):
    """``group(rank, world_size)``: torch.distributed as inside an initialised process group, in this process."""
    def initialise(rank: int, world_size: int) -> None:
        monkeypatch.setattr(torch.distributed, "is_available", lambda: True)
        monkeypatch.setattr(torch.distributed, "is_initialized", lambda: True)
        monkeypatch.setattr(torch.distributed, "get_rank", lambda: rank)
        monkeypatch.setattr(torch.distributed, "get_world_size", lambda: world_size)
    return initialise


REFUSAL = ("TensorLoader: a torch.distributed process group of 3 ranks is initialised, but this loader was not told to "
           "shard: every rank would iterate over the whole dataset (3x the optimizer steps per epoch, each sample "
           "seen on every rank). Pass distributed=True to shard like DistributedSampler (and call set_epoch(epoch) "
           "each epoch), or distributed=False if every rank should see every sample.")


def test_in_a_group_an_unsharded_loader_is_refused_in_these_words(group):
    group(0, 3)
    with pytest.raises(RuntimeError) as raised:
        TensorLoader(torch.zeros(6, 1), batch_size=2)
    assert str(raised.value) == REFUSAL


def test_a_loader_built_before_the_group_is_refused_at_iter_unless_it_chose(group):
    unsharded = TensorLoader(torch.arange(6), batch_size=2)
    whole = TensorLoader(torch.arange(6), batch_size=2, distributed=False)
    by_hand = TensorLoader(torch.arange(6), batch_size=2, rank=1, world_size=3)
    group(0, 3)
    with pytest.raises(RuntimeError) as raised:
        iter(unsharded)
    assert str(raised.value) == REFUSAL
    assert [b[0].tolist() for b in whole] == [[0, 1], [2, 3], [4, 5]]
    assert [b[0].tolist() for b in by_hand] == [[1, 4]]


def test_a_group_of_one_rank_changes_nothing(group):
    group(0, 1)
    loader = TensorLoader(torch.arange(5), batch_size=2)
    assert (loader.rank, loader.world_size) == (None, None)
    assert [b[0].tolist() for b in loader] == [[0, 1], [2, 3], [4]]


def test_distributed_true_takes_rank_and_size_from_the_group_and_checks_given_ones(group):
    group(1, 2)
    loader = TensorLoader(torch.arange(5), batch_size=2, distributed=True)
    assert (loader.rank, loader.world_size, loader.seed, loader.epoch) == (1, 2, 0, 0)
    assert [b[0].tolist() for b in loader] == [[1, 3], [0]], "sequential shard of rank 1, padded with index 0"
    assert TensorLoader(torch.arange(5), batch_size=2, distributed=True, rank=1, world_size=2).rank == 1
    assert TensorLoader(torch.arange(5), batch_size=2, rank=0, world_size=2).rank == 0, "given by hand: taken"
    with pytest.raises(ValueError) as raised:
        TensorLoader(torch.arange(5), batch_size=2, distributed=True, rank=0, world_size=2)
    assert str(raised.value) == "rank=0, world_size=2 differ from the process group's rank 1 of 2"


def test_the_sharded_shuffle_is_seed_plus_epoch_and_the_tensors_device(group):
    x = torch.arange(10)
    loader = TensorLoader(x, batch_size=10, shuffle=True, rank=0, world_size=1)
    expected = torch.randperm(10, generator=torch.Generator().manual_seed(0))
    assert torch.equal(next(iter(loader))[0], expected), "seed 0, epoch 0 by default"
    loader.set_epoch(4)
    assert torch.equal(next(iter(loader))[0], torch.randperm(10, generator=torch.Generator().manual_seed(4)))
    seeded = TensorLoader(x, batch_size=10, shuffle=True, rank=0, world_size=1, seed=7)
    assert torch.equal(next(iter(seeded))[0], torch.randperm(10, generator=torch.Generator().manual_seed(7)))
    assert next(iter(seeded))[0].device == x.device


def test_a_shard_of_a_dataset_that_divides_evenly_is_not_padded():
    loader = TensorLoader(torch.arange(4), batch_size=4, rank=1, world_size=2)
    assert [b[0].tolist() for b in loader] == [[1, 3]] and len(loader) == 1


@pytest.mark.parametrize("value, name", [(1.5, "seed"), ("e", "epoch")])
def test_a_wrong_seed_or_epoch_is_named_with_its_type(value, name):
    loader = TensorLoader(torch.arange(4), batch_size=2)
    with pytest.raises(TypeError) as raised:
        if name == "seed":
            TensorLoader(torch.arange(4), batch_size=2, seed=value)
        else:
            loader.set_epoch(value)
    assert str(raised.value) == f"{name} must be an int, got {type(value).__name__} {value!r}"
