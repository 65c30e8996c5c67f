"""Seeding order, the measurements: what draws from torch's global random stream, and patterns that keep runs
comparable. Only this module (with the question's setup, the recipes and the lab's timing) keys the result cache;
drawing is in ``figures``, the conditions behind the page's claims in ``checks``.
"""

from __future__ import annotations

import contextlib
import copy
import os
import random
import re
import warnings
from typing import Callable, Iterator

import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset, random_split

from snippets.lab import experiment, pick_device, progress
from snippets.lab.timing import drawn_only
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
    compared = min(len(run[key]) for run in runs.values() for key in _CURVES)
    # every epoch is compared above; the curves are kept at the epochs a figure can show (a recording stays small)
    kept = curve_epochs(epochs)
    for run in runs.values():
        for key in _CURVES:
            run[key] = [run[key][epoch - 1] for epoch in kept]
        for key in ("pred_direct", "pred_loader"):  # drawn only: 6 figures are more than a figure shows
            run[key] = drawn_only(run[key])
    return {"epochs": epochs, "compared_epochs": compared, "curve_epochs": kept,
            "x": drawn_only(x.squeeze(1).tolist()), "y": drawn_only(y.squeeze(1).tolist()), **runs,
            "differing_epochs": differing_epochs, "max_abs_diff": max_diff,
            "as_asked_unexplained_epochs": asked_unexplained}


_CURVES = ("direct", "loader", "loader_start_direct")



