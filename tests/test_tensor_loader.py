"""The tensor_loader recipe: TensorLoader and BatchedTensorDataset give the same batches and the same random draws as
DataLoader(TensorDataset), with clear errors."""

from __future__ import annotations

import itertools
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from torch.utils.data import (BatchSampler, ConcatDataset, DataLoader, DistributedSampler, SequentialSampler,
                              SubsetRandomSampler, TensorDataset, WeightedRandomSampler, random_split)

from snippets import tensor_loader
from snippets.tensor_loader import BatchedTensorDataset, TensorLoader

RECIPE = Path(tensor_loader.__file__)


def rng_state(generator: torch.Generator | None) -> tuple:
    return (torch.get_rng_state(), None if generator is None else generator.get_state())


def same_state(a: tuple, b: tuple) -> bool:
    return torch.equal(a[0], b[0]) and (a[1] is None) == (b[1] is None) and (a[1] is None or torch.equal(a[1], b[1]))


def assert_same_batch(expected, got) -> None:  # noqa: ANN001
    assert isinstance(got, tuple) and len(got) == len(expected)
    for want, have in zip(expected, got):
        assert have.dtype == want.dtype and have.shape == want.shape and have.device == want.device
        assert torch.equal(have, want)


def record(loader, generator: torch.Generator | None, epochs: int) -> list:  # noqa: ANN001
    """Every batch and the RNG state after iter() and after every batch, for several epochs."""
    history = []
    for _ in range(epochs):
        iterator = iter(loader)
        epoch = [("iter", rng_state(generator))]
        for batch in iterator:
            epoch.append((tuple(batch), rng_state(generator)))
        epoch.append(("end", rng_state(generator)))
        history.append(epoch)
    return history


def run_both(tensors: tuple, *, epochs: int = 2, seed: int = 0, use_generator: bool, **options) -> tuple:
    results = []
    for make in (lambda g: DataLoader(TensorDataset(*tensors), generator=g, **options),
                 lambda g: TensorLoader(*tensors, generator=g, **options)):
        torch.manual_seed(seed)
        generator = torch.Generator().manual_seed(seed + 1) if use_generator else None
        loader = make(generator)
        results.append((len(loader), record(loader, generator, epochs)))
    return results


def assert_same_histories(expected: tuple, got: tuple, contiguous: bool = False) -> int:
    """Two ``(len(loader), record(...))`` pairs agree: length, every batch and every RNG state (and, if asked, every
    batch contiguous). Returns the number of batches compared."""
    (len_expected, history_expected), (len_got, history_got) = expected, got
    assert len_got == len_expected
    assert len(history_got) == len(history_expected)
    compared = 0
    for epoch_expected, epoch_got in zip(history_expected, history_got):
        assert len(epoch_got) == len(epoch_expected), "different number of batches"
        for (batch_expected, state_expected), (batch_got, state_got) in zip(epoch_expected, epoch_got):
            if isinstance(batch_expected, str):
                assert batch_got == batch_expected
            else:
                assert_same_batch(batch_expected, batch_got)
                assert not contiguous or all(t.is_contiguous() for t in batch_got)
                compared += 1
            assert same_state(state_expected, state_got), "RNG state differs"
    return compared


def assert_equivalent(tensors: tuple, **options) -> None:
    assert_same_histories(*run_both(tensors, **options))


def dataset(n: int, kinds: str = "xy") -> tuple:
    g = torch.Generator().manual_seed(n)
    make = {
        "x": lambda: torch.randn(n, 1, generator=g),
        "y": lambda: torch.randint(0, 100, (n,), generator=g),
        "b": lambda: torch.rand(n, 2, generator=g) > 0.5,
        "h": lambda: torch.randn(n, 3, 2, generator=g).half(),
        "d": lambda: torch.randn(n, 5, generator=g, dtype=torch.float64),
        "u": lambda: torch.randint(0, 255, (n, 4), generator=g, dtype=torch.uint8),
        "t": lambda: torch.randn(3, n, generator=g).t(),  # non-contiguous
    }
    return tuple(make[k]() for k in kinds)


@pytest.mark.parametrize("shuffle,drop_last,use_generator",
                         list(itertools.product([False, True], [False, True], [False, True])))
@pytest.mark.parametrize("n,batch_size", [(1, 1), (1, 4), (5, 2), (7, 3), (8, 4), (10, 10), (10, 11), (33, 5),
                                          (64, 1), (100, 7)])
