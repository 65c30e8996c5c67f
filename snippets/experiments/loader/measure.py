"""DataLoader overhead, the experiments: the question's timing, where the time goes, scaling, limits.

Every function marked ``@experiment`` returns JSON; size settings are keyword arguments with the page's
full-size defaults (tests call them small). The helpers here decide what is measured — the loops timed, the
baselines, the datasets — and are shown beside each result on the page. Drawing and tables live in
``figures``, the conditions behind the page's claims in ``checks``: neither is imported here, so editing them
re-runs nothing.
"""

from __future__ import annotations

import cProfile
import gc
import itertools
import multiprocessing
import pstats
import statistics
import warnings
from typing import Any, Callable, Iterable, Iterator

import torch
from torch import nn
from torch.overrides import TorchFunctionMode
from torch.nn import functional as F
from torch.utils.data import (BatchSampler, DataLoader, DistributedSampler, RandomSampler, SequentialSampler,
                              TensorDataset, default_collate)

from snippets.lab import experiment, pick_device, progress
from snippets.lab.timing import clock, contention, cpu_snapshot, interleaved, significant
from snippets.tensor_loader import BatchedTensorDataset, TensorLoader

from ..question import SimpleLinearModel

LOADER_NAMES = ("DataLoader", "DataLoader + BatchSampler", "DataLoader + BatchedTensorDataset", "TensorLoader",
                "hand-written loop")


# ---------------------------------------------------------------------------------------------------------
# The question's setting