def curve_epochs(epochs: int, points: int = 120) -> list[int]:
    """The epochs (from 1) at which a loss curve is kept: about ``points`` of them, spaced evenly and on a log
    scale (the loss falls fastest at the start), the first and the last always among them."""
    if epochs <= 2 * points:
        return list(range(1, epochs + 1))
    even = {1 + round(i * (epochs - 1) / (points - 1)) for i in range(points)}
    logarithmic = {round(epochs ** (i / (points - 1))) for i in range(points)}
    return sorted(even | logarithmic)


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
    split_generator = torch.Generator().manual_seed(0)
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
        (f"random_split(dataset, [{n_samples - n_samples // 5}, {n_samples // 5}])",
         lambda: random_split(dataset, [n_samples - n_samples // 5, n_samples // 5])),
        (f"random_split(dataset, [{n_samples - n_samples // 5}, {n_samples // 5}], generator=g)",
         lambda: random_split(dataset, [n_samples - n_samples // 5, n_samples // 5], generator=split_generator)),
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
    return {"rows": rows, "by_name": {row["operation"]: row for row in rows}, "num_workers": num_workers,
            "cuda_rows": _cuda_generator_rows() if pick_device().type == "cuda" else []}


def _cuda_generator_rows() -> list[dict]:
    """On CUDA: which generator, the CPU's or the device's, each way of putting randomness on the GPU draws from."""
    device = pick_device()
    dropout_input = torch.ones(8, 8, device=device)
    operations: list[tuple[str, Callable[[], object]]] = [
        ('nn.Linear(1, 10, device="cuda")', lambda: nn.Linear(1, 10, device=device)),
        ("nn.Linear(1, 10).to(\"cuda\")", lambda: nn.Linear(1, 10).to(device)),
        ("nn.Dropout(0.5) forward on CUDA, train mode", lambda: nn.Dropout(0.5).train()(dropout_input)),
        ('torch.randn(8, device="cuda")', lambda: torch.randn(8, device=device)),
    ]
    rows = []
    with torch.random.fork_rng(devices=[device.index or 0]):
        torch.manual_seed(0)
        for name, operation in operations:
            cpu_before, cuda_before = torch.get_rng_state(), torch.cuda.get_rng_state(device)
            operation()
            torch.cuda.synchronize(device)
            rows.append({"operation": name,
                         "cpu_advances": not torch.equal(cpu_before, torch.get_rng_state()),
                         "cuda_advances": not torch.equal(cuda_before, torch.cuda.get_rng_state(device))})
    return rows


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
def split_order(n_samples: int = 100, validation: int = 20, seed: int = 0) -> dict:
    """``random_split`` right after a seed, and after a seed and a model built in between: without a generator
    of its own the split draws from the global stream, after the model's weights; with one it does not."""
    dataset = TensorDataset(torch.arange(n_samples))

    def validation_indices(model_first: bool, own_generator: bool) -> list[int]:
        torch.manual_seed(seed)
        if model_first:
            SimpleLinearModel()
        lengths = [n_samples - validation, validation]
        if own_generator:
            _, held_out = random_split(dataset, lengths, generator=torch.Generator().manual_seed(seed))
        else:
            _, held_out = random_split(dataset, lengths)
        return sorted(int(i) for i in held_out.indices)

    with torch.random.fork_rng(devices=[]):
        plain, after_model = validation_indices(False, False), validation_indices(True, False)
        own, own_after_model = validation_indices(False, True), validation_indices(True, True)
    return {"n_samples": n_samples, "validation": validation,
            "moved": len(set(plain) - set(after_model)), "generator_same": own == own_after_model,
            "first_held_out": plain[:5], "first_held_out_after_model": after_model[:5]}


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
    """Reports, per item, what a worker's random streams give.

    ``generator`` is a NumPy ``Generator`` (NumPy's recommended API) that the dataset creates in the main
    process: torch seeds no such object, so every worker starts with a copy of it in the same state.
    """

    def __init__(self) -> None:
        import numpy

        self.generator = numpy.random.default_rng(0)

    def __len__(self) -> int:
        return 4

    def __getitem__(self, index: int) -> dict:
        import numpy

        info = torch.utils.data.get_worker_info()
        return {"worker": info.id, "torch_seed": torch.initial_seed(), "info_seed": info.seed,
                "random": random.random(), "random_from_info_seed": random.Random(info.seed).random(),
                "numpy": float(numpy.random.random()),
                # what numpy.random.seed(torch.initial_seed() % 2**32), the seed_worker recipe, would give
                "numpy_seed_worker": float(numpy.random.RandomState(torch.initial_seed() % 2**32).random_sample()),
                "own_generator": float(self.generator.random())}


def reseed_dataset_generator(worker_id: int) -> None:
    """worker_init_fn: give the dataset's own generator a seed from the worker's (distinct per worker,
    repeatable with a seeded DataLoader generator)."""
    import numpy

    info = torch.utils.data.get_worker_info()
    info.dataset.generator = numpy.random.default_rng(info.seed)


@experiment()
def worker_seeds(num_workers: int = 2) -> dict:
    """What torch seeds in each worker, from what, and what it leaves alone; repeated with a seeded generator."""
    if num_workers < 2:
        raise ValueError(f"num_workers must be >= 2 to compare workers, got {num_workers}")

    def collect(worker_init_fn) -> list[dict]:
        loader = DataLoader(_WorkerSeeds(), batch_size=None, num_workers=num_workers,
                            generator=torch.Generator().manual_seed(7), worker_init_fn=worker_init_fn)
        firsts: dict[int, dict] = {}
        for item in loader:
            firsts.setdefault(int(item["worker"]), {key: float(value) if key in ("random", "random_from_info_seed",
                                                   "numpy", "numpy_seed_worker", "own_generator") else int(value)
                                                   for key, value in item.items()})
        return [firsts[worker] for worker in sorted(firsts)]

    with torch.random.fork_rng(devices=[]):
        first, second = collect(None), collect(None)
        fixed, fixed_again = collect(reseed_dataset_generator), collect(reseed_dataset_generator)
    return {"rows": first, "repeatable": first == second, "workers": len(first),
            "fixed_rows": fixed, "fixed_repeatable": fixed == fixed_again}


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
             "max_abs_value": outputs[lo][name][0].abs().max().item(),
             "repeatable": all(torch.equal(*outputs[count][name]) for count in counts)} for name in operations]
    return {"thread_counts": counts, "rows": rows, "any_differs": not all(r["equal"] for r in rows)}


def _outcome(operation: Callable[[], torch.Tensor]) -> torch.Tensor | str:
    """The operation's result, or the message of the RuntimeError it raises."""
    try:
        return operation()
    except RuntimeError as error:
        return "raises: " + str(error)


_CUBLAS_CONFIG = "CUBLAS_WORKSPACE_CONFIG"


def _cublas_config_documented() -> bool:
    """Whether the installed torch documents that deterministic mode needs CUBLAS_WORKSPACE_CONFIG on CUDA.

    Releases that check the variable say so in the docstring of torch.use_deterministic_algorithms; the check
    and its paragraph were removed together (pytorch/pytorch#161749).
    """
    return _CUBLAS_CONFIG in (torch.use_deterministic_algorithms.__doc__ or "")


@contextlib.contextmanager
def _environment_variable(name: str, value: str | None) -> Iterator[None]:
    previous = os.environ.get(name)
    if value is None:
        os.environ.pop(name, None)
    else:
        os.environ[name] = value
    try:
        yield
    finally:
        if previous is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = previous


@contextlib.contextmanager
def _cublas_config_if_required(device: torch.device) -> Iterator[None]:
    """On CUDA with a torch that checks it, set CUBLAS_WORKSPACE_CONFIG as that torch asks (torch reads it at
    each cuBLAS call); elsewhere change nothing."""
    if device.type == "cuda" and _cublas_config_documented() and os.environ.get(_CUBLAS_CONFIG) not in (
            ":4096:8", ":16:8"):
        with _environment_variable(_CUBLAS_CONFIG, ":4096:8"):
            yield
    else:
        yield


def _listed_operations(device: torch.device, n_indices: int) -> dict[str, Callable[[], torch.Tensor]]:
    """Operations the docstring of torch.use_deterministic_algorithms lists as changed by the flag on the CPU,
    each with many repeated indices, so that the order in which duplicates are applied matters. The keys start
    with the name the docstring uses."""
    generator = torch.Generator().manual_seed(0)
    index = torch.randint(0, 10, (n_indices,), generator=generator).to(device)
    values = torch.randn(n_indices, generator=generator).to(device)
    return {
        "index_put_(..., accumulate=True)":
            lambda: torch.zeros(10, device=device).index_put_((index,), values, accumulate=True),
        "put_(..., accumulate=True)": lambda: torch.zeros(10, device=device).put_(index, values, accumulate=True),
        "index_copy_(0, index, values)": lambda: torch.zeros(10, device=device).index_copy_(0, index, values),
        # the gradient of indexing a tensor with repeated indices (nn.Embedding has a backward of its own)
        "__getitem__ (backward of w[index])": lambda: _gather_gradient(device, index, values),
    }


def _gather_gradient(device: torch.device, index: torch.Tensor, values: torch.Tensor) -> torch.Tensor:
    """The gradient of ``(w[index] * values).sum()`` with respect to ``w``: repeated indices are summed into it."""
    weight = torch.zeros(10, device=device, requires_grad=True)
    (weight[index] * values).sum().backward()
    return weight.grad


def _documented_cpu_operations() -> list[str]:
    """The entries of use_deterministic_algorithms' docstring that the flag makes deterministic on the CPU."""
    doc = torch.use_deterministic_algorithms.__doc__ or ""
    section = re.split(r"will\s+throw", re.split(r"act\s+deterministically", doc, maxsplit=1)[-1], maxsplit=1)[0]
    entries = [" ".join(re.split(r"\n\s*\n", item)[0].split()) for item in re.split(r"\n\s*\* ", section)[1:]]
    plain = [re.sub(r":(?:func|class|meth|attr):`~?([^`]+)`", r"`\1`", entry).replace("``", "`")
             for entry in entries]
    return [entry.rstrip(".") for entry in plain if "CPU" in entry]


def _bits_key(outcome: torch.Tensor | str) -> bytes | str:
    if isinstance(outcome, str):
        return outcome
    return bytes(outcome.detach().cpu().contiguous().view(torch.uint8).tolist())


@contextlib.contextmanager
def _deterministic(mode: bool, *, warn_only: bool = False) -> Iterator[None]:
    previous = (torch.are_deterministic_algorithms_enabled(), torch.is_deterministic_algorithms_warn_only_enabled())
    torch.use_deterministic_algorithms(mode, warn_only=warn_only)
    try:
        yield
    finally:
        torch.use_deterministic_algorithms(previous[0], warn_only=previous[1])


@experiment()
def deterministic_mode(epochs: int = 300, n_indices: int = 1_000_000, runs: int = 10) -> dict:
    """What ``torch.use_deterministic_algorithms(True)`` changes on the page's device: the question's training,
    operations its docstring lists for the CPU (each run ``runs`` times with the flag off and on), an operation
    without a deterministic implementation (strict and ``warn_only=True``), and what ``torch.empty`` returns."""
    if runs < 2:
        raise ValueError(f"runs must be >= 2 to compare runs, got {runs}")
    device = pick_device()
    x, y = (t.to(device) for t in make_data())
    operations = _listed_operations(device, n_indices)
    # On the CPU the flag-off kernels of these operations split the work between threads; ask for at least
    # two (a one-core machine splits the work too), as for the thread-count table.
    threads, original_threads = max(2, torch.get_num_threads()), torch.get_num_threads()
    losses, outputs = {}, {}
    try:
        torch.set_num_threads(threads)
        with _cublas_config_if_required(device):
            for flag in (False, True):
                with _deterministic(flag):
                    with seeded(0):
                        model = SimpleLinearModel()
                    losses[flag] = train_direct(model.to(device), x, y, epochs)
                    outputs[flag] = {name: [_bits_key(_outcome(op)) for _ in range(runs)]
                                     for name, op in operations.items()}
    finally:
        torch.set_num_threads(original_threads)
    documented_as = {"index_put_": "torch.Tensor.index_put", "put_": "torch.Tensor.put_",
                     "index_copy_": "torch.Tensor.index_copy", "__getitem__": "torch.Tensor.__getitem__"}
    rows = [{"operation": name, "documented_as": documented_as[name.split("(")[0].strip()],
             "distinct_off": len(set(outputs[False][name])), "distinct_on": len(set(outputs[True][name])),
             "raises_on": isinstance(outputs[True][name][0], str),
             "off_equal_to_on": sum(key == outputs[True][name][0] for key in outputs[False][name])}
            for name in operations]

    def no_deterministic_kernel() -> torch.Tensor:  # listed: put_ with accumulate=False raises
        return torch.zeros(4, device=device).put_(torch.tensor([1, 1], device=device),
                                                  torch.tensor([1.0, 2.0], device=device))

    with _deterministic(True):
        strict = _outcome(no_deterministic_kernel)
    with _deterministic(True, warn_only=True), warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        lenient = _outcome(no_deterministic_kernel)
    with _deterministic(True):
        filled = torch.empty(1000, device=device)
        filled_int = torch.empty(1000, dtype=torch.int64, device=device)
    return {
        "device": device.type, "threads": threads, "n_indices": n_indices, "runs": runs,
        "identical": losses[False] == losses[True], "rows": rows,
        "documented_cpu": _documented_cpu_operations(),
        "strict_raises": isinstance(strict, str),
        "strict_message": strict.split(", but")[0] if isinstance(strict, str) else None,
        "warn_only_runs": not isinstance(lenient, str),
        "warn_only_warned": any("deterministic" in str(w.message) for w in caught),
        "fill_uninitialized_memory": bool(torch.utils.deterministic.fill_uninitialized_memory),
        "empty_all_nan": bool(filled.isnan().all()),
        "empty_int_all_max": bool((filled_int == torch.iinfo(torch.int64).max).all()),
        "cudnn_deterministic": torch.backends.cudnn.deterministic, "cudnn_benchmark": torch.backends.cudnn.benchmark,
    }


@experiment()
def cublas_workspace_config() -> dict:
    """Does deterministic mode still need ``CUBLAS_WORKSPACE_CONFIG`` with the installed torch?

    Read from the installed torch's docstring everywhere; on CUDA also tried: a matrix product in deterministic
    mode with the variable unset.
    """
    device = pick_device()
    raises_without = None
    if device.type == "cuda":
        with _environment_variable(_CUBLAS_CONFIG, None), _deterministic(True):
            matrix = torch.ones(64, 64, device=device)
            outcome = _outcome(lambda: matrix @ matrix)
            torch.cuda.synchronize(device)
        raises_without = isinstance(outcome, str) and _CUBLAS_CONFIG in outcome
    return {"torch": torch.__version__, "device": device.type, "documented": _cublas_config_documented(),
            "raises_without": raises_without}


class _Augmented(torch.utils.data.Dataset):
    """Sample ``i`` and one draw of augmentation noise from the torch stream of the process that loads it (a
    random crop's offset, a flip): what a worker's augmentation gets."""

    def __init__(self, n: int) -> None:
        self.n = n

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, index: int) -> tuple[int, float]:
        return index, float(torch.rand(()))


@experiment()
def ddp_seeds(n_samples: int = 64, world_size: int = 2, num_workers: int = 2, seed: int = 0) -> dict:
    """A distributed run, rank by rank, each as its process would load its data: the same script on every rank
    (``torch.manual_seed(seed)`` first), a ``DistributedSampler`` and worker processes. Compared: the workers'
    augmentation draws across ranks, with no loader generator and with one seeded ``seed + rank``; and the
    ranks' shards with one sampler seed on every rank and with a seed per rank."""
    if world_size < 2 or num_workers < 1:
        raise ValueError(f"world_size must be >= 2 and num_workers >= 1, got {world_size} and {num_workers}")
    from torch.utils.data import DistributedSampler

    dataset = _Augmented(n_samples)

    def rank_run(rank: int, loader_seed: int | None, sampler_seed: int) -> tuple[list[int], list[float]]:
        torch.manual_seed(seed)  # every rank runs the same script
        sampler = DistributedSampler(dataset, num_replicas=world_size, rank=rank, shuffle=True, seed=sampler_seed)
        sampler.set_epoch(0)
        generator = None if loader_seed is None else torch.Generator().manual_seed(loader_seed)
        loader = DataLoader(dataset, batch_size=8, sampler=sampler, num_workers=num_workers, generator=generator)
        indices: list[int] = []
        draws: list[float] = []
        for index, noise in loader:
            indices += [int(i) for i in index]
            draws += [float(v) for v in noise]
        return indices, draws

    def shards(runs: list[tuple[list[int], list[float]]]) -> dict:
        counts: dict[int, int] = {}
        for indices, _ in runs:
            for index in set(indices):
                counts[index] = counts.get(index, 0) + 1
        return {"on_two_or_more_ranks": sum(1 for c in counts.values() if c > 1),
                "on_no_rank": n_samples - len(counts)}

    with torch.random.fork_rng(devices=[]):
        alike = [rank_run(rank, None, seed) for rank in range(world_size)]
        per_rank = [rank_run(rank, seed + rank, seed) for rank in range(world_size)]
        sampler_per_rank = [rank_run(rank, seed + rank, seed + rank) for rank in range(world_size)]
    return {"n_samples": n_samples, "world_size": world_size, "num_workers": num_workers,
            "alike_draws_equal": all(run[1] == alike[0][1] for run in alike),
            "alike_indices_differ": alike[0][0] != alike[1][0],
            "per_rank_draws_equal": any(per_rank[a][1] == per_rank[b][1] for a in range(world_size)
                                        for b in range(a + 1, world_size)),
            "first_draws": [run[1][:3] for run in alike],
            "one_seed": shards(per_rank), "seed_per_rank": shards(sampler_per_rank)}


class _Jittered(torch.utils.data.Dataset):
    """The sample with a little noise from Python's ``random``: an augmentation that draws from ``random``."""

    def __init__(self, x: torch.Tensor, y: torch.Tensor) -> None:
        self.x, self.y = x, y

    def __len__(self) -> int:
        return len(self.x)

    def __getitem__(self, index: int) -> tuple[torch.Tensor, torch.Tensor]:
        return self.x[index] + random.gauss(0.0, 0.01), self.y[index]


RESUME_STATES = ("torch", "loader", "random")


@experiment()
def checkpoint_resume(n_samples: int = 256, batch_size: int = 32, epochs: int = 4, seed: int = 0) -> dict:
    """A training run stopped after half its epochs and resumed from a checkpoint, against the same run
    uninterrupted. Its randomness comes from three places: dropout (torch's global stream), the shuffled order
    (the loader's generator) and a jitter from Python's ``random``. The resumed run is a fresh start of the same
    script (everything seeded as at the start), then the checkpoint: the model and the optimizer always, and
    each combination of the three random states (``RESUME_STATES``); with all three through the recipe's
    ``rng_states``. And the order a ``DistributedSampler`` gives after ``set_epoch`` with the absolute epoch,
    against counting epochs from 0 again."""
    if epochs < 2:
        raise ValueError(f"epochs must be >= 2 to stop half-way, got {epochs}")
    from torch.utils.data import DistributedSampler

    from snippets.seeding import restore_rng_states, rng_states

    half = epochs // 2
    x = torch.linspace(-3, 3, n_samples).unsqueeze(1)
    y = torch.sin(x)
    dataset = _Jittered(x, y)

    def start() -> tuple[nn.Module, torch.optim.Optimizer, torch.Generator, DataLoader]:
        torch.manual_seed(seed)  # the script's first lines, in the first run and in the resumed one
        random.seed(seed)
        generator = torch.Generator().manual_seed(seed)
        model = nn.Sequential(nn.Linear(1, 16), nn.ReLU(), nn.Dropout(0.2), nn.Linear(16, 1))
        optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
        return model, optimizer, generator, DataLoader(dataset, batch_size=batch_size, shuffle=True,
                                                       generator=generator)

    def train(model: nn.Module, optimizer: torch.optim.Optimizer, loader: DataLoader, count: int) -> None:
        model.train()
        for _ in range(count):
            for xb, yb in loader:
                optimizer.zero_grad()
                nn.functional.mse_loss(model(xb), yb).backward()
                optimizer.step()

    with torch.random.fork_rng(devices=[]):
        state = random.getstate()
        try:
            model, optimizer, generator, loader = start()
            train(model, optimizer, loader, half)
            checkpoint = {"model": copy.deepcopy(model.state_dict()),
                          "optimizer": copy.deepcopy(optimizer.state_dict()),
                          "torch": torch.get_rng_state(), "loader": generator.get_state(), "random": random.getstate(),
                          "recipe": rng_states(generator)}
            train(model, optimizer, loader, epochs - half)
            uninterrupted = copy.deepcopy(model.state_dict())
            variants = []
            combinations = [tuple(name for i, name in enumerate(RESUME_STATES) if mask >> i & 1)
                            for mask in range(2 ** len(RESUME_STATES))]
            for restored in [*combinations, ("recipe",)]:
                model, optimizer, generator, loader = start()
                model.load_state_dict(checkpoint["model"])
                # a fresh copy, as torch.load gives: the optimizer keeps the tensors it is given and updates them
                optimizer.load_state_dict(copy.deepcopy(checkpoint["optimizer"]))
                if "recipe" in restored:
                    restore_rng_states(checkpoint["recipe"], generator)
                if "torch" in restored:
                    torch.set_rng_state(checkpoint["torch"])
                if "loader" in restored:
                    generator.set_state(checkpoint["loader"])
                if "random" in restored:
                    random.setstate(checkpoint["random"])
                train(model, optimizer, loader, epochs - half)
                resumed = model.state_dict()
                equal = all(torch.equal(resumed[name], uninterrupted[name]) for name in uninterrupted)
                variants.append({"restored": list(restored), "equal": equal,
                                 "max_abs_diff": max(float((resumed[name] - uninterrupted[name]).abs().max())
                                                     for name in uninterrupted)})
        finally:
            random.setstate(state)
    sampler = DistributedSampler(dataset, num_replicas=1, rank=0, shuffle=True, seed=seed)
    sampler.set_epoch(half)
    absolute = list(sampler)
    sampler.set_epoch(0)
    from_zero = list(sampler)
    return {"epochs": epochs, "stopped_after": half, "n_samples": n_samples, "states": list(RESUME_STATES),
            "variants": variants, "sampler_epoch_order_differs": absolute != from_zero,
            "sampler_first_indices": {"absolute": absolute[:5], "from_zero": from_zero[:5]}}


@experiment()
def compiled_randomness(n: int = 64, p: float = 0.5, seed: int = 0) -> dict:
    """A dropout under ``torch.compile`` (Inductor, the default backend) against the same dropout run eagerly,
    each right after ``torch.manual_seed(seed)``: the mask, and the global generator's state afterwards; with
    Inductor's default random numbers and with ``torch._inductor.config.fallback_random = True``. Where Inductor
    cannot compile here (no C++ compiler), nothing is compared and the error is kept."""
    import torch._inductor.config as inductor_config

    def dropout(x: torch.Tensor) -> torch.Tensor:
        return nn.functional.dropout(x, p, training=True)

    x = torch.ones(n)
    saved = inductor_config.fallback_random
    outcome: dict = {"n": n, "p": p, "available": True, "error": None}
    try:
        with torch.random.fork_rng(devices=[]):
            for name, fallback in (("default", False), ("fallback_random", True)):
                torch._dynamo.reset()
                inductor_config.fallback_random = fallback
                compiled = torch.compile(dropout)
                torch.manual_seed(seed)
                eager_mask, eager_state = dropout(x) != 0, torch.get_rng_state()
                torch.manual_seed(seed)
                compiled_mask, compiled_state = compiled(x) != 0, torch.get_rng_state()
                outcome[name] = {"same_mask": bool(torch.equal(eager_mask, compiled_mask)),
                                 "same_state": bool(torch.equal(eager_state, compiled_state)),
                                 "kept": int(compiled_mask.sum()), "kept_eager": int(eager_mask.sum())}
    except Exception as error:  # noqa: BLE001 - no compiler, or a backend that cannot run here: said on the page
        outcome.update(available=False, error=f"{type(error).__name__}: {str(error).splitlines()[0][:300]}")
    finally:
        inductor_config.fallback_random = saved
        torch._dynamo.reset()
    return outcome
