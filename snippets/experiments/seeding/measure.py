"""Seeding order, the measurements: what draws from torch's global random stream, and patterns that keep runs
comparable. Only this module (with the question's setup, the recipes and the lab's timing) keys the result cache;
drawing is in ``figures``, the conditions behind the page's claims in ``checks``.
"""

from __future__ import annotations

import copy
import random
from typing import Callable

import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

from snippets.lab import experiment, progress
from snippets.seeding import same_parameters, seeded

from ..question import SimpleLinearModel, full_batch_loader, make_data, train_direct, train_loader

MAX_DRAWS = 8


def _int64_draws(before: torch.Tensor, after: torch.Tensor) -> int | None:
    """How many ``torch.empty((), dtype=torch.int64).random_()`` calls lead from ``before`` to ``after``.

    ``None`` when no count up to MAX_DRAWS matches: the operation consumed the stream some other way
    (for example a batch of uniform floats for weight initialisation).
    """
    with torch.random.fork_rng(devices=[]):
        torch.set_rng_state(before)
        for draws in range(MAX_DRAWS + 1):
            if torch.equal(torch.get_rng_state(), after):
                return draws
            torch.empty((), dtype=torch.int64).random_()
    return None


def _parameter_rows(a: nn.Module, b: nn.Module) -> list[dict]:
    rows = []
    for (name, pa), (_, pb) in zip(a.named_parameters(), b.named_parameters()):
        rows.append({"name": name, "shape": list(pa.shape), "equal": torch.equal(pa, pb),
                     "max_abs_diff": (pa - pb).abs().max().item()})
    return rows


@experiment()
def creation_order(seed: int = 0) -> dict:
    """Two models after one seed, then with a re-seed before each construction (the question's fix)."""
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        first, second = SimpleLinearModel(), SimpleLinearModel()
        one_seed = _parameter_rows(first, second)
        torch.manual_seed(seed)
        first = SimpleLinearModel()
        torch.manual_seed(seed)
        second = SimpleLinearModel()
        reseeded = _parameter_rows(first, second)
        same_after_reseed = same_parameters(first, second)
    return {"one_seed": one_seed, "reseeded": reseeded, "same_after_reseed": same_after_reseed}


def _question_run(epochs: int, reseed: bool) -> dict:
    """The question's script, end to end; ``reseed`` applies the fix (seed before each construction).

    The second model is trained through the question's full-batch DataLoader. A copy of its starting weights is
    also trained with the direct loop (``loader_start_direct``): if the loader changed anything but the start,
    that copy's losses would differ from the DataLoader run's.
    """
    x, y = make_data()  # seeds 0, draws the noise: exactly the question's first lines
    if reseed:
        torch.manual_seed(0)
    model_direct = SimpleLinearModel()
    if reseed:
        torch.manual_seed(0)
    model_loader = SimpleLinearModel()
    same_start = same_parameters(model_direct, model_loader)
    loader_start = copy.deepcopy(model_loader)
    direct = train_direct(model_direct, x, y, epochs)
    loader = train_loader(model_loader, full_batch_loader(x, y), epochs)
    loader_start_direct = train_direct(loader_start, x, y, epochs)
    with torch.no_grad():
        pred_direct = model_direct(x).squeeze(1).tolist()
        pred_loader = model_loader(x).squeeze(1).tolist()
    return {"same_start": same_start, "direct": direct, "loader": loader,
            "loader_start_direct": loader_start_direct,
            "same_end": same_parameters(model_direct, model_loader),
            "same_end_as_loader_start_direct": same_parameters(model_loader, loader_start),
            "pred_direct": pred_direct, "pred_loader": pred_loader}