def question_data(n: int = 1000, device: torch.device | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """The question's data, seeded as it seeds it: x evenly on [-10, 10], y = x² + noise."""
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(0)
        x = torch.linspace(-10, 10, n).unsqueeze(1)
        y = x**2 + torch.randn_like(x) * 10
    return x.to(device or "cpu"), y.to(device or "cpu")


def fresh_model(device: torch.device) -> tuple[nn.Module, torch.optim.Optimizer]:
    """The question's model and optimizer, from the same start every time."""
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(0)
        model = SimpleLinearModel().to(device)
    return model, torch.optim.Adam(model.parameters(), lr=0.01)


# --8<-- [start:loop]
def train_epoch(model: nn.Module, optimizer: torch.optim.Optimizer, batches: Iterable) -> torch.Tensor:
    """One epoch of the question's training loop; returns the last loss (detached: no device sync)."""
    for x_batch, y_batch in batches:
        optimizer.zero_grad()
        loss = F.mse_loss(model(x_batch), y_batch)  # the question's nn.MSELoss()
        loss.backward()
        optimizer.step()
    return loss.detach()
# --8<-- [end:loop]


# --8<-- [start:variants]
def question_loaders(x: torch.Tensor, y: torch.Tensor) -> dict[str, Iterable]:
    """The five ways to feed the question's loop its one full batch per epoch."""
    dataset = TensorDataset(x, y)
    n = len(dataset)
    return {
        "direct": [(x, y)],  # the tensors themselves: one batch, no loader
        "DataLoader": DataLoader(dataset, batch_size=n, shuffle=False),
        "DataLoader + BatchSampler": DataLoader(  # the sampler yields whole lists of indices
            dataset,
            sampler=BatchSampler(SequentialSampler(dataset), batch_size=n, drop_last=False),
            batch_size=None,  # no automatic batching: dataset[list_of_indices], once per batch
        ),
        "DataLoader + BatchedTensorDataset": DataLoader(  # the dataset fetches a whole batch: __getitems__
            BatchedTensorDataset(x, y), batch_size=n, shuffle=False, collate_fn=BatchedTensorDataset.collate),
        "TensorLoader": TensorLoader(x, y, batch_size=n),
    }
# --8<-- [end:variants]


# ---------------------------------------------------------------------------------------------------------
# The hand-written baselines: plain loops that yield the same batches as DataLoader


def sliced_batches(x: torch.Tensor, y: torch.Tensor, batch_size: int) -> Iterator[tuple]:
    """Sequential batches as views of the tensors, all made in one call each (``x.split(batch_size)``)."""
    yield from zip(x.split(batch_size), y.split(batch_size))


def shuffled_batches(x: torch.Tensor, y: torch.Tensor, batch_size: int,
                     generator: torch.Generator) -> Iterator[tuple]:
    """Shuffled batches as the page's two lines of torch make them — one gather of the whole epoch, then views of
    it (``x[perm].split(batch_size)``) — with DataLoader's random draws, so that the batches are DataLoader's."""
    torch.empty((), dtype=torch.int64).random_(generator=generator)  # DataLoader's base seed
    permutation = torch.randperm(len(x), generator=generator).to(x.device)
    yield from zip(x[permutation].split(batch_size), y[permutation].split(batch_size))
    torch.randperm(len(x), generator=generator)  # RandomSampler's second permutation


class HandWritten:
    """The baseline loops as a re-iterable loader, so they are timed the same way as the others."""

    def __init__(self, x: torch.Tensor, y: torch.Tensor, batch_size: int, shuffle: bool,
                 generator: torch.Generator) -> None:
        self.x, self.y, self.batch_size, self.shuffle, self.generator = x, y, batch_size, shuffle, generator

    def __iter__(self) -> Iterator[tuple]:
        if self.shuffle:
            return shuffled_batches(self.x, self.y, self.batch_size, self.generator)
        return sliced_batches(self.x, self.y, self.batch_size)


def make_loader(name: str, x: torch.Tensor, y: torch.Tensor, batch_size: int, shuffle: bool,
                seed: int = 0) -> Iterable:
    """One of ``LOADER_NAMES`` over (x, y), with its own seeded generator."""
    generator = torch.Generator().manual_seed(seed)
    dataset = TensorDataset(x, y)
    if name == "DataLoader":
        return DataLoader(dataset, batch_size=batch_size, shuffle=shuffle, generator=generator)
    if name == "DataLoader + BatchSampler":
        order = RandomSampler(dataset, generator=generator) if shuffle else SequentialSampler(dataset)
        return DataLoader(dataset, sampler=BatchSampler(order, batch_size, drop_last=False), batch_size=None,
                          generator=generator)  # the base seed comes from the same generator as the order
    if name == "DataLoader + BatchedTensorDataset":
        return DataLoader(BatchedTensorDataset(x, y), batch_size=batch_size, shuffle=shuffle, generator=generator,
                          collate_fn=BatchedTensorDataset.collate)
    if name == "TensorLoader":
        return TensorLoader(x, y, batch_size=batch_size, shuffle=shuffle, generator=generator)
    if name == "hand-written loop":
        return HandWritten(x, y, batch_size, shuffle, generator)
    raise ValueError(f"unknown loader {name!r}; choose one of {LOADER_NAMES}")


def consume(loader: Iterable) -> None:
    """Iterate over one epoch and drop every batch: the loader's own cost."""
    for _ in loader:
        pass


def _timing_row(label: str, timing: dict, **extra: Any) -> dict:
    """A timing as a result stores it: the summary, the rounds or blocks its uncertainty is computed from, and the
    share of the cores it needed that other programs took meanwhile (``contention``), which widens its intervals."""
    kept = ("median", "mean", "iqr", "min", "max", "blocks", "runs", "rounds", "samples", "contention",
            "busy_rounds_left_out", "drift_rounds_left_out", "drifted", "reference")
    return {"label": label, **{k: timing[k] for k in kept if k in timing}, **extra}


def check_rounds(rounds: int) -> None:
    """A paired ratio needs three rounds for an interval: refuse fewer before anything runs."""
    if rounds < 3:
        raise ValueError(f"rounds must be >= 3 (a ratio needs three rounds for an interval), got {rounds}")


def alternating(functions: dict[str, Callable[[], Any]], *, rounds: int, min_run_time: float,
                device: torch.device | None = None, kind: str = "cpu") -> dict[str, dict]:
    """``functions`` timed in alternation, one block per round after a warm-up call, every ratio paired round
    by round, ``rounds`` rounds (never more: how many does not depend on what was measured), on the ``kind`` of
    clock (``timing.clock``)."""
    check_rounds(rounds)
    return interleaved(functions, rounds=rounds, min_run_time=min_run_time, repeats=1, device=device, kind=kind)


# ---------------------------------------------------------------------------------------------------------
# 1. The question's timing, reproduced


@experiment(timing=True)
def question_timing(n: int = 1000, epochs: int = 2000, compared_epochs: int = 300, rounds: int = 6,
                    min_run_time: float = 0.4) -> dict:
    """The question's loop with five loaders, from one start: time per epoch and every epoch's loss.

    The five runs are timed in alternation over their first epochs: ``rounds`` rounds, ``min_run_time`` seconds
    per run in all, each run's epochs back to back as the question's loop runs them, the garbage collector on.
    Each then continues, untimed, to ``compared_epochs`` epochs, and the losses of every epoch and the weights
    after the last are compared bit for bit. ``epochs`` is the question's run length, used to scale the mean time
    per epoch: running the DataLoader variant for all 2000 epochs would take most of the page's time budget.
    """
    device = pick_device()
    x, y = question_data(n, device)
    losses: dict[str, list[torch.Tensor]] = {}
    weights: dict[str, torch.Tensor] = {}

    def run_of(name: str, batches: Iterable) -> Callable[[], None]:
        model, optimizer = fresh_model(device)
        history = losses.setdefault(name, [])

        def epoch() -> None:
            history.append(train_epoch(model, optimizer, batches))
            if len(history) == compared_epochs:
                weights[name] = torch.cat([p.detach().flatten() for p in model.parameters()]).cpu()

        return epoch

    epochs_of = {name: run_of(name, batches) for name, batches in question_loaders(x, y).items()}
    # Epochs of about a millisecond, in short blocks: many blocks, so medians and minimums are stable.
    timings = interleaved(epochs_of, rounds=rounds, min_run_time=min_run_time, block_time=0.002, device=device)
    rows = []
    for name, epoch in epochs_of.items():
        rows.append(_timing_row(name, timings[name], timed_epochs=len(losses[name])))
        for _ in progress(range(len(losses[name]), compared_epochs), f"question loop with {name}"):
            epoch()
    trajectories = {name: torch.stack(history[:compared_epochs]).cpu() for name, history in losses.items()}

    reference = "direct"
    same = {}
    for name in trajectories:
        bits = trajectories[name].view(torch.int32) == trajectories[reference].view(torch.int32)
        first = None if bool(bits.all()) else int((~bits).nonzero()[0])
        same[name] = {
            "losses_identical": first is None,
            "first_different_epoch": first,
            "weights_identical": torch.equal(weights[name].view(torch.int32), weights[reference].view(torch.int32)),
            "final_loss": float(trajectories[name][-1]),
        }
    return {"n": n, "epochs": epochs, "compared_epochs": compared_epochs, "device": str(device), "rows": rows,
            "same": same}


# ---------------------------------------------------------------------------------------------------------
# 2. Where the time goes


class CountingTensorDataset(TensorDataset):
    """A TensorDataset that counts how often it is indexed."""

    calls = 0

    def __getitem__(self, index):  # noqa: ANN001 - same signature as TensorDataset
        self.calls += 1
        return super().__getitem__(index)


# ---------------------------------------------------------------------------------------------------------
# Counted, not timed: what each loader does for one batch. Counts are exact on any machine, however busy.


class TorchCalls(TorchFunctionMode):
    """Counts the torch calls made inside it through torch's Python API: ``x[...]`` (``Tensor.__getitem__``: ``x[i]``,
    ``x[list]``, ``x[a:b]``; not ``index_select`` or ``split``), ``torch.stack``, and the tensors handed to it.

    ``x[...]`` is counted by a wrapper put on ``torch.Tensor.__getitem__`` while it is active: a function mode does
    not see it on every release (torch 2.3 indexes a tensor by an integer without consulting the mode)."""

    def __init__(self) -> None:
        super().__init__()
        self.indexing = self.stacks = self.stacked = 0

    def __enter__(self) -> "TorchCalls":
        had_own = "__getitem__" in vars(torch.Tensor)
        original = torch.Tensor.__getitem__

        def getitem(tensor: torch.Tensor, index: Any) -> Any:
            self.indexing += 1
            return original(tensor, index)

        def restore() -> None:
            if had_own:
                torch.Tensor.__getitem__ = original
            else:
                del torch.Tensor.__getitem__

        self._restore, self._getitem, self._original = restore, getitem, original
        torch.Tensor.__getitem__ = getitem
        return super().__enter__()

    def __exit__(self, *exc_info: Any) -> None:
        self._restore()
        super().__exit__(*exc_info)

    def __torch_function__(self, func, types, args=(), kwargs=None):  # noqa: ANN001 - torch's signature
        kwargs = kwargs or {}
        if func is self._getitem:  # a release that also hands x[...] to the mode: counted once, by the wrapper
            return self._original(*args, **kwargs)
        if func is torch.stack:
            self.stacks += 1
            self.stacked += len(args[0] if args else kwargs["tensors"])
        return func(*args, **kwargs)


@experiment()
def counts(n: int = 1000, epochs: int = 100) -> dict:
    """What each of the question's loaders does for its one full batch, counted: ``x[...]`` calls, ``torch.stack``
    calls and the tensors handed to them (one epoch, under ``TorchCalls``); and Python's garbage collections,
    by generation, over ``epochs`` loader-only epochs with the collector on, as it is in a training script
    (``gc.callbacks``). The collections also depend on the Python version, its thresholds (kept in the result)
    and, for generation 2, on how many objects the rest of the process holds."""
    x, y = question_data(n)
    rows = []
    was_enabled = gc.isenabled()
    gc.enable()
    try:
        for name, loader in question_loaders(x, y).items():
            with TorchCalls() as calls:
                batches = sum(1 for _ in loader)
            collections = [0] * 3

            def seen(phase: str, info: dict) -> None:
                if phase == "start":
                    collections[info["generation"]] += 1

            gc.collect()
            gc.callbacks.append(seen)
            try:
                for _ in range(epochs):
                    consume(loader)
            finally:
                gc.callbacks.remove(seen)
            rows.append({"label": name, "batches": batches, "indexing": calls.indexing, "stacks": calls.stacks,
                         "stacked": calls.stacked, "collections": collections})
    finally:
        if not was_enabled:
            gc.disable()
    return {"n": n, "epochs": epochs, "gc_threshold": list(gc.get_threshold()), "rows": rows}


INSIDE_STAGES = {
    "iterator": "iter(loader): create the iterator",
    "sampler": "sampler: the list of indices",
    "indexing": "dataset[i] for each of the N samples",
    "collate": "default_collate: stack the N samples",
    "remainder": "the rest: freeing the N samples, DataLoader's __next__ bookkeeping, the clock's own reads",
}
WHOLE_INSIDE = "the whole epoch, with the clock inside it"


class EpochClock:
    """Seconds spent in each stage of DataLoader epochs, read inside them (``clocked_loader``) on the clock
    ``timing.measure`` uses for ``device`` (``timing.clock``: this thread's CPU time, on the CPU)."""

    def __init__(self, device: torch.device | None = None) -> None:
        self.now = clock(device)
        self.spent = {key: 0.0 for key in INSIDE_STAGES if key != "remainder"}
        self.fetch_start = 0.0


class ClockedBatchSampler:
    """A batch sampler that times itself: from the request for the next list of indices to its delivery (the
    final, empty request included); the delivery starts the fetch's clock."""

    def __init__(self, inner: BatchSampler, clock: EpochClock) -> None:
        self.inner, self.clock = inner, clock

    def __len__(self) -> int:
        return len(self.inner)

    def __iter__(self) -> Iterator[list[int]]:
        batches, now = iter(self.inner), self.clock.now
        while True:
            start = now()
            try:
                batch = next(batches)
            except StopIteration:
                self.clock.spent["sampler"] += now() - start
                return
            self.clock.fetch_start = delivered = now()
            self.clock.spent["sampler"] += delivered - start
            yield batch


def clocked_loader(dataset: TensorDataset, batch_size: int, clock: EpochClock) -> DataLoader:
    """``DataLoader(dataset, batch_size=batch_size)`` as it builds itself (a BatchSampler over a SequentialSampler,
    default_collate), with ``clock`` read between its stages: the fetch's ``dataset[i]`` loop runs from the
    sampler's delivery to the collate function's call."""

    now = clock.now

    def collate(samples: list) -> Any:
        start = now()
        clock.spent["indexing"] += start - clock.fetch_start
        try:
            return default_collate(samples)
        finally:
            clock.spent["collate"] += now() - start

    sampler = ClockedBatchSampler(BatchSampler(SequentialSampler(dataset), batch_size, False), clock)
    return DataLoader(dataset, batch_sampler=sampler, collate_fn=collate)


def clocked_epochs(dataset: TensorDataset, batch_size: int, *, rounds: int, min_run_time: float,
                   device: torch.device | None = None) -> list[dict]:
    """Whole DataLoader epochs with the clock inside them, ``rounds`` rounds of back-to-back epochs (about
    ``min_run_time`` seconds in all, the garbage collector on): per round the mean time of an epoch and of each
    stage in it, the remainder being the whole minus the stages, so that they add up to the whole exactly."""
    clock = EpochClock(device)
    loader, now = clocked_loader(dataset, batch_size, clock), clock.now

    def epoch() -> float:
        start = now()
        iterator = iter(loader)
        clock.spent["iterator"] += now() - start
        for _ in iterator:
            pass
        return now() - start

    epoch()  # warm-up
    number = max(1, int(min_run_time / rounds / max(epoch(), 1e-9)))
    per_round: dict[str, list[float]] = {key: [] for key in [WHOLE_INSIDE, *INSIDE_STAGES]}
    before = cpu_snapshot(now)
    for _ in range(rounds):
        for key in clock.spent:
            clock.spent[key] = 0.0
        total = sum(epoch() for _ in range(number))
        per_round[WHOLE_INSIDE].append(total / number)
        for key, spent in clock.spent.items():
            per_round[key].append(spent / number)
        per_round["remainder"].append((total - sum(clock.spent.values())) / number)
    share = contention(before, cpu_snapshot(now))
    rows = []
    for key, values in per_round.items():
        quartiles = statistics.quantiles(values, n=4) if len(values) > 1 else [values[0]] * 3
        rows.append({"label": INSIDE_STAGES.get(key, key), "stage": key if key in INSIDE_STAGES else "whole",
                     "median": statistics.median(values), "mean": statistics.fmean(values),
                     "iqr": quartiles[2] - quartiles[0], "min": min(values), "max": max(values), "blocks": rounds,
                     "runs": rounds * number, "rounds": values, "contention": share})
    return rows


@experiment(timing=True)
def breakdown(n: int = 1000, rounds: int = 5, min_run_time: float = 0.3, inside_run_time: float = 1.0) -> dict:
    """One full-batch DataLoader epoch taken apart: calls counted, each stage timed, layout inspected.

    The stages are timed twice: inside real epochs (``clocked_epochs``, ``inside_run_time`` seconds: the parts add
    up to the whole; with the garbage collector on, its collections land in whichever stage they interrupt, as in
    training); three ways to get the batch's bytes (a clone, the stack DataLoader makes, views) are timed each on its
    own, in alternation with a whole epoch, ``rounds`` rounds (compared with the epoch and with each other); the two
    training steps likewise.
    """
    device = pick_device()
    x, y = question_data(n, device)

    # Calls, counted live.
    counting = CountingTensorDataset(x, y)
    collated: list[int] = []

    def counting_collate(samples: list) -> Any:
        collated.append(len(samples))
        return default_collate(samples)

    consume(DataLoader(counting, batch_size=n, collate_fn=counting_collate))
    per_sample_calls, collate_sizes = counting.calls, list(collated)
    counting.calls = 0
    consume(DataLoader(counting, sampler=BatchSampler(SequentialSampler(counting), n, False), batch_size=None))
    batch_sampler_calls = counting.calls

    # Layout and memory, inspected live.
    dataset = TensorDataset(x, y)
    loader = DataLoader(dataset, batch_size=n)
    x_batch, y_batch = next(iter(loader))
    t_batch, _ = next(iter(TensorLoader(x, y, batch_size=n)))
    layout = {
        "x_contiguous": x.is_contiguous(), "x_stride": list(x.stride()),
        "batch_contiguous": x_batch.is_contiguous(), "batch_stride": list(x_batch.stride()),
        "batch_shares_memory": x_batch.data_ptr() == x.data_ptr(),
        "batch_equal": torch.equal(x_batch, x) and torch.equal(y_batch, y),
        "tensorloader_shares_memory": t_batch.data_ptr() == x.data_ptr(),
        "batch_type": type(next(iter(loader))).__name__,
        "tensorloader_batch_type": type(next(iter(TensorLoader(x, y, batch_size=n)))).__name__,
        "bytes": x.numel() * x.element_size() + y.numel() * y.element_size(),
    }

    # Three ways to get the batch's bytes, each on its own (the stages of the epoch are timed inside it, below).
    samples = [dataset[i] for i in range(n)]
    x_rows, y_rows = [sample[0] for sample in samples], [sample[1] for sample in samples]
    views = TensorLoader(x, y, batch_size=n)

    # Timed in alternation with a whole epoch, so that the shares compare measurements made under the same
    # conditions.
    stages = {
        "whole epoch": lambda: consume(loader),
        "the copy alone: clone() of the same bytes": lambda: (x.clone(), y.clone()),
        "torch.stack of the N one-row tensors: the copy as default_collate makes it":
            lambda: (torch.stack(x_rows), torch.stack(y_rows)),
        "views instead of copies: a TensorLoader epoch (x[0:N], y[0:N])": lambda: consume(views),
    }
    timings = interleaved(stages, rounds=rounds, min_run_time=min_run_time, device=device)
    rows = [_timing_row(label, timings[label]) for label in stages]

    # Memory layout: a training step on the original tensors and on DataLoader's copy.
    def stepper(batch: list) -> Callable[[], torch.Tensor]:
        model, optimizer = fresh_model(device)
        return lambda: train_epoch(model, optimizer, batch)

    step_fns = {"training step on x, y": stepper([(x, y)]),
                "training step on DataLoader's batch": stepper([(x_batch, y_batch)])}
    # The same epoch with the clock inside it: stages that add up to the epoch they were timed in.
    inside = clocked_epochs(dataset, n, rounds=rounds, min_run_time=inside_run_time, device=device)

    step_timings = interleaved(step_fns, rounds=rounds, min_run_time=min_run_time, block_time=0.002, device=device)
    steps = [_timing_row(label, step_timings[label]) for label in step_fns]

    # One epoch under cProfile.
    profiler = cProfile.Profile()
    profiler.enable()
    consume(loader)
    profiler.disable()
    stats = pstats.Stats(profiler).stats  # type: ignore[attr-defined]
    entries = []
    for (filename, line, function), (_, ncalls, tottime, cumtime, _) in stats.items():
        entries.append({"function": _profile_name(filename, line, function), "calls": ncalls,
                        "own": significant(tottime), "cumulative": significant(cumtime)})
    entries.sort(key=lambda e: e["own"], reverse=True)
    profile_total = sum(e["own"] for e in entries)

    return {"n": n, "device": str(device), "torch": torch.__version__,
            # whether this torch's TensorDataset fetches a batch at once (pytorch#172003 proposes it)
            "tensor_dataset_getitems": hasattr(TensorDataset, "__getitems__"),
            "calls": {"getitem_per_epoch": per_sample_calls,
                                                      "collate_sizes": collate_sizes,
                                                      "batch_sampler_getitem_per_epoch": batch_sampler_calls},
            "layout": layout, "stages": rows, "inside": inside, "steps": steps,
            "profile": {"top": entries[:10], "total_own": profile_total,
                        "function_calls": sum(e["calls"] for e in entries)}}


@experiment(timing=True)
def strided_source(n: int = 1000, columns: int = 16, rounds: int = 5, min_run_time: float = 0.3) -> dict:
    """The layout the answer's "memory layout" meant: a source that is not contiguous.

    The question's x is contiguous already; here it is the first column of a ``columns``-wide table of features
    (x, x², then noise), a view whose values lie ``columns`` floats apart, as a column picked from a loaded table
    is. DataLoader's full batch of it and TensorLoader's are inspected; the operators one training step runs on
    each input are listed by ``torch.profiler`` (an extra copy to make the input contiguous would show there); and
    a training step on the strided column is timed in alternation with one on DataLoader's batch, each from the
    same initial weights, ``rounds`` rounds.
    """
    if columns < 2:
        raise ValueError(f"columns must be >= 2 (one column of a one-column table is contiguous), got {columns}")
    device = pick_device()
    x, y = question_data(n, device)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(1)
        noise = torch.randn(n, columns - 2)
    table = torch.cat([x, x**2, noise.to(device)], dim=1)
    column = table[:, :1]  # x again, as a strided view of the table
    batch_x, batch_y = next(iter(DataLoader(TensorDataset(column, y), batch_size=n)))
    view_x, _ = next(iter(TensorLoader(column, y, batch_size=n)))
    layout = {
        "column_contiguous": column.is_contiguous(), "column_stride": list(column.stride()),
        "column_equals_x": torch.equal(column, x),
        "batch_contiguous": batch_x.is_contiguous(), "batch_stride": list(batch_x.stride()),
        "batch_equal": torch.equal(batch_x, column) and torch.equal(batch_y, y),
        "batch_shares_memory": batch_x.data_ptr() == column.data_ptr(),
        "tensorloader_contiguous": view_x.is_contiguous(), "tensorloader_stride": list(view_x.stride()),
        "tensorloader_shares_memory": view_x.data_ptr() == column.data_ptr(),
    }

    def stepper(batch: list) -> Callable[[], torch.Tensor]:
        model, optimizer = fresh_model(device)
        return lambda: train_epoch(model, optimizer, batch)

    step_fns = {"training step on the strided column": stepper([(column, y)]),
                "training step on DataLoader's contiguous batch": stepper([(batch_x, batch_y)])}
    operators = {"column": step_operators(stepper([(column, y)])),
                 "batch": step_operators(stepper([(batch_x, batch_y)]))}
    timings = interleaved(step_fns, rounds=rounds, min_run_time=min_run_time, block_time=0.002, device=device)
    return {"n": n, "columns": columns, "device": str(device), "layout": layout, "operators": operators,
            "steps": [_timing_row(label, timings[label]) for label in step_fns]}


def step_operators(step: Callable[[], Any]) -> dict[str, int]:
    """The ATen operators one call of ``step`` runs (nested calls included), with how often each runs."""
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CPU]) as profiled:
        step()
    counts: dict[str, int] = {}
    for event in profiled.events():
        if event.name.startswith("aten::"):
            counts[event.name] = counts.get(event.name, 0) + 1
    return dict(sorted(counts.items()))