def test_same_batches_and_rng_as_dataloader(n, batch_size, shuffle, drop_last, use_generator):
    assert_equivalent(dataset(n), batch_size=batch_size, shuffle=shuffle, drop_last=drop_last,
                      use_generator=use_generator, epochs=3)


@pytest.mark.parametrize("kinds", ["x", "y", "xy", "xybhdu", "t", "tx"])
@pytest.mark.parametrize("shuffle", [False, True])
def test_several_tensors_and_dtypes(kinds, shuffle):
    assert_equivalent(dataset(23, kinds), batch_size=4, shuffle=shuffle, drop_last=False,
                      use_generator=False, epochs=2)


@pytest.mark.parametrize("n,batch_size,drop_last", [(2500, 1, False), (5000, 3, True), (5000, 3, False),
                                                     (5000, 1000, False), (9000, 4095, True), (9000, 4097, False)])
@pytest.mark.parametrize("shuffle", [False, True])
def test_many_batches_cross_internal_spans(n, batch_size, drop_last, shuffle):
    # Larger than one span of sequential views (1024 batches) or one shuffled gather group (~4096 rows).
    assert_equivalent(dataset(n), batch_size=batch_size, shuffle=shuffle, drop_last=drop_last,
                      use_generator=True, epochs=2)


def test_abandoned_epochs_keep_the_same_rng_state():
    x, y = dataset(50)
    states = []
    for make in (lambda g: DataLoader(TensorDataset(x, y), batch_size=8, shuffle=True, generator=g),
                 lambda g: TensorLoader(x, y, batch_size=8, shuffle=True, generator=g)):
        torch.manual_seed(3)
        generator = torch.Generator().manual_seed(4)
        loader = make(generator)
        next(iter(loader))  # one batch, then give up on the epoch
        iter(loader)  # an epoch started but never advanced
        first = [tuple(b) for b in loader]
        states.append((first, rng_state(generator)))
    (batches_dl, state_dl), (batches_tl, state_tl) = states
    for a, b in zip(batches_dl, batches_tl):
        assert_same_batch(a, b)
    assert same_state(state_dl, state_tl)


def test_seeded_training_run_is_unchanged():
    x, y = dataset(40)
    losses = []
    for make in (lambda: DataLoader(TensorDataset(x, y.float().unsqueeze(1)), batch_size=6, shuffle=True),
                 lambda: TensorLoader(x, y.float().unsqueeze(1), batch_size=6, shuffle=True)):
        torch.manual_seed(0)
        model = torch.nn.Sequential(torch.nn.Linear(1, 8), torch.nn.Dropout(0.2), torch.nn.Linear(8, 1))
        optimizer = torch.optim.SGD(model.parameters(), lr=1e-3)
        trace = []
        loader = make()
        for _ in range(3):
            for xb, yb in loader:
                optimizer.zero_grad()
                loss = torch.nn.functional.mse_loss(model(xb), yb)
                loss.backward()
                optimizer.step()
                trace.append(loss.detach())
        losses.append(torch.stack(trace))
    assert torch.equal(losses[0].view(torch.int32), losses[1].view(torch.int32))


def test_main_process_rng_matches_dataloader_with_workers():
    # The docstring says TensorLoader's draws match any num_workers in the main process.
    x, y = dataset(30)
    states = []
    for make in (lambda g: DataLoader(TensorDataset(x, y), batch_size=7, shuffle=True, generator=g, num_workers=2),
                 lambda g: TensorLoader(x, y, batch_size=7, shuffle=True, generator=g)):
        torch.manual_seed(5)
        generator = torch.Generator().manual_seed(6)
        batches = [tuple(b) for b in make(generator)]
        states.append((batches, rng_state(generator)))
    for a, b in zip(states[0][0], states[1][0]):
        assert_same_batch(a, b)
    assert same_state(states[0][1], states[1][1])


def test_private_second_permutation_is_invisible_without_generator():
    # DataLoader draws a second permutation from a private generator; TensorLoader skips it. Nothing observable
    # differs: the global state after the epoch is the same.
    x, = dataset(12, "x")
    after = []
    for make in (lambda: DataLoader(TensorDataset(x), batch_size=5, shuffle=True),
                 lambda: TensorLoader(x, batch_size=5, shuffle=True)):
        torch.manual_seed(9)
        list(make())
        after.append(torch.get_rng_state())
    assert torch.equal(*after)