@experiment()
def training_equivalence(epochs: int = 2000) -> dict:
    """The question's two trainings, both through the real DataLoader: fixed (seed before each model) and as
    asked (one seed)."""
    if epochs < 1:
        raise ValueError(f"epochs must be >= 1, got {epochs}")
    with torch.random.fork_rng(devices=[]):
        runs = {}
        for name, reseed in progress([("fixed", True), ("as_asked", False)], "seeding: question trainings"):
            runs[name] = _question_run(epochs, reseed)
        x, y = make_data()
    fixed = runs["fixed"]
    differing_epochs = sum(a != b for a, b in zip(fixed["direct"], fixed["loader"]))
    max_diff = max(abs(a - b) for a, b in zip(fixed["direct"], fixed["loader"]))
    asked = runs["as_asked"]
    asked_unexplained = sum(a != b for a, b in zip(asked["loader"], asked["loader_start_direct"]))
    return {"epochs": epochs, "x": x.squeeze(1).tolist(), "y": y.squeeze(1).tolist(), **runs,
            "differing_epochs": differing_epochs, "max_abs_diff": max_diff,
            "as_asked_unexplained_epochs": asked_unexplained}


def _rng_advance(operation: Callable[[], object]) -> tuple[bool, int | None]:
    before = torch.get_rng_state()
    operation()
    after = torch.get_rng_state()
    return not torch.equal(before, after), _int64_draws(before, after)


def _epoch(loader) -> None:
    for _ in loader:
        pass


def _iter_and_close(loader: DataLoader) -> None:
    """Create the iterator (as ``iter(loader)`` does), then shut its worker processes down."""
    iterator = iter(loader)
    shutdown = getattr(iterator, "_shutdown_workers", None)
    if shutdown is not None:
        shutdown()


@experiment()
def rng_consumers(n_samples: int = 100, num_workers: int = 2) -> dict:
    """Which everyday operations advance the global CPU generator, compared state before and after.

    The worker rows start ``num_workers`` processes: with workers, ``iter()`` already asks the sampler for the
    first indices (prefetching), and a loader with ``persistent_workers=True`` keeps one iterator for all its
    epochs — each epoch of that one loader is a row.
    """
    if num_workers < 1:
        raise ValueError(f"num_workers must be >= 1 for the worker rows, got {num_workers}")
    dataset = TensorDataset(torch.arange(n_samples, dtype=torch.float32).unsqueeze(1))
    dropout_input = torch.ones(8, 8)
    dropout = nn.Dropout(0.5)
    private = torch.Generator().manual_seed(0)
    persistent = DataLoader(dataset, batch_size=10, num_workers=num_workers, persistent_workers=True)
    persistent_shuffled = DataLoader(dataset, batch_size=10, shuffle=True, num_workers=num_workers,
                                     persistent_workers=True)
    workers = f"num_workers={num_workers}"
    operations: list[tuple[str, Callable[[], object]]] = [
        ("nn.Linear(1, 10) — module construction", lambda: nn.Linear(1, 10)),
        ("torch.linspace(-10, 10, 1000)", lambda: torch.linspace(-10, 10, 1000)),
        ("torch.randn_like(x) — the question's noise", lambda: torch.randn_like(dropout_input)),
        ("len(DataLoader(...))", lambda: len(DataLoader(dataset, batch_size=10))),
        ("iter(DataLoader(..., shuffle=False))", lambda: iter(DataLoader(dataset, batch_size=10))),
        ("one epoch, shuffle=False", lambda: _epoch(DataLoader(dataset, batch_size=10))),
        ("iter(DataLoader(..., shuffle=True))", lambda: iter(DataLoader(dataset, batch_size=10, shuffle=True))),
        ("one epoch, shuffle=True", lambda: _epoch(DataLoader(dataset, batch_size=10, shuffle=True))),
        ("one epoch, shuffle=True, generator=g",
         lambda: _epoch(DataLoader(dataset, batch_size=10, shuffle=True, generator=private))),
        ("nn.Dropout(0.5) forward, train mode", lambda: dropout.train()(dropout_input)),
        ("nn.Dropout(0.5) forward, eval mode", lambda: dropout.eval()(dropout_input)),
        (f"iter(DataLoader(..., shuffle=False, {workers}))",
         lambda: _iter_and_close(DataLoader(dataset, batch_size=10, num_workers=num_workers))),
        (f"iter(DataLoader(..., shuffle=True, {workers}))",
         lambda: _iter_and_close(DataLoader(dataset, batch_size=10, shuffle=True, num_workers=num_workers))),
    ]
    for shuffle, loader in ((False, persistent), (True, persistent_shuffled)):
        operations += [(f"epoch {epoch}, shuffle={shuffle}, {workers}, persistent_workers=True",
                        lambda loader=loader: _epoch(loader)) for epoch in (1, 2, 3)]
    rows = []
    try:
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(0)
            for name, operation in operations:
                advances, draws = _rng_advance(operation)
                rows.append({"operation": name, "advances": advances, "int64_draws": draws})
    finally:
        for loader in (persistent, persistent_shuffled):
            if loader._iterator is not None:
                loader._iterator._shutdown_workers()
    return {"rows": rows, "by_name": {row["operation"]: row for row in rows}, "num_workers": num_workers}