def _profile_name(filename: str, line: int, function: str) -> str:
    if filename == "~":
        return function.replace("<built-in method ", "").replace("<method ", "").rstrip(">")
    for marker in ("site-packages/", "snippets/"):
        if marker in filename:
            filename = filename.split(marker, 1)[1]
            break
    return f"{function} ({filename}:{line})"


# ---------------------------------------------------------------------------------------------------------
# 3. Scaling


@experiment(timing=True)
def batch_size_scaling(n: int = 10_000, batch_sizes: tuple[int, ...] = (10, 100, 1000, 10_000),
                       rounds: int = 5, min_run_time: float = 0.05) -> dict:
    """Time per epoch of every loader at every batch size, sequential and shuffled.

    At each batch size and order the five loaders are timed in alternation (``alternating``), so that every
    ratio is paired round by round and one slow round is outvoted.
    """
    check_rounds(rounds)
    device = pick_device()
    x, y = question_data(n, device)
    points = []
    grid = [(shuffle, size) for shuffle in (False, True) for size in batch_sizes]
    for shuffle, size in progress(grid, "loader epochs by batch size"):
        loaders = {name: make_loader(name, x, y, size, shuffle) for name in LOADER_NAMES}
        epochs = {name: (lambda loader=loader: consume(loader)) for name, loader in loaders.items()}
        timings = alternating(epochs, rounds=rounds, min_run_time=min_run_time, device=device)
        points += [_timing_row(name, timings[name], shuffle=shuffle, batch_size=size) for name in LOADER_NAMES]
    return {"n": n, "device": str(device), "batch_sizes": list(batch_sizes), "points": points}


