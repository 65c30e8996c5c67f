"""The TensorLoader recipe: same batches and same random draws as DataLoader(TensorDataset), clear errors."""

from __future__ import annotations

import itertools
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from torch.utils.data import DataLoader, TensorDataset

from snippets import tensor_loader
from snippets.tensor_loader import TensorLoader

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


def assert_equivalent(tensors: tuple, **options) -> None:
    (len_dl, expected), (len_tl, got) = run_both(tensors, **options)
    assert len_tl == len_dl
    assert len(got) == len(expected)
    for epoch_dl, epoch_tl in zip(expected, got):
        assert len(epoch_tl) == len(epoch_dl), "different number of batches"
        for (batch_dl, state_dl), (batch_tl, state_tl) in zip(epoch_dl, epoch_tl):
            if isinstance(batch_dl, str):
                assert batch_tl == batch_dl
            else:
                assert_same_batch(batch_dl, batch_tl)
            assert same_state(state_dl, state_tl), "RNG state differs"


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
    )
    done = subprocess.run([sys.executable, "-I", "-c", script], cwd=tmp_path, capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[[0.0, 1.0], [2.0, 3.0], [4.0]]"


def test_recipe_docstring_has_usage_and_limits():
    doc = tensor_loader.__doc__
    assert "Usage::" in doc and "TensorLoader(x, y, batch_size=64, shuffle=True)" in doc
    for words in ("views", "worker processes", "second permutation"):
        assert words in doc