@experiment()
def loader_between_models(seed: int = 0) -> dict:
    """Creating a DataLoader iterator between two constructions changes the second model."""
    dataset = TensorDataset(torch.zeros(10, 1))
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        plain_a, plain_b = SimpleLinearModel(), SimpleLinearModel()
        torch.manual_seed(seed)
        first_a = SimpleLinearModel()
        iter(DataLoader(dataset, batch_size=10))
        first_b = SimpleLinearModel()
        with seeded(seed):
            guarded_a = SimpleLinearModel()
        iter(DataLoader(dataset, batch_size=10))
        with seeded(seed):
            guarded_b = SimpleLinearModel()
    return {
        "first_model_unchanged": same_parameters(plain_a, first_a),
        "second_model_unchanged": same_parameters(plain_b, first_b),
        "seeded_models_equal": same_parameters(guarded_a, guarded_b),
    }


@experiment()
def generator_isolation(n_samples: int = 100, batch_size: int = 10) -> dict:
    """A DataLoader with its own generator leaves the global stream alone and repeats its order."""
    dataset = TensorDataset(torch.arange(n_samples))

    def order(generator: torch.Generator | None) -> list[int]:
        loader = DataLoader(dataset, batch_size=batch_size, shuffle=True, generator=generator)
        return [int(i) for (batch,) in loader for i in batch]

    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(0)
        before = torch.get_rng_state()
        first = order(torch.Generator().manual_seed(1234))
        global_untouched = torch.equal(before, torch.get_rng_state())
        SimpleLinearModel()  # a model built in between does not change the data order
        second = order(torch.Generator().manual_seed(1234))
        torch.manual_seed(0)
        global_order = order(None)
        SimpleLinearModel()
        torch.manual_seed(0)
        SimpleLinearModel()
        shifted_order = order(None)
    return {"global_untouched": global_untouched, "order_repeats": first == second,
            "global_order_shifted": global_order != shifted_order, "first_batch": first[:batch_size]}


class _WorkerSeeds(torch.utils.data.Dataset):
    """Reports, per item, the worker's torch seed and one draw from each library's global RNG."""

    def __len__(self) -> int:
        return 4

    def __getitem__(self, index: int):
        info = torch.utils.data.get_worker_info()
        numpy_draw = -1.0
        try:
            import numpy
            numpy_draw = float(numpy.random.random())
        except ImportError:
            pass
        return torch.tensor([info.id if info else -1, torch.initial_seed() % 2**31, numpy_draw, random.random()],
                            dtype=torch.float64)


def seed_worker(worker_id: int) -> None:
    """PyTorch's reproducibility notes: derive other libraries' seeds from the worker's torch seed."""
    import numpy
    worker_seed = torch.initial_seed() % 2**32
    numpy.random.seed(worker_seed)
    random.seed(worker_seed)