@experiment(timing=True)
def size_scaling(sizes: tuple[int, ...] = (100, 1000, 10_000, 100_000),
                 per_sample_limit: int = 10_000, rounds: int = 5, min_run_time: float = 0.05) -> dict:
    """Time per epoch at full batch (one batch of all N samples), sequential and shuffled, as N grows.

    DataLoader indexes every sample on its own; it runs up to ``per_sample_limit`` samples only. At each N and
    order the loaders are timed in alternation, ``rounds`` rounds of one block each after a warm-up epoch, so
    that every ratio is paired round by round.
    """
    check_rounds(rounds)
    device = pick_device()
    points = []
    grid = [(shuffle, n) for shuffle in (False, True) for n in sizes]
    for shuffle, n in progress(grid, "loader epochs by dataset size"):
        x, y = question_data(n, device)
        names = [name for name in LOADER_NAMES if name != "DataLoader" or n <= per_sample_limit]
        loaders = {name: make_loader(name, x, y, n, shuffle=shuffle) for name in names}
        epochs = {name: (lambda loader=loader: consume(loader)) for name, loader in loaders.items()}
        timings = alternating(epochs, rounds=rounds, min_run_time=min_run_time, device=device)
        points += [_timing_row(name, timings[name], shuffle=shuffle, n=n) for name in names]
    return {"device": str(device), "sizes": list(sizes), "per_sample_limit": per_sample_limit, "points": points}