def test_sequential_batches_are_views_and_shuffled_are_copies():
    x, y = dataset(10)
    first = next(iter(TensorLoader(x, y, batch_size=4)))
    assert first[0].data_ptr() == x.data_ptr() and first[1].data_ptr() == y.data_ptr()
    first[0].add_(1)  # shares memory: the dataset changes too
    assert torch.equal(x[:4], first[0])
    shuffled = next(iter(TensorLoader(x, y, batch_size=4, shuffle=True)))
    assert shuffled[0].untyped_storage().data_ptr() != x.untyped_storage().data_ptr()
    loaded = next(iter(DataLoader(TensorDataset(x, y), batch_size=4)))
    assert isinstance(loaded, list) and loaded[0].data_ptr() != x.data_ptr()


def test_len_and_repr():
    x, = dataset(10, "x")
    assert len(TensorLoader(x, batch_size=3)) == 4
    assert len(TensorLoader(x, batch_size=3, drop_last=True)) == 3
    assert len(TensorLoader(x, batch_size=11, drop_last=True)) == 0
    assert list(TensorLoader(x, batch_size=11, drop_last=True)) == []
    assert "batch_size=3" in repr(TensorLoader(x, batch_size=3))


@pytest.mark.parametrize("args,kwargs,error,message", [
    ((), {}, TypeError, "TensorLoader needs at least one tensor, got none"),
    ((torch.zeros(3), [1, 2, 3]), {}, TypeError, "TensorLoader takes tensors; argument 1 is a list"),
    ((torch.tensor(1.0),), {}, ValueError, "argument 0 is a 0-dim tensor; it has no first dimension to batch"),
    ((torch.zeros(3), torch.zeros(4)), {}, ValueError,
     "all tensors need the same size of the first dimension, got shapes [(3,), (4,)]"),
    ((torch.zeros(3),), {"batch_size": 0}, ValueError, "batch_size must be >= 1, got 0"),
    ((torch.zeros(3),), {"batch_size": -2}, ValueError, "batch_size must be >= 1, got -2"),
    ((torch.zeros(3),), {"batch_size": 2.0}, TypeError, "batch_size must be an int, got float 2.0"),
    ((torch.zeros(3),), {"batch_size": None}, TypeError, "batch_size must be an int, got NoneType None"),
    ((torch.zeros(3),), {"batch_size": True}, TypeError, "batch_size must be an int, got bool True"),
    ((torch.zeros(3),), {"shuffle": 1}, TypeError, "shuffle must be a bool, got int 1"),
    ((torch.zeros(3),), {"drop_last": "no"}, TypeError, "drop_last must be a bool, got str 'no'"),
    ((torch.zeros(3),), {"generator": 0}, TypeError, "generator must be a torch.Generator or None, got int"),
    ((torch.zeros(0, 2),), {}, ValueError, "the dataset is empty: the tensors have shapes [(0, 2)]"),
    ((torch.zeros(3), torch.zeros(3, device="meta")), {}, ValueError,
     "all tensors must be on one device, got ['cpu', 'meta']"),
])
def test_bad_inputs_name_the_argument_and_what_was_given(args, kwargs, error, message):
    with pytest.raises(error) as raised:
        TensorLoader(*args, **kwargs)
    assert str(raised.value) == message


class _GeneratorOnAnotherDevice(torch.Generator):
    """A generator that says it lives on a GPU: the check needs no GPU to be tested."""

    @property
    def device(self) -> torch.device:
        return torch.device("cuda", 0)


def test_a_generator_not_on_the_cpu_is_refused():
    with pytest.raises(ValueError) as raised:
        TensorLoader(torch.zeros(3), generator=_GeneratorOnAnotherDevice())
    assert str(raised.value) == "generator must be a CPU generator, as DataLoader's; got one on cuda:0"


def test_default_batch_size_is_one_as_dataloaders():
    x = torch.arange(3.0)
    assert [b[0].tolist() for b in TensorLoader(x)] == [[0.0], [1.0], [2.0]] == \
        [b[0].tolist() for b in DataLoader(TensorDataset(x))]


def test_repr_names_shapes_options_and_device():
    loader = TensorLoader(torch.zeros(10, 1), torch.zeros(10), batch_size=3, shuffle=True, drop_last=True)
    assert repr(loader) == ("TensorLoader((10, 1), (10,), batch_size=3, shuffle=True, drop_last=True, "
                            "device=cpu)")
    assert loader.device == torch.device("cpu")


def _block_rows(tensor: torch.Tensor) -> float:
    """How many rows the storage behind a batch holds."""
    return tensor.untyped_storage().nbytes() / (tensor[0].numel() * tensor.element_size())