@experiment()
def worker_seeds(num_workers: int = 2) -> dict:
    """Per-worker seeds: distinct across workers, repeated across runs when the loader has a seeded generator."""

    def collect(worker_init_fn) -> list[list[float]]:
        loader = DataLoader(_WorkerSeeds(), batch_size=1, num_workers=num_workers,
                            generator=torch.Generator().manual_seed(7), worker_init_fn=worker_init_fn)
        return [batch[0].tolist() for batch in loader]

    with torch.random.fork_rng(devices=[]):
        first, second = collect(None), collect(None)
        with_init = collect(seed_worker)
    by_worker = {int(row[0]): row for row in first}
    return {
        "rows": first,
        "repeatable": first == second,
        "distinct_torch_seeds": len({row[1] for row in by_worker.values()}) == len(by_worker),
        "distinct_numpy": len({row[2] for row in by_worker.values()}) == len(by_worker),
        "with_init_repeatable": with_init == collect(seed_worker),
        "workers": len(by_worker),
    }


@experiment()
def thread_count_effect(n_values: int = 3_000_017, size: int = 512, epochs: int = 300) -> dict:
    """Do results change bitwise with the number of intra-op threads? Each computation runs twice at each count.

    The counts are 1 and this process's thread count, at least 2: how a reduction is split depends on the
    number of threads asked for, not on how many cores run them, so a one-core machine can compare too. The
    repeat at a fixed count separates an effect of the thread count from run-to-run nondeterminism.
    """
    counts = [1, max(2, torch.get_num_threads())]
    generator = torch.Generator().manual_seed(0)
    vector = torch.randn(n_values, generator=generator)
    matrix = torch.randn(size, size, generator=generator)
    x, y = make_data()

    def train() -> torch.Tensor:
        with seeded(0):
            model = SimpleLinearModel()
        return torch.tensor(train_direct(model, x, y, epochs))

    operations: dict[str, Callable[[], torch.Tensor]] = {
        f"sum of {n_values:,} float32": lambda: vector.sum(),
        f"dot product of {n_values:,} float32": lambda: vector.dot(vector),
        f"{size}×{size} matmul": lambda: matrix @ matrix,
        f"the question's training, {epochs} epochs (losses)": train,
    }
    outputs: dict[int, dict[str, list[torch.Tensor]]] = {}
    original = torch.get_num_threads()
    try:
        for threads in counts:
            torch.set_num_threads(threads)
            outputs[threads] = {name: [op(), op()] for name, op in operations.items()}
    finally:
        torch.set_num_threads(original)
    lo, hi = counts
    rows = [{"operation": name, "equal": torch.equal(outputs[lo][name][0], outputs[hi][name][0]),
             "max_abs_diff": (outputs[lo][name][0] - outputs[hi][name][0]).abs().max().item(),
             "repeatable": all(torch.equal(*outputs[count][name]) for count in counts)} for name in operations]
    return {"thread_counts": counts, "rows": rows, "any_differs": not all(r["equal"] for r in rows)}


@experiment()
def deterministic_mode(epochs: int = 300) -> dict:
    """What ``torch.use_deterministic_algorithms(True)`` changes for the question's training on this device."""
    x, y = make_data()
    previous = torch.are_deterministic_algorithms_enabled()
    runs = {}
    try:
        for flag in (False, True):
            torch.use_deterministic_algorithms(flag)
            with seeded(0):
                model = SimpleLinearModel()
            runs[flag] = train_direct(model, x, y, epochs)
    finally:
        torch.use_deterministic_algorithms(previous)
    return {"identical": runs[False] == runs[True], "cudnn_deterministic": torch.backends.cudnn.deterministic,
            "cudnn_benchmark": torch.backends.cudnn.benchmark, "cuda": torch.cuda.is_available()}