# ---------------------------------------------------------------------------------------------------------
# 4. When it matters


class WideMLP(nn.Module):
    """A larger model for comparison: 784 → 512 → 512 → 10 (an MNIST-sized MLP)."""

    def __init__(self) -> None:
        super().__init__()
        self.layers = nn.Sequential(nn.Linear(784, 512), nn.ReLU(), nn.Linear(512, 512), nn.ReLU(),
                                    nn.Linear(512, 10))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.layers(x)


@experiment(timing=True)
def step_share(batch_size: int = 128, batches: int = 16, rounds: int = 5, min_run_time: float = 0.3) -> dict:
    """Loader time per batch against one training step, for the question's MLP and a larger one.

    The step and the two loaders' epochs are timed in alternation, ``rounds`` rounds. Each row keeps the three
    timings (a loader's per epoch of ``batches`` batches) for the intervals of the shares.
    """
    device = pick_device()
    n = batch_size * batches
    generator = torch.Generator().manual_seed(0)
    setups = {
        "question's MLP 1→10→1, MSE": (SimpleLinearModel, *question_data(n, device), F.mse_loss),
        "MLP 784→512→512→10, cross-entropy": (
            WideMLP, torch.randn(n, 784, generator=generator).to(device),
            torch.randint(0, 10, (n,), generator=generator).to(device), F.cross_entropy),
    }
    rows = []
    for label, (model_class, x, y, loss_fn) in setups.items():
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(0)
            model = model_class().to(device)
        optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
        x_batch, y_batch = x[:batch_size], y[:batch_size]

        def step() -> None:
            optimizer.zero_grad()
            loss_fn(model(x_batch), y_batch).backward()
            optimizer.step()

        loaders = {name: make_loader(name, x, y, batch_size, shuffle=True) for name in ("DataLoader", "TensorLoader")}
        timed = {"step": step, **{name: (lambda loader=loader: consume(loader)) for name, loader in loaders.items()}}
        timings = interleaved(timed, rounds=rounds, min_run_time=min_run_time, repeats=3, device=device)
        rows.append({"model": label, "step": timings["step"]["median"],
                     **{name: timings[name]["median"] / batches for name in loaders},
                     "timings": {name: _timing_row(name, timings[name]) for name in timed}})
    return {"batch_size": batch_size, "batches": batches, "device": str(device), "rows": rows}


COMPILE_SETTINGS = (
    ("drop_last=False", {"drop_last": False}, {}),
    ("drop_last=True", {"drop_last": True}, {}),
    ("drop_last=False, mark_dynamic(x_batch, 0) on the first batch", {"drop_last": False}, {"mark_dynamic": True}),
    ("drop_last=False, torch.compile(dynamic=False)", {"drop_last": False}, {"dynamic": False}),
)


@experiment()
def compile_recompiles(n: int = 100, batch_size: int = 32, epochs: int = 3) -> dict:
    """How often ``torch.compile`` compiles the question's model when the last batch is shorter, by setting.

    The model is compiled with a backend that records every graph Dynamo hands it and runs it as it is (no
    Inductor: what is counted is Dynamo's compiling and recompiling, which does not depend on the backend, and the
    build stays fast). Each graph is listed with its inputs: a ``SymInt`` input is a dynamic size. If
    ``torch.compile`` cannot run here, the result says why instead.
    """
    x, y = question_data(n)
    settings = []
    try:
        for label, loader_options, compile_options in COMPILE_SETTINGS:
            torch._dynamo.reset()
            graphs: list[list[str]] = []

            def recording_backend(graph_module: torch.fx.GraphModule, example_inputs: list) -> Callable:
                graphs.append([str(tuple(t.shape)) if isinstance(t, torch.Tensor) else type(t).__name__
                               for t in example_inputs])
                return graph_module.forward

            model, _ = fresh_model(torch.device("cpu"))
            dynamic = {"dynamic": compile_options["dynamic"]} if "dynamic" in compile_options else {}
            compiled = torch.compile(model, backend=recording_backend, **dynamic)
            loader = DataLoader(TensorDataset(x, y), batch_size=batch_size, **loader_options)
            per_epoch = []
            for epoch in range(epochs):
                before = len(graphs)
                for index, (x_batch, y_batch) in enumerate(loader):
                    if compile_options.get("mark_dynamic") and epoch == 0 and index == 0:
                        torch._dynamo.mark_dynamic(x_batch, 0)
                    F.mse_loss(compiled(x_batch), y_batch).backward()
                per_epoch.append(len(graphs) - before)
            settings.append({"label": label, "compiles_per_epoch": per_epoch, "graphs": graphs,
                             "dynamic": ["SymInt" in inputs for inputs in graphs]})
    except Exception as error:  # noqa: BLE001 - any failure of torch.compile here is what the page reports
        return {"available": False, "error": f"{type(error).__name__}: {error}", "n": n, "batch_size": batch_size,
                "epochs": epochs, "settings": settings}
    finally:
        torch._dynamo.reset()
    return {"available": True, "error": None, "n": n, "batch_size": batch_size, "epochs": epochs,
            "settings": settings}


WORKER_CONFIGS = (
    ("num_workers=0", {}),
    ("num_workers=1", {"num_workers": 1}),
    ("num_workers=2", {"num_workers": 2}),
    ("num_workers=2, persistent_workers=True", {"num_workers": 2, "persistent_workers": True}),
)