def test_small_shuffled_batches_are_views_into_gathered_blocks_of_about_one_mib():
    # 4 KiB rows: a block holds 1 MiB // 4 KiB = 256 rows, that is 25 batches of 10 (250 rows); the last
    # 100 rows make the last block.
    x = torch.randn(600, 1024)
    batches = list(TensorLoader(x, batch_size=10, shuffle=True))
    assert [_block_rows(b[0]) for b in batches] == [250] * 50 + [100] * 10
    # Several tensors: their rows' bytes add up (4096 + 8 bytes a row: 255 rows a block).
    y = torch.arange(600)
    first = next(iter(TensorLoader(x, y, batch_size=1, shuffle=True)))
    assert (_block_rows(first[0]), _block_rows(first[1])) == (255, 255)
    # Narrow rows: at most 4096 rows a block.
    first = next(iter(TensorLoader(torch.randn(10_000, 2), batch_size=1, shuffle=True)))
    assert _block_rows(first[0]) == 4096


@pytest.mark.parametrize("n", [4, 5])
def test_rows_larger_than_a_block_are_gathered_one_batch_at_a_time(n):
    """Rows of more than 1 MiB each: every shuffled batch is gathered on its own, still DataLoader's batches."""
    x = torch.randn(n, 2**18 + 1)
    batches = list(TensorLoader(x, batch_size=1, shuffle=True))
    assert [_block_rows(b[0]) for b in batches] == [1] * n
    assert_equivalent((x,), batch_size=1, shuffle=True, drop_last=False, use_generator=True, epochs=1)
    assert_equivalent((x,), batch_size=2, shuffle=True, drop_last=False, use_generator=False, epochs=1)


DEVICES = ["cpu", pytest.param("cuda", marks=[
    pytest.mark.cuda,
    pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device; the CPU twin runs instead"),
])]


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("shuffle", [False, True])
def test_batches_stay_on_the_tensors_device(device, shuffle):
    x, y = dataset(37)
    on_device = TensorLoader(x.to(device), y.to(device), batch_size=8, shuffle=shuffle,
                             generator=torch.Generator().manual_seed(1))
    reference = DataLoader(TensorDataset(x, y), batch_size=8, shuffle=shuffle,
                           generator=torch.Generator().manual_seed(1))
    for _ in range(2):
        torch.manual_seed(2)
        expected = [tuple(b) for b in reference]
        state = torch.get_rng_state()
        torch.manual_seed(2)
        got = list(on_device)
        assert torch.equal(torch.get_rng_state(), state)
        assert len(got) == len(expected)
        for want, have in zip(expected, got):
            assert all(t.device.type == torch.device(device).type for t in have)
            assert_same_batch(want, tuple(t.cpu() for t in have))