@experiment(timing=True)
def workers(settings: tuple[tuple[int, int], ...] = ((1000, 1000), (10_000, 250)), rounds: int = 7,
            min_run_time: float = 0.2) -> dict:
    """DataLoader with worker processes over in-memory CPU tensors, against TensorLoader.

    At each setting (N, batch size) the four DataLoader settings and TensorLoader are timed in alternation
    (``alternating``), so that a busy moment slows them all and every ratio is paired round by round.
    Always on CPU tensors: CUDA tensors cannot be shared with forked workers, and in-memory CPU data is what
    worker processes are sold for.
    """
    check_rounds(rounds)
    rows = []
    for n, batch_size in progress(settings, "DataLoader workers"):
        x, y = question_data(n)
        dataset = TensorDataset(x, y)
        loaders: dict[str, Iterable] = {label: DataLoader(dataset, batch_size=batch_size, **options)
                                        for label, options in WORKER_CONFIGS}
        loaders["TensorLoader"] = TensorLoader(x, y, batch_size=batch_size)
        epochs = {label: (lambda loader=loader: consume(loader)) for label, loader in loaders.items()}
        # worker processes do the work: the wall clock, not this thread's CPU time
        timings = alternating(epochs, rounds=rounds, min_run_time=min_run_time, kind="wall")
        rows += [_timing_row(label, timings[label], n=n, batch_size=batch_size) for label in loaders]
        del loaders, epochs  # shuts the persistent workers down
        gc.collect()
    # how DataLoader starts its workers here: fork (Linux before Python 3.14), forkserver (Linux from 3.14) or
    # spawn (macOS, Windows), which pickles the dataset to every worker
    return {"settings": [list(s) for s in settings], "rows": rows, "threads": torch.get_num_threads(),
            "start_method": multiprocessing.get_start_method()}


def _accelerator() -> torch.device | None:
    """What DataLoader's pin_memory checks for (``torch.accelerator``, torch >= 2.6; CUDA before that)."""
    if hasattr(torch, "accelerator"):
        return torch.accelerator.current_accelerator() if torch.accelerator.is_available() else None
    return torch.device("cuda") if torch.cuda.is_available() else None


# --8<-- [start:overlap]
def prefetching_steps(source: torch.Tensor, weight: torch.Tensor, steps: int) -> None:
    """``steps`` training-like steps that copy the next batch on a side stream while the GPU computes on this one.

    The copy is asynchronous only from page-locked (pinned) memory; from ordinary pageable memory the driver
    stages it through a pinned buffer of its own and the host waits.
    """
    device = weight.device
    copy_stream = torch.cuda.Stream(device)
    with torch.cuda.stream(copy_stream):
        upcoming = source.to(device, non_blocking=True)
    for _ in range(steps):
        torch.cuda.current_stream(device).wait_stream(copy_stream)  # this batch has arrived
        batch = upcoming
        batch.record_stream(torch.cuda.current_stream(device))  # its memory is used on this stream
        with torch.cuda.stream(copy_stream):
            upcoming = source.to(device, non_blocking=True)  # the next batch, meanwhile
        (weight @ weight).sum() + batch.sum()  # the step's compute on this batch


def serial_steps(source: torch.Tensor, weight: torch.Tensor, steps: int, non_blocking: bool) -> None:
    """The same steps with every copy on the compute stream: copy, then compute, in stream order."""
    for _ in range(steps):
        batch = source.to(weight.device, non_blocking=non_blocking)
        (weight @ weight).sum() + batch.sum()
# --8<-- [end:overlap]