def test_recipe_imports_alone(tmp_path):
    """Copied into an empty folder, the recipe needs only torch and the standard library."""
    shutil.copy(RECIPE, tmp_path / "tensor_loader.py")
    script = (
        "import sys\n"
        f"sys.path[:] = [{str(tmp_path)!r}] + [p for p in sys.path if 'site-packages' in p "
        "or p.rstrip('/').split('/')[-1].startswith('python3') or p.endswith('.zip') or 'lib-dynload' in p]\n"
        "import torch, tensor_loader\n"
        "assert not [m for m in sys.modules if m == 'snippets' or m.startswith('snippets.')], 'imports snippets'\n"
        "x = torch.arange(5.0)\n"
        "print([b[0].tolist() for b in tensor_loader.TensorLoader(x, batch_size=2)])\n"
        "from torch.utils.data import DataLoader\n"
        "dataset = tensor_loader.BatchedTensorDataset(x)\n"
        "print([b[0].tolist() for b in DataLoader(dataset, batch_size=2, collate_fn=dataset.collate)])\n"
    )
    done = subprocess.run([sys.executable, "-I", "-c", script], cwd=tmp_path, capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().splitlines() == ["[[0.0, 1.0], [2.0, 3.0], [4.0]]"] * 2


def test_recipe_docstring_has_usage_and_limits():
    doc = tensor_loader.__doc__
    assert "Usage::" in doc and "TensorLoader(x, y, batch_size=64, shuffle=True)" in doc
    assert "collate_fn=BatchedTensorDataset.collate" in doc
    for words in ("views", "worker processes", "second permutation", "persistent_workers=True"):
        assert words in doc


# ---------------------------------------------------------------------------------------------------------
# BatchedTensorDataset: DataLoader keeps its options, the dataset is indexed once per batch


class NoSampleIndexing(BatchedTensorDataset):
    """A spy: indexing one sample fails, in the main process and in worker processes alike."""

    def __getitem__(self, index):  # noqa: ANN001
        raise AssertionError(f"dataset[{index!r}] was called")


def record_dataloaders(tensors: tuple, *, epochs: int = 2, seed: int = 0, use_generator: bool = False,
                       sampler_of=None, batch_sampler_of=None, **options) -> list:  # noqa: ANN001
    """DataLoader over a TensorDataset and over a (spied) BatchedTensorDataset with the same arguments: the length
    and every batch and RNG state (``record``) of each. ``sampler_of(dataset, generator)`` makes a sampler,
    ``batch_sampler_of`` a batch sampler, with ``set_epoch`` called before each epoch when it has one."""
    results = []
    for dataset_class, collate in ((TensorDataset, None), (NoSampleIndexing, BatchedTensorDataset.collate)):
        torch.manual_seed(seed)
        generator = torch.Generator().manual_seed(seed + 1) if use_generator else None
        dataset = dataset_class(*tensors)
        extra = {} if collate is None else {"collate_fn": collate}
        if sampler_of is not None:
            extra["sampler"] = sampler = sampler_of(dataset, generator)
        elif batch_sampler_of is not None:
            extra["batch_sampler"] = sampler = batch_sampler_of(dataset, generator)
        else:
            sampler = None
        loader = DataLoader(dataset, generator=generator, **extra, **options)
        history = []
        for epoch in range(epochs):
            if hasattr(sampler, "set_epoch"):
                sampler.set_epoch(epoch)
            history += record(loader, generator, 1)
        results.append((len(loader), history))
    return results


def assert_dataloaders_agree(tensors: tuple, **options) -> int:
    """Same length, batches (type, dtype, shape, values, contiguity) and RNG states; returns the batches compared."""
    return assert_same_histories(*record_dataloaders(tensors, **options), contiguous=True)


@pytest.mark.parametrize("shuffle,drop_last,use_generator",
                         list(itertools.product([False, True], [False, True], [False, True])))
@pytest.mark.parametrize("n,batch_size", [(1, 1), (1, 4), (5, 2), (7, 3), (10, 10), (10, 11), (33, 5), (100, 7)])
def test_batched_dataset_same_batches_and_rng_as_tensor_dataset(n, batch_size, shuffle, drop_last, use_generator):
    assert assert_dataloaders_agree(dataset(n), batch_size=batch_size, shuffle=shuffle, drop_last=drop_last,
                                    use_generator=use_generator, epochs=3) == 3 * len(DataLoader(
                                        range(n), batch_size=batch_size, drop_last=drop_last))


@pytest.mark.parametrize("kinds", ["x", "y", "xy", "xybhdu", "t", "tx"])
def test_batched_dataset_several_tensors_dtypes_and_layouts(kinds):
    # "t" is non-contiguous: the stacked batch is contiguous, and so is the gathered one.
    assert assert_dataloaders_agree(dataset(23, kinds), batch_size=4, shuffle=True) == 12


SAMPLERS = {
    "SubsetRandomSampler": lambda d, g: SubsetRandomSampler(list(range(0, len(d), 2)), generator=g),
    "WeightedRandomSampler": lambda d, g: WeightedRandomSampler(torch.linspace(0.1, 1, len(d)), 2 * len(d),
                                                                generator=g),
    "SequentialSampler": lambda d, g: SequentialSampler(d),
}


@pytest.mark.parametrize("use_generator", [False, True])
@pytest.mark.parametrize("name", sorted(SAMPLERS))
def test_batched_dataset_with_samplers(name, use_generator):
    assert assert_dataloaders_agree(dataset(31), batch_size=4, sampler_of=SAMPLERS[name],
                                    use_generator=use_generator) > 0


def test_batched_dataset_with_a_batch_sampler():
    assert assert_dataloaders_agree(
        dataset(31), batch_sampler_of=lambda d, g: BatchSampler(SequentialSampler(d), 6, drop_last=False)) == 12


@pytest.mark.parametrize("world_size", [1, 3, 4])
@pytest.mark.parametrize("shuffle,drop_last", list(itertools.product([False, True], [False, True])))
def test_batched_dataset_with_distributed_sampler_shards(world_size, shuffle, drop_last):
    # 30 samples over 4 ranks leaves a remainder: padded (drop_last=False) or dropped (True).
    shards = []
    for rank in range(world_size):
        sampler_of = (lambda d, g, rank=rank: DistributedSampler(d, num_replicas=world_size, rank=rank,
                                                                 shuffle=shuffle, seed=7, drop_last=drop_last))
        assert assert_dataloaders_agree(dataset(30), batch_size=4, sampler_of=sampler_of, epochs=2) > 0
        shard = DataLoader(NoSampleIndexing(torch.arange(30)), batch_size=4, collate_fn=BatchedTensorDataset.collate,
                           sampler=sampler_of(range(30), None))
        shards.append(torch.cat([b[0] for b in shard]))
    covered = torch.cat(shards).unique()
    assert len(covered) == (30 if not drop_last or world_size in (1, 3) else 28)


@pytest.mark.parametrize("shuffle,persistent", [(False, False), (True, False), (True, True)])
def test_batched_dataset_with_worker_processes(shuffle, persistent):
    # The spy raises in the worker that would call dataset[i]: the error would reach the main process.
    assert assert_dataloaders_agree(dataset(40), batch_size=6, shuffle=shuffle, num_workers=2,
                                    persistent_workers=persistent, use_generator=True, epochs=2) == 14


def test_batched_dataset_never_indexes_one_sample():
    spy = NoSampleIndexing(torch.arange(10.0))
    with pytest.raises(AssertionError, match=r"dataset\[3\] was called"):
        spy[3]
    batches = list(DataLoader(spy, batch_size=4, shuffle=True, collate_fn=BatchedTensorDataset.collate))
    assert sorted(torch.cat([b[0] for b in batches]).tolist()) == list(range(10))


def test_batched_dataset_batches_are_fresh_lists_of_copies():
    x, y = dataset(10)
    batch = next(iter(DataLoader(BatchedTensorDataset(x, y), batch_size=10, collate_fn=BatchedTensorDataset.collate)))
    assert isinstance(batch, list) and len(batch) == 2
    assert batch[0].untyped_storage().data_ptr() != x.untyped_storage().data_ptr()
    assert torch.equal(batch[0], x) and torch.equal(batch[1], y)


def test_batched_dataset_inside_subset_and_concat_dataset():
    # random_split's Subset forwards __getitems__; ConcatDataset indexes sample by sample, and the collate falls
    # back to default_collate for that list of samples.
    x, y = dataset(20)
    for wrap in (lambda d: random_split(d, [12, 8], generator=torch.Generator().manual_seed(0))[0],
                 lambda d: ConcatDataset([d, d])):
        expected = list(DataLoader(wrap(TensorDataset(x, y)), batch_size=5))
        got = list(DataLoader(wrap(BatchedTensorDataset(x, y)), batch_size=5, collate_fn=BatchedTensorDataset.collate))
        assert len(got) == len(expected)
        for want, have in zip(expected, got):
            assert_same_batch(tuple(want), tuple(have))


def test_batched_dataset_index_lists_of_every_kind():
    x = torch.arange(10.0)
    data = BatchedTensorDataset(x)
    assert data.__getitems__([3, 1]).tensors[0].tolist() == [3.0, 1.0]
    assert data.__getitems__(torch.tensor([4, 2])).tensors[0].tolist() == [4.0, 2.0]
    assert data.__getitems__(range(2)).tensors[0].tolist() == [0.0, 1.0]
    assert data.__getitems__([]).tensors[0].shape == (0,)
    assert data.__getitems__([torch.tensor(5), 6]).tensors[0].tolist() == [5.0, 6.0]  # not plain ints: torch converts
    # The index tensor keeps the buffer it was made from alive.
    index = tensor_loader._index_tensor([7, 8, 9])
    import gc
    gc.collect()
    assert index.tolist() == [7, 8, 9]
    assert data[2] == (torch.tensor(2.0),)  # sample indexing still works outside DataLoader


@pytest.mark.parametrize("args,error,message", [
    ((), TypeError, "BatchedTensorDataset needs at least one tensor, got none"),
    ((torch.zeros(3), [1, 2, 3]), TypeError, "BatchedTensorDataset takes tensors; argument 1 is a list"),
    ((torch.tensor(1.0),), ValueError, "argument 0 is a 0-dim tensor; it has no first dimension to batch"),
    ((torch.zeros(3), torch.zeros(4)), ValueError,
     "all tensors need the same size of the first dimension, got shapes [(3,), (4,)]"),
])
def test_batched_dataset_bad_inputs_name_the_argument(args, error, message):
    with pytest.raises(error) as raised:
        BatchedTensorDataset(*args)
    assert str(raised.value) == message


@pytest.mark.parametrize("device", DEVICES)
def test_batched_dataset_batches_stay_on_the_tensors_device(device):
    x, y = dataset(37)
    loader = DataLoader(BatchedTensorDataset(x.to(device), y.to(device)), batch_size=8, shuffle=True,
                        generator=torch.Generator().manual_seed(1), collate_fn=BatchedTensorDataset.collate)
    reference = DataLoader(TensorDataset(x, y), batch_size=8, shuffle=True, generator=torch.Generator().manual_seed(1))
    for want, have in zip(reference, loader, strict=True):
        assert all(t.device.type == torch.device(device).type for t in have)
        assert_same_batch(tuple(want), tuple(t.cpu() for t in have))


def test_a_samplers_indices_become_an_int64_tensor_as_given():
    from snippets.tensor_loader import _index_tensor

    assert torch.equal(_index_tensor([2, 0, -1]), torch.tensor([2, 0, -1]))  # negative indices count from the end
    assert _index_tensor([2, 0, -1]).dtype == torch.int64
    empty = _index_tensor([])
    assert empty.dtype == torch.int64 and empty.shape == (0,)
    floats = _index_tensor([1.0, 3.0])  # not plain integers: converted by torch
    assert floats.dtype == torch.int64 and floats.tolist() == [1, 3]
    given = torch.tensor([4, 1])
    assert _index_tensor(given) is given
    x = torch.arange(10.0).unsqueeze(1)
    (batch,) = BatchedTensorDataset(x).__getitems__([9, -1, 0]).tensors
    assert batch.squeeze(1).tolist() == [9.0, 9.0, 0.0]


# ---- BatchedTensorDataset inside torch's own dataset wrappers ------------------------------------------------------

def _wrapped(kind: str, make):
    """The same wrapper around BatchedTensorDataset (``make=BatchedTensorDataset``) or TensorDataset."""
    from torch.utils.data import ConcatDataset, StackDataset, Subset

    data = torch.Generator().manual_seed(0)
    x, y, z = torch.randn(10, 3, generator=data), torch.randn(10, 1, generator=data), torch.arange(10.0)
    return {
        "direct": lambda: make(x, y),
        "StackDataset, tuple": lambda: StackDataset(make(x, y), TensorDataset(z)),
        "StackDataset, dict": lambda: StackDataset(pair=make(x, y), index=TensorDataset(z)),
        "StackDataset, two of it": lambda: StackDataset(make(x, y), make(z)),
        "Subset": lambda: Subset(make(x, y), [9, 1, 3, 5, 7, 0]),
        "ConcatDataset": lambda: ConcatDataset([make(x, y), make(x + 1, y - 1)]),
        "Subset of StackDataset": lambda: Subset(StackDataset(make(x, y), make(z)), [2, 4, 6, 8]),
        "StackDataset of Subsets": lambda: StackDataset(Subset(make(x), [0, 2, 4, 6]), Subset(make(y), [1, 3, 5, 7])),
    }[kind]()


def _same(a, b) -> bool:
    if isinstance(a, torch.Tensor):
        return isinstance(b, torch.Tensor) and a.shape == b.shape and torch.equal(a, b)
    if isinstance(a, dict):
        return isinstance(b, dict) and a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)):
        return type(a) is type(b) and len(a) == len(b) and all(_same(p, q) for p, q in zip(a, b))
    return a == b


WRAPPERS = ["direct", "StackDataset, tuple", "StackDataset, dict", "StackDataset, two of it", "Subset", "ConcatDataset",
            "Subset of StackDataset", "StackDataset of Subsets"]


@pytest.mark.parametrize("kind", WRAPPERS)
@pytest.mark.parametrize("batch_size", [1, 2, 3, 4, 7, 10])
@pytest.mark.parametrize("collate", ["BatchedTensorDataset.collate", "default_collate"])
def test_batched_dataset_inside_torchs_wrappers_gives_tensordatasets_batches(kind, batch_size, collate):
    """Every wrapper, every batch size, shuffled, with this dataset's collate_fn or torch's default: the batches,
    their structure (tuple, dict, nesting) and their order are those of the same wrapper around TensorDataset."""
    options = {"collate_fn": BatchedTensorDataset.collate} if collate == "BatchedTensorDataset.collate" else {}
    ours = list(DataLoader(_wrapped(kind, BatchedTensorDataset), batch_size=batch_size, shuffle=True,
                           generator=torch.Generator().manual_seed(3), **options))
    theirs = list(DataLoader(_wrapped(kind, TensorDataset), batch_size=batch_size, shuffle=True,
                             generator=torch.Generator().manual_seed(3)))
    assert len(ours) == len(theirs) and all(_same(a, b) for a, b in zip(ours, theirs)), (ours[:1], theirs[:1])