@experiment(timing=True)
def pin_memory(megabytes: int = 64, matmul_size: int = 4096, steps: int = 8, n: int = 1000,
               min_run_time: float = 0.2) -> dict:
    """What pin_memory is for: copies from host memory to an accelerator that overlap its compute.

    DataLoader's facts are recorded everywhere: whether ``pin_memory=True`` warns and pins. On CUDA, ``steps``
    steps that each bring a batch of ``megabytes`` MiB to the GPU and run a ``matmul_size``² matmul are timed
    (synchronised after each call of ``steps`` steps): the copy alone, the compute alone, copies on the compute
    stream from pageable and from pinned memory, and copies of the next batch on a side stream while the GPU
    computes, from pageable and from pinned memory. Elsewhere nothing is timed: no copy crosses to a device.
    """
    device = pick_device()
    accelerator = _accelerator()
    x, y = question_data(n)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        x_batch, _ = next(iter(DataLoader(TensorDataset(x, y), batch_size=n, pin_memory=True)))
    facts = {"device": str(device), "accelerator": str(accelerator) if accelerator else None,
             "torch": torch.__version__, "warnings": [str(w.message) for w in caught], "batch_is_pinned": x_batch.is_pinned(),
             "megabytes": megabytes, "matmul_size": matmul_size, "steps": steps}
    if device.type != "cuda":
        return {**facts, "rows": []}

    pageable = torch.full((megabytes * 2**20 // 4,), 1.0)
    pinned = pageable.pin_memory()
    weight = torch.randn(matmul_size, matmul_size, generator=torch.Generator().manual_seed(0)).to(device)
    variants = {
        "copy alone (pinned, non_blocking=True)":
            lambda: [pinned.to(device, non_blocking=True) for _ in range(steps)],
        "compute alone": lambda: [(weight @ weight).sum() for _ in range(steps)],
        "pageable, .to(device), then compute": lambda: serial_steps(pageable, weight, steps, False),
        "pinned, .to(device, non_blocking=True), then compute": lambda: serial_steps(pinned, weight, steps, True),
        "pageable, next batch copied on a side stream": lambda: prefetching_steps(pageable, weight, steps),
        "pinned, next batch copied on a side stream": lambda: prefetching_steps(pinned, weight, steps),
    }
    timings = interleaved(variants, rounds=5, min_run_time=min_run_time, device=device)
    return {**facts, "rows": [_timing_row(label, timings[label]) for label in variants]}


# ---------------------------------------------------------------------------------------------------------
# 5. The limit: memory bandwidth


@experiment(timing=True)
def bandwidth(megabytes: int = 64, widths: tuple[int, ...] = (16, 256, 4096), per_sample_limit: int = 65_536,
              batch_sampler_limit: int = 131_072, rounds: int = 5, min_run_time: float = 0.1) -> dict:
    """GB/s of a shuffled full batch from each loader, next to clone() of the same bytes.

    The dataset is one float32 tensor of ``megabytes`` MiB (more than a typical last-level cache), with
    rows of ``width`` floats. GB/s counts the bytes of the batch produced per second. At each width the
    variants are timed in alternation, ``rounds`` rounds of one block each after a warm-up call, so that each
    share of clone() is paired round by round.
    """
    check_rounds(rounds)
    device = pick_device()
    rows = []
    for width in progress(widths, "gather bandwidth"):
        count = megabytes * 2**20 // (4 * width)
        x = torch.full((count, width), 1.0, device=device)
        permutation = torch.randperm(count, generator=torch.Generator().manual_seed(0)).to(device)
        dataset = TensorDataset(x)
        target = torch.empty_like(x)
        variants: list[tuple[str, Callable[[], Any] | None]] = [
            ("copy_() into an existing tensor: no allocation", lambda: target.copy_(x)),
            ("clone(): copy, no gather", lambda: x.clone()),
            ("index_select with a fixed permutation: gather only", lambda: x.index_select(0, permutation)),
            ("TensorLoader, shuffle=True: permutation + gather",
             lambda: consume(TensorLoader(x, batch_size=count, shuffle=True))),
            ("DataLoader + BatchSampler, shuffled", None if count > batch_sampler_limit else
             lambda: consume(DataLoader(dataset, sampler=BatchSampler(RandomSampler(dataset), count, False),
                                        batch_size=None))),
            ("DataLoader, shuffle=True", None if count > per_sample_limit else
             lambda: consume(DataLoader(dataset, batch_size=count, shuffle=True))),
        ]
        timed = {label: fn for label, fn in variants if fn is not None}
        with torch.random.fork_rng(devices=[]):
            timings = alternating(timed, rounds=rounds, min_run_time=min_run_time, device=device)
        for label, fn in variants:
            if fn is None:
                rows.append({"label": label, "width": width, "rows": count, "median": None})
                continue
            rows.append(_timing_row(label, timings[label], width=width, rows=count,
                                    gbps=megabytes * 2**20 / timings[label]["median"] / 1e9))
        del x, target, permutation, dataset
    return {"megabytes": megabytes, "device": str(device), "widths": list(widths), "rows": rows,
            "per_sample_limit": per_sample_limit, "batch_sampler_limit": batch_sampler_limit}


# ---------------------------------------------------------------------------------------------------------
# The recipe's contract, checked at build time


def _epochs_and_states(loader: Iterable, generator: torch.Generator | None, epochs: int) -> list:
    out = []
    for _ in range(epochs):
        batches = [tuple(batch) for batch in loader]
        out.append((batches, torch.get_rng_state(), None if generator is None else generator.get_state()))
    return out


def _same_epochs(a: list, b: list) -> bool:
    for (batches_a, global_a, gen_a), (batches_b, global_b, gen_b) in zip(a, b, strict=True):
        if len(batches_a) != len(batches_b) or not torch.equal(global_a, global_b):
            return False
        if (gen_a is None) != (gen_b is None) or (gen_a is not None and not torch.equal(gen_a, gen_b)):
            return False
        for batch_a, batch_b in zip(batches_a, batches_b):
            if len(batch_a) != len(batch_b) or not all(
                    p.dtype == q.dtype and p.shape == q.shape and torch.equal(p, q) for p, q in zip(batch_a, batch_b)):
                return False
    return True


class SampleIndexingRefused(BatchedTensorDataset):
    """A BatchedTensorDataset whose ``dataset[i]`` raises, in the main process and in worker processes alike: a
    DataLoader over it that yields every batch never indexed one sample."""

    def __getitem__(self, index):  # noqa: ANN001 - same signature as TensorDataset
        raise AssertionError(f"dataset[{index!r}] was called")


def _dataloader_epochs(dataset: TensorDataset, generator: torch.Generator | None, epochs: int,
                       sampler: Any = None, **options: Any) -> list:
    """Every epoch's batches and RNG states from ``DataLoader(dataset, ...)``, with ``set_epoch`` before each epoch
    when the sampler has one; a BatchedTensorDataset gets its collate function."""
    if isinstance(dataset, BatchedTensorDataset):
        options["collate_fn"] = BatchedTensorDataset.collate
    loader = DataLoader(dataset, sampler=sampler, generator=generator, **options)
    out = []
    for epoch in range(epochs):
        if sampler is not None:
            sampler.set_epoch(epoch)
        out += _epochs_and_states(loader, generator, 1)
    return out


def _batched_dataset_agrees(x: torch.Tensor, y: torch.Tensor, seed: int, epochs: int, use_generator: bool,
                            sampler_of: Callable[[TensorDataset], Any] | None = None, **options: Any) -> bool:
    """DataLoader over TensorDataset(x, y) and over a BatchedTensorDataset (whose dataset[i] raises), with the
    same arguments and seeds: the same batches and RNG states after every epoch."""
    runs = []
    for dataset in (TensorDataset(x, y), SampleIndexingRefused(x, y)):
        torch.manual_seed(seed)
        generator = torch.Generator().manual_seed(seed + 1) if use_generator else None
        sampler = sampler_of(dataset) if sampler_of else None
        try:
            runs.append(_dataloader_epochs(dataset, generator, epochs, sampler, **options))
        except AssertionError:  # dataset[i] was called (DataLoader re-raises a worker's error as its own type)
            return False
    return _same_epochs(*runs)


WORKER_RNG_CONFIGS = (
    ("num_workers=0", {}),
    ("num_workers=2", {"num_workers": 2}),
    ("num_workers=2, persistent_workers=True", {"num_workers": 2, "persistent_workers": True}),
)


def worker_rng_use(epochs: int = 3) -> dict:
    """What ``iter(DataLoader)`` draws from the global RNG, by worker setting, against TensorLoader.

    ``advanced``: whether each epoch (``iter()`` and every batch, sequential) moved the global RNG. ``sampler_at_iter``:
    whether ``iter()`` of a shuffled loader already drew RandomSampler's seed — the state right after ``iter()``
    differs from a sequential loader's, whose ``iter()`` draws only the base seed.
    """
    x, y = torch.arange(12.0).unsqueeze(1), torch.arange(12)
    advanced, sampler_at_iter = {}, {}
    with torch.random.fork_rng(devices=[]):
        for label, options in WORKER_RNG_CONFIGS + (("TensorLoader", None),):
            def make(shuffle: bool) -> Iterable:
                if options is None:
                    return TensorLoader(x, y, batch_size=4, shuffle=shuffle)
                return DataLoader(TensorDataset(x, y), batch_size=4, shuffle=shuffle, **options)

            loader, moved = make(False), []
            torch.manual_seed(0)
            for _ in range(epochs):
                before = torch.get_rng_state()
                consume(loader)
                moved.append(not torch.equal(before, torch.get_rng_state()))
            advanced[label] = moved
            after_iter = []
            for shuffle in (False, True):
                torch.manual_seed(0)
                loader = make(shuffle)
                iterator = iter(loader)
                after_iter.append(torch.get_rng_state())
                del iterator, loader  # shuts its workers down
            sampler_at_iter[label] = not torch.equal(*after_iter)
            gc.collect()
    return {"epochs": epochs, "advanced": advanced, "sampler_at_iter": sampler_at_iter}


@experiment()
def contract(sizes: tuple[int, ...] = (1, 7, 64, 300), batch_sizes: tuple[int, ...] = (1, 3, 64, 1000),
             epochs: int = 2, world_sizes: tuple[int, ...] = (2, 3)) -> dict:
    """TensorLoader and DataLoader(BatchedTensorDataset) against DataLoader(TensorDataset): batches and RNG
    states over a grid of settings; for BatchedTensorDataset also DistributedSampler shards (every rank of
    each world size, ``set_epoch`` every epoch) and worker processes. Then what each worker setting draws."""
    combinations, batches, failures = 0, 0, []
    batched = {"combinations": 0, "failures": []}
    grid = list(itertools.product(sizes, batch_sizes, (False, True), (False, True), (False, True)))
    with torch.random.fork_rng(devices=[]):
        for n, size, shuffle, drop_last, use_generator in progress(grid, "TensorLoader contract"):
            x = torch.randn(n, 1, generator=torch.Generator().manual_seed(n))
            y = torch.arange(n * 3).view(n, 3)
            runs = []
            for make in (DataLoader, None):
                torch.manual_seed(combinations)
                generator = torch.Generator().manual_seed(combinations + 1) if use_generator else None
                options = dict(batch_size=size, shuffle=shuffle, drop_last=drop_last, generator=generator)
                loader = make(TensorDataset(x, y), **options) if make else TensorLoader(x, y, **options)
                runs.append(_epochs_and_states(loader, generator, epochs))
            setting = {"n": n, "batch_size": size, "shuffle": shuffle, "drop_last": drop_last,
                       "generator": use_generator}
            if not _batched_dataset_agrees(x, y, combinations, epochs, use_generator, batch_size=size,
                                           shuffle=shuffle, drop_last=drop_last):
                batched["failures"].append(setting)
            combinations += 1
            batches += sum(len(epoch[0]) for epoch in runs[0])
            if not _same_epochs(*runs):
                failures.append(setting)
        batched["combinations"] = combinations
        # DistributedSampler: every rank's shard, as each process of a distributed run would load it.
        n = max(sizes)
        x, y = torch.randn(n, 1, generator=torch.Generator().manual_seed(n)), torch.arange(n * 3).view(n, 3)
        shards = [(world, rank, shuffle, drop_last) for world in world_sizes for rank in range(world)
                  for shuffle in (False, True) for drop_last in (False, True)]
        for world, rank, shuffle, drop_last in progress(shards, "BatchedTensorDataset with DistributedSampler"):
            def sampler_of(dataset: TensorDataset) -> DistributedSampler:
                return DistributedSampler(dataset, num_replicas=world, rank=rank, shuffle=shuffle, seed=5,
                                          drop_last=drop_last)
            if not _batched_dataset_agrees(x, y, 0, epochs, False, sampler_of, batch_size=4):
                batched["failures"].append({"world_size": world, "rank": rank, "shuffle": shuffle,
                                            "drop_last": drop_last})
        # Worker processes: the batches come from dataset code run in other processes.
        workers = [(shuffle, persistent) for shuffle in (False, True) for persistent in (False, True)]
        for shuffle, persistent in progress(workers, "BatchedTensorDataset with worker processes"):
            if not _batched_dataset_agrees(x[:40], y[:40], 0, epochs, True, batch_size=6, shuffle=shuffle,
                                           num_workers=2, persistent_workers=persistent):
                batched["failures"].append({"num_workers": 2, "shuffle": shuffle, "persistent_workers": persistent})
        batched.update(distributed_shards=len(shards), world_sizes=list(world_sizes), worker_settings=len(workers))
        x, y = torch.randn(10, 1), torch.randn(10, 1)
        sequential = next(iter(TensorLoader(x, y, batch_size=4)))
        shuffled = next(iter(TensorLoader(x, y, batch_size=4, shuffle=True)))
        loaded = next(iter(DataLoader(TensorDataset(x, y), batch_size=4)))
    memory = {
        "sequential_is_view": sequential[0].data_ptr() == x.data_ptr(),
        "shuffled_is_copy": shuffled[0].untyped_storage().data_ptr() != x.untyped_storage().data_ptr(),
        "dataloader_is_copy": loaded[0].data_ptr() != x.data_ptr(),
        "tensorloader_type": type(sequential).__name__, "dataloader_type": type(loaded).__name__,
    }
    return {"combinations": combinations, "epochs": epochs, "batches": batches, "failures": failures,
            "batched": batched, "rng": worker_rng_use(), "memory": memory, "sizes": list(sizes),
            "batch_sizes": list(batch_sizes)}


def _shards_on_rank(rank: int, world_size: int, store: str, sizes: tuple[int, ...], batch_sizes: tuple[int, ...],
                    epochs: int, out: str) -> None:
    """One rank of a gloo group: TensorLoader(distributed=True) against DataLoader with a DistributedSampler, for
    every setting and epoch; then what an unsharded TensorLoader does in the group. Written to ``out`` as JSON."""
    import json

    torch.distributed.init_process_group("gloo", init_method=f"file://{store}", rank=rank, world_size=world_size)
    try:
        cases, batches, samples, failures = 0, 0, {}, []
        for n, size, shuffle, drop_last in itertools.product(sizes, batch_sizes, (False, True), (False, True)):
            x, ids = torch.randn(n, 2, generator=torch.Generator().manual_seed(n)), torch.arange(n)
            dataset = TensorDataset(x, ids)
            sampler = DistributedSampler(dataset, shuffle=shuffle, seed=7, drop_last=drop_last)
            reference = DataLoader(dataset, batch_size=size, sampler=sampler, drop_last=drop_last)
            ours = TensorLoader(x, ids, batch_size=size, shuffle=shuffle, drop_last=drop_last, seed=7,
                                distributed=True)
            cases += 1
            for epoch in range(epochs):
                sampler.set_epoch(epoch)
                ours.set_epoch(epoch)
                theirs, mine = list(reference), list(ours)
                batches += len(theirs)
                if len(theirs) != len(mine) or len(ours) != len(reference) or not all(
                        torch.equal(a, b) for p, q in zip(theirs, mine) for a, b in zip(p, q)):
                    failures.append(f"rank {rank}, N={n}, batch size {size}, shuffle={shuffle}, "
                                    f"drop_last={drop_last}, epoch {epoch}")
                if size == batch_sizes[-1] and not drop_last and epoch == 0:
                    samples[f"{n}, shuffle={shuffle}"] = sum(len(batch[1]) for batch in mine)
        try:
            TensorLoader(torch.zeros(8, 1), batch_size=4)
            refused = ""
        except RuntimeError as error:
            refused = str(error)
        whole = sum(len(batch[0]) for batch in TensorLoader(torch.zeros(8, 1), batch_size=4, distributed=False))
        with open(out, "w", encoding="utf-8") as handle:
            json.dump({"cases": cases, "batches": batches, "failures": failures, "samples": samples,
                       "refused": refused, "opted_out_samples": whole}, handle)
    finally:
        torch.distributed.destroy_process_group()


@experiment()
def distributed_shards(world_size: int = 4, sizes: tuple[int, ...] = (10, 13, 64),
                       batch_sizes: tuple[int, ...] = (1, 3, 16), epochs: int = 3) -> dict:
    """A ``world_size``-process gloo group on the CPU (each rank a fresh Python process, started with
    ``multiprocessing``'s spawn): on every rank, for every
    N, batch size, shuffle and drop_last, ``TensorLoader(..., distributed=True)`` against ``DataLoader`` with a
    ``DistributedSampler``, epoch after epoch with ``set_epoch``; then a TensorLoader not told to shard."""
    import json
    import multiprocessing
    import tempfile
    from pathlib import Path

    if world_size < 2:
        raise ValueError(f"world_size must be >= 2 for a distributed group, got {world_size}")
    with tempfile.TemporaryDirectory(prefix="pitfalls-gloo-") as folder:
        context = multiprocessing.get_context("spawn")
        ranks = [context.Process(target=_shards_on_rank, args=(rank, world_size, f"{folder}/store", sizes,
                                                                 batch_sizes, epochs, f"{folder}/{rank}.json"))
                 for rank in range(world_size)]
        for process in ranks:
            process.start()
        for process in ranks:
            process.join(timeout=600)
        codes = [process.exitcode for process in ranks]
        if any(code != 0 for code in codes):
            raise RuntimeError(f"a rank of the gloo group failed (exit codes {codes})")
        reports = [json.loads(Path(folder, f"{rank}.json").read_text(encoding="utf-8")) for rank in range(world_size)]
    return {"world_size": world_size, "epochs": epochs, "sizes": list(sizes), "batch_sizes": list(batch_sizes),
            "cases": reports[0]["cases"], "batches": sum(r["batches"] for r in reports),
            "failures": [failure for r in reports for failure in r["failures"]],
            "samples_per_rank": [r["samples"] for r in reports],
            "refused": [r["refused"] for r in reports], "opted_out_samples": [r["opted_out_samples"] for r in reports]}