def test_used_directly_it_still_indexes_once_per_batch(monkeypatch):
    calls = []
    original = BatchedTensorDataset.__getitems__

    def counted(self, indices):
        calls.append(len(indices))
        return original(self, indices)

    monkeypatch.setattr(BatchedTensorDataset, "__getitems__", counted)
    monkeypatch.setattr(BatchedTensorDataset, "__getitem__", lambda self, i: pytest.fail("indexed per sample"))
    x = torch.randn(100, 2)
    batches = list(DataLoader(BatchedTensorDataset(x), batch_size=32, collate_fn=BatchedTensorDataset.collate))
    assert calls == [32, 32, 32, 4] and torch.equal(torch.cat([b[0] for b in batches]), x)


def test_a_batch_reads_as_its_samples():
    from snippets.tensor_loader import BatchedRows

    x, y = torch.arange(6.0).view(3, 2), torch.tensor([7, 8, 9])
    rows = BatchedTensorDataset(x, y).__getitems__([2, 0])
    assert isinstance(rows, BatchedRows) and len(rows) == 2
    assert _same(rows[0], (x[2], y[2])) and _same(rows[-1], (x[0], y[0])) and _same(rows[:1], [(x[2], y[2])])
    assert [_same(a, b) for a, b in zip(rows, [(x[2], y[2]), (x[0], y[0])])] == [True, True]
    with pytest.raises(IndexError, match="batch index 2 out of range for a batch of 2"):
        rows[2]
    assert repr(rows) == "BatchedRows(2 rows of 2 tensors)"


def _process_group(monkeypatch, rank, world_size):
    """torch.distributed as a process group of ``world_size`` ranks shows it to this process (no group is started)."""
    monkeypatch.setattr(torch.distributed, "is_available", lambda: True)
    monkeypatch.setattr(torch.distributed, "is_initialized", lambda: True)
    monkeypatch.setattr(torch.distributed, "get_rank", lambda group=None: rank)
    monkeypatch.setattr(torch.distributed, "get_world_size", lambda group=None: world_size)


def test_a_loader_not_told_to_shard_refuses_a_process_group_of_two_ranks_and_names_both_fixes(monkeypatch):
    _process_group(monkeypatch, 1, 2)
    with pytest.raises(RuntimeError) as refused:
        tensor_loader.TensorLoader(torch.arange(8), batch_size=2)
    assert str(refused.value).startswith("TensorLoader: a torch.distributed process group of 2 ranks is initialised, "
                                         "but this loader was not told to shard: every rank would iterate over the "
                                         "whole dataset (2x the optimizer steps per epoch")
    assert tensor_loader.TensorLoader(torch.arange(8), batch_size=2, distributed=True).rank == 1
    _process_group(monkeypatch, 0, 1)  # one rank: nothing to shard, nothing to refuse
    assert len(tensor_loader.TensorLoader(torch.arange(8), batch_size=2)) == 4


def test_the_sharding_arguments_refused_say_what_they_need(monkeypatch):
    with pytest.raises(ValueError) as refused:
        tensor_loader.TensorLoader(torch.arange(8), batch_size=2, distributed=False, rank=0, world_size=2)
    assert str(refused.value) == "distributed=False iterates over the whole dataset; it takes no rank or world_size"
    monkeypatch.setattr(torch.distributed, "is_initialized", lambda: False)
    with pytest.raises(RuntimeError) as refused:
        tensor_loader.TensorLoader(torch.arange(8), batch_size=2, distributed=True)
    assert str(refused.value) == ("TensorLoader(distributed=True) needs an initialised torch.distributed process "
                                  "group (torch.distributed.init_process_group), or rank= and world_size=")


def test_a_batchs_rows_are_indexed_as_a_sequence_from_either_end_and_no_further():
    rows = tensor_loader.BatchedRows((torch.arange(3), torch.arange(3) * 10))
    assert rows[-3] == (torch.tensor(0), torch.tensor(0)) and rows[2] == (torch.tensor(2), torch.tensor(20))
    for outside in (3, -4):
        with pytest.raises(IndexError, match=f"batch index {outside} out of range for a batch of 3"):
            rows[outside]
