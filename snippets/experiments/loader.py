"""What the DataLoader-overhead page runs: the question's timing, where the time goes, scaling, limits.

Every function marked ``@experiment`` returns JSON; size settings are keyword arguments with the page's
full-size defaults (tests call them small). Renderers (``render_*``) are pure functions of a ``Result`` and
check the page's claims through ``claim``; the conditions behind each claim live in ``checks_*`` functions
so that tests assert the same conditions at small size.

Run ``python -m snippets.experiments.loader`` to print the main tables.
"""

from __future__ import annotations

import cProfile
import gc
import inspect
import itertools
import pstats
import statistics
import warnings
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Iterator

import torch
from torch import nn
from torch.nn import functional as F
from torch.utils.data import (BatchSampler, DataLoader, RandomSampler, SequentialSampler, TensorDataset,
                              default_collate)

from snippets.lab import Result, claim, experiment, measure, pick_device, progress
from snippets.lab.render import COLORS, new_figure, seconds, stamp_line, svg, table, timing_table
from snippets.tensor_loader import TensorLoader

from .question import SimpleLinearModel

LOADER_NAMES = ("DataLoader", "DataLoader + BatchSampler", "TensorLoader", "hand-written loop")
# TensorLoader's speed targets (checked strictly by benchmarks/tensor_loader_speed.py, reported by the page):
RATIO_TARGET = 1.2  # an epoch, against the cheapest hand-written loop yielding the same batches
SMALL_EPOCH = 50e-6  # ... except where that loop takes less than this per epoch:
SMALL_SLACK = 10e-6  # ... then at most this much slower
TRAINING_TARGET = 1.1  # the question's training loop, against training on the tensors directly


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
    """The four ways to feed the question's loop its one full batch per epoch."""
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
        "TensorLoader": TensorLoader(x, y, batch_size=n),
    }
# --8<-- [end:variants]


# ---------------------------------------------------------------------------------------------------------
# The hand-written baselines: the cheapest loops that yield the same batches


# --8<-- [start:baselines]
def sliced_batches(x: torch.Tensor, y: torch.Tensor, batch_size: int) -> Iterator[tuple]:
    """Sequential batches as slices (views) of the tensors."""
    for start in range(0, len(x), batch_size):
        end = start + batch_size
        yield x[start:end], y[start:end]


def shuffled_batches(x: torch.Tensor, y: torch.Tensor, batch_size: int,
                     generator: torch.Generator) -> Iterator[tuple]:
    """Shuffled batches with DataLoader's random draws and one index per batch."""
    torch.empty((), dtype=torch.int64).random_(generator=generator)  # DataLoader's base seed
    permutation = torch.randperm(len(x), generator=generator).to(x.device)
    for start in range(0, len(x), batch_size):
        index = permutation[start:start + batch_size]
        yield x.index_select(0, index), y.index_select(0, index)
    torch.randperm(len(x), generator=generator)  # RandomSampler's second permutation
# --8<-- [end:baselines]


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
    return {"label": label, **{k: timing[k] for k in ("median", "iqr", "min", "max", "blocks", "runs")}, **extra}


# ---------------------------------------------------------------------------------------------------------
# Checks: the conditions behind the page's claims, shared by renderers and tests


@dataclass(frozen=True)
class Check:
    key: str
    text: str
    holds: bool
    measured: Any


def _claims(checks: list[Check]) -> dict[str, str]:
    """Each check as a claim (failing the build if it does not hold), by key."""
    return {check.key: claim(check.text, check.holds, measured=check.measured) for check in checks}


def _checked(claims: Iterable[str]) -> str:
    return " ".join(f"Checked: {text}." for text in claims) + "\n"


# ---------------------------------------------------------------------------------------------------------
# 1. The question's timing, reproduced


def interleaved(functions: dict[str, Callable[[], Any]], *, rounds: int, min_run_time: float,
                block_time: float = 0.02, repeats: int = 3, device: torch.device | None = None) -> dict[str, dict]:
    """Time several functions in alternation, so that a slow moment on a shared machine hits them all.

    Each round runs ``measure`` on every function in turn; a function's median is the median of its rounds'
    medians, its IQR the median of its rounds' IQRs.
    """
    rounds_of = {name: [] for name in functions}
    for _ in range(rounds):
        for name, fn in functions.items():
            rounds_of[name].append(measure(fn, repeats=repeats, min_run_time=min_run_time / rounds,
                                           block_time=block_time, device=device))
    return {name: {"median": statistics.median(t["median"] for t in timings),
                   "iqr": statistics.median(t["iqr"] for t in timings),
                   "min": min(t["min"] for t in timings), "max": max(t["max"] for t in timings),
                   "blocks": sum(t["blocks"] for t in timings), "runs": sum(t["runs"] for t in timings)}
            for name, timings in rounds_of.items()}


@experiment(timing=True)
def question_timing(n: int = 1000, epochs: int = 2000, compared_epochs: int = 300, rounds: int = 10,
                    min_run_time: float = 0.5) -> dict:
    """The question's loop with four loaders, from one start: time per epoch and every epoch's loss.

    The four runs are timed in alternation (``rounds`` rounds, ``min_run_time`` seconds per run in all) over
    their first epochs; each then continues, untimed, to ``compared_epochs`` epochs, and the losses of every
    epoch and the weights after the last are compared bit for bit. ``epochs`` is the question's run length,
    used to scale the time per epoch: running the DataLoader variant for all 2000 epochs would take most of
    the page's time budget.
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


def checks_question_timing(value: dict) -> list[Check]:
    rows = {row["label"]: row for row in value["rows"]}
    ratio = rows["DataLoader"]["median"] / rows["direct"]["median"]
    identical = all(v["losses_identical"] and v["weights_identical"] for v in value["same"].values())
    return [
        Check("identical", f"all four runs give bitwise-identical losses at every one of the "
              f"{value['compared_epochs']:,} epochs compared, and bitwise-identical weights after them", identical,
              {k: (v["losses_identical"], v["weights_identical"]) for k, v in value["same"].items()}),
        Check("slower", "the DataLoader run takes more than 3× as long as training on the tensors directly",
              ratio > 3, f"{ratio:.1f}×"),
    ]


def render_question_timing(result: Result) -> str:
    value = result.value
    epochs = value["epochs"]
    total, loss = f"× {epochs:,} epochs", f"loss, epoch {value['compared_epochs']:,}"
    rows = [{**row, total: seconds(row["median"] * epochs), loss: f"{value['same'][row['label']]['final_loss']:.6g}"}
            for row in value["rows"]]
    claims = _claims(checks_question_timing(value))
    text = timing_table(result, rows, label="Loader", extra=(total, loss))
    return (f"Time per epoch, N = {value['n']:,}, one full batch:\n\n" + text + "\n"
            + _checked(claims.values()))


def question_ratios(result: Result) -> dict[str, float]:
    rows = {row["label"]: row["median"] for row in result.value["rows"]}
    return {name: rows[name] / rows["direct"] for name in rows}


# ---------------------------------------------------------------------------------------------------------
# 2. Where the time goes


class CountingTensorDataset(TensorDataset):
    """A TensorDataset that counts how often it is indexed."""

    calls = 0

    def __getitem__(self, index):  # noqa: ANN001 - same signature as TensorDataset
        self.calls += 1
        return super().__getitem__(index)


@experiment(timing=True)
def breakdown(n: int = 1000, rounds: int = 5, min_run_time: float = 0.3) -> dict:
    """One full-batch DataLoader epoch taken apart: calls counted, each stage timed, layout inspected."""
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

    # Each stage on its own.
    indices = list(range(n))
    samples = [dataset[i] for i in indices]

    # Timed in alternation, so that the shares compare measurements made under the same conditions.
    stages = {
        "whole epoch": lambda: consume(loader),
        "iter(loader): create the iterator": lambda: iter(loader),
        "sampler: the list of indices": lambda: list(BatchSampler(SequentialSampler(dataset), n, False)),
        "dataset[i] for each of the N samples": lambda: [dataset[i] for i in indices],
        "default_collate: stack the N samples": lambda: default_collate(samples),
        "the copy alone: clone() of the same bytes": lambda: (x.clone(), y.clone()),
    }
    timings = interleaved(stages, rounds=rounds, min_run_time=min_run_time, device=device)
    rows = [_timing_row(label, timings[label]) for label in stages]

    # Memory layout: a training step on the original tensors and on DataLoader's copy.
    def stepper(batch: list) -> Callable[[], torch.Tensor]:
        model, optimizer = fresh_model(device)
        return lambda: train_epoch(model, optimizer, batch)

    step_fns = {"training step on x, y": stepper([(x, y)]),
                "training step on DataLoader's batch": stepper([(x_batch, y_batch)])}
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
                        "own": tottime, "cumulative": cumtime})
    entries.sort(key=lambda e: e["own"], reverse=True)
    profile_total = sum(e["own"] for e in entries)

    return {"n": n, "device": str(device), "calls": {"getitem_per_epoch": per_sample_calls,
                                                      "collate_sizes": collate_sizes,
                                                      "batch_sampler_getitem_per_epoch": batch_sampler_calls},
            "layout": layout, "stages": rows, "steps": steps,
            "profile": {"top": entries[:10], "total_own": profile_total,
                        "function_calls": sum(e["calls"] for e in entries)}}


def _profile_name(filename: str, line: int, function: str) -> str:
    if filename == "~":
        return function.replace("<built-in method ", "").replace("<method ", "").rstrip(">")
    for marker in ("site-packages/", "snippets/"):
        if marker in filename:
            filename = filename.split(marker, 1)[1]
            break
    return f"{function} ({filename}:{line})"


def _stage(value: dict, prefix: str) -> float:
    return next(row["median"] for row in value["stages"] if row["label"].startswith(prefix))


def breakdown_shares(value: dict) -> dict[str, float]:
    epoch = _stage(value, "whole epoch")
    return {
        "iterator": _stage(value, "iter(") / epoch,
        "sampler": _stage(value, "sampler") / epoch,
        "indexing": _stage(value, "dataset[i]") / epoch,
        "collate": _stage(value, "default_collate") / epoch,
        "copy": _stage(value, "the copy") / epoch,
    }


def checks_breakdown(value: dict) -> list[Check]:
    n, calls, layout = value["n"], value["calls"], value["layout"]
    shares = breakdown_shares(value)
    return [
        Check("getitem", f"with automatic batching, one epoch calls dataset[i] {n:,} times — once per sample",
              calls["getitem_per_epoch"] == n, calls["getitem_per_epoch"]),
        Check("collate", f"default_collate receives one list of {n:,} samples per epoch",
              calls["collate_sizes"] == [n], calls["collate_sizes"]),
        Check("batch_sampler", "with a BatchSampler as sampler and batch_size=None, the dataset is indexed "
              "once per epoch, with the whole list of indices",
              calls["batch_sampler_getitem_per_epoch"] == 1, calls["batch_sampler_getitem_per_epoch"]),
        Check("fresh_copy", "the batch is a fresh contiguous copy: same values, its own memory",
              layout["batch_contiguous"] and layout["batch_equal"] and not layout["batch_shares_memory"],
              {k: layout[k] for k in ("batch_contiguous", "batch_equal", "batch_shares_memory")}),
        Check("layout", "x is already contiguous, with the same strides as the batch",
              layout["x_contiguous"] and layout["x_stride"] == layout["batch_stride"],
              (layout["x_stride"], layout["batch_stride"])),
        Check("views", "TensorLoader's sequential batch shares memory with x",
              layout["tensorloader_shares_memory"], layout["tensorloader_shares_memory"]),
        Check("iterator", "creating the iterator takes less than 5% of the epoch", shares["iterator"] < 0.05,
              f"{shares['iterator']:.2%}"),
        Check("copy", "copying the bytes takes less than 5% of the epoch", shares["copy"] < 0.05,
              f"{shares['copy']:.2%}"),
        Check("per_sample", "indexing the samples one at a time and stacking them take more than half of the epoch",
              shares["indexing"] + shares["collate"] > 0.5, f"{shares['indexing'] + shares['collate']:.0%}"),
    ]


def render_breakdown_calls(result: Result) -> str:
    claims = _claims(checks_breakdown(result.value))
    return "".join(f"- Checked: {claims[key]}.\n" for key in ("getitem", "collate", "batch_sampler"))


def render_breakdown(result: Result) -> str:
    value = result.value
    epoch = _stage(value, "whole epoch")
    rows = [[row["label"], seconds(row["median"]), seconds(row["iqr"]),
             f"{row['median'] / epoch:.1%}" if i else "100% (baseline)", row["blocks"]]
            for i, row in enumerate(value["stages"])]
    parts = sum(row["median"] for row in value["stages"][1:-1])
    text = table([f"Stage of one DataLoader epoch (N = {value['n']:,}, full batch)", "median", "IQR",
                  "share of the epoch", "blocks"], rows) + "\n" + stamp_line(result)
    return text + (f"\nIterator, sampler, indexing and collate add up to {seconds(parts)}, "
                   f"{parts / epoch:.0%} of the whole epoch (the copy happens inside the collate stage).\n")


def render_verdicts(result: Result) -> str:
    value = result.value
    claims = _claims(checks_breakdown(value))
    shares = breakdown_shares(value)
    layout, steps = value["layout"], {row["label"]: row for row in value["steps"]}
    stage = {prefix: _stage(value, prefix) for prefix in ("iter(", "the copy", "dataset[i]", "default_collate")}
    step_x = steps["training step on x, y"]["median"]
    step_batch = steps["training step on DataLoader's batch"]["median"]
    rows = [
        ["“Creating the iterator object” (创建迭代器对象)",
         f"{seconds(stage['iter('])} per epoch, {shares['iterator']:.2%} of it",
         f"True but negligible: {claims['iterator']}."],
        ["“Copying the tensors instead of using views” (复制张量而非视图)",
         f"{layout['bytes']:,} bytes; clone() takes {seconds(stage['the copy'])}, {shares['copy']:.2%}",
         f"True — {claims['fresh_copy']} — but cheap: {claims['copy']}."],
        ["“The default collate_fn adds function-call overhead” (collate_fn 的函数调用开销)",
         f"{seconds(stage['default_collate'])}, {shares['collate']:.0%}",
         f"Costly, but not as call overhead: {claims['collate']}, and stacks them."],
        ["“Memory layout: the batch may be made contiguous” (内存布局)",
         f"step on x: {seconds(step_x)}; on the batch: {seconds(step_batch)}",
         f"No effect: {claims['layout']}, so there is no layout to change."],
        ["Not in the answer: one dataset[i] per sample",
         f"{seconds(stage['dataset[i]'])}, {shares['indexing']:.0%}",
         f"The main cost: {claims['getitem']}; with the stacking, {claims['per_sample']}."],
    ]
    return table(["The answer's explanation", "Measured", "Verdict"], rows, align="lll") + "\n" + stamp_line(result)


def render_profile(result: Result) -> str:
    profile = result.value["profile"]
    rows = [[f"`{e['function']}`", f"{e['calls']:,}", seconds(e["own"]), f"{e['own'] / profile['total_own']:.0%}",
             seconds(e["cumulative"])] for e in profile["top"]]
    return (table(["Function", "calls", "own time", "share of own time", "cumulative"], rows)
            + f"\n{profile['function_calls']:,} Python-level calls in one epoch, "
              f"{seconds(profile['total_own'])} under cProfile (which slows every call down).\n\n"
            + stamp_line(result))


def render_fetcher_source() -> str:
    """The installed torch's map-style fetcher, printed from its source: what DataLoader does per batch."""
    from torch.utils.data._utils import fetch

    source = inspect.getsource(fetch._MapDatasetFetcher.fetch)
    return f"```python\n# torch/utils/data/_utils/fetch.py, torch {torch.__version__}\n{source.rstrip()}\n```\n"


# ---------------------------------------------------------------------------------------------------------
# 3. Scaling


@experiment(timing=True)
def batch_size_scaling(n: int = 10_000, batch_sizes: tuple[int, ...] = (1, 10, 100, 1000, 10_000),
                       repeats: int = 2, min_run_time: float = 0.05) -> dict:
    """Time per epoch of every loader at every batch size, sequential and shuffled.

    The DataLoader variants at 1000 or more batches per epoch take about a second an epoch; they are timed
    once after the warm-up epoch, to keep the page's build time in budget.
    """
    device = pick_device()
    x, y = question_data(n, device)
    points = []
    grid = [(shuffle, size, name) for shuffle in (False, True) for size in batch_sizes for name in LOADER_NAMES]
    for shuffle, size, name in progress(grid, "loader epochs by batch size"):
        loader = make_loader(name, x, y, size, shuffle)
        slow = name.startswith("DataLoader") and n // size >= 1000
        timing = measure(lambda: consume(loader), repeats=1 if slow else repeats, min_run_time=min_run_time,
                         device=device)
        points.append(_timing_row(name, timing, shuffle=shuffle, batch_size=size))
    return {"n": n, "device": str(device), "batch_sizes": list(batch_sizes), "points": points}


def _series(points: list[dict], name: str, shuffle: bool, key: str = "batch_size") -> tuple[list, list]:
    chosen = [p for p in points if p["label"] == name and p["shuffle"] == shuffle]
    return [p[key] for p in chosen], [p["median"] for p in chosen]


def _seconds_axis(ax) -> None:  # noqa: ANN001
    from matplotlib.ticker import FuncFormatter

    ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: seconds(v)))


def render_batch_size_scaling(result: Result) -> str:
    value = result.value
    fig, axes = new_figure("pair", ncols=2, sharey=True)
    for ax, shuffle in zip(axes, (False, True)):
        for color, marker, name in zip(COLORS, "osD^", LOADER_NAMES):
            sizes, times = _series(value["points"], name, shuffle)
            ax.plot(sizes, times, marker=marker, markersize=4, color=color, label=name)
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("batch size")
        ax.set_title("shuffle=True" if shuffle else "shuffle=False")
        _seconds_axis(ax)
    axes[0].set_ylabel(f"time per epoch (N = {value['n']:,})")
    axes[1].legend(fontsize=8)
    alt = (f"Log-log plot of time per epoch against batch size for N = {value['n']} samples: DataLoader stays "
           "far above TensorLoader and the hand-written loop at every batch size.")
    return svg(fig, result, alt=alt) + stamp_line(result)


def checks_batch_size_scaling(value: dict) -> list[Check]:
    worst = min(
        (dl / tl, size, shuffle)
        for shuffle in (False, True)
        for size, dl, tl in zip(value["batch_sizes"], _series(value["points"], "DataLoader", shuffle)[1],
                                _series(value["points"], "TensorLoader", shuffle)[1])
    )
    return [Check("every_size", "at every batch size, shuffled or not, DataLoader takes more than 2× as long as "
                  "TensorLoader", worst[0] > 2,
                  f"smallest ratio {worst[0]:.1f}× (batch size {worst[1]}, shuffle={worst[2]})")]


def render_batch_size_claims(result: Result) -> str:
    return _checked(_claims(checks_batch_size_scaling(result.value)).values())


def speed_targets(value: dict) -> list[dict]:
    """TensorLoader against the hand-written loop at each batch size: the benchmark's targets.

    Like the benchmark, it compares the fastest timed block of each: what the code costs when nothing else
    on the machine interferes.
    """
    rows = []
    for shuffle in (False, True):
        base = [p for p in value["points"] if p["label"] == "hand-written loop" and p["shuffle"] == shuffle]
        ours = [p for p in value["points"] if p["label"] == "TensorLoader" and p["shuffle"] == shuffle]
        for b, t in zip(base, ours):
            small = b["min"] < SMALL_EPOCH
            met = (t["min"] - b["min"] <= SMALL_SLACK) if small else (t["min"] / b["min"] <= RATIO_TARGET)
            rows.append({"shuffle": shuffle, "batch_size": b["batch_size"], "baseline": b["min"],
                         "tensorloader": t["min"], "ratio": t["min"] / b["min"],
                         "target": f"within {seconds(SMALL_SLACK)}" if small else f"≤ {RATIO_TARGET}×", "met": met})
    return rows


def render_speed_targets(result: Result, question: Result | None = None) -> str:
    rows = [["shuffled" if r["shuffle"] else "sequential", f"{r['batch_size']:,}", seconds(r["baseline"]),
             seconds(r["tensorloader"]), f"{r['ratio']:.2f}×", r["target"], "met" if r["met"] else "missed"]
            for r in speed_targets(result.value)]
    text = table(["order", "batch size", "hand-written loop", "TensorLoader", "ratio", "target", "this build"],
                 rows, align="lrrrrll")
    text += "\nTimes are the fastest timed block of each epoch measurement.\n"
    if question is not None:
        fastest = {row["label"]: row["min"] for row in question.value["rows"]}
        ratio = fastest["TensorLoader"] / fastest["direct"]
        text += (f"\nThe question's training loop with TensorLoader, fastest epoch against fastest epoch: "
                 f"{ratio:.3f}× the direct loop (target ≤ {TRAINING_TARGET}×: "
                 f"{'met' if ratio <= TRAINING_TARGET else 'missed'} in this build).\n")
    return text + "\n" + stamp_line(result)


@experiment(timing=True)
def size_scaling(sizes: tuple[int, ...] = (100, 1000, 10_000, 100_000, 1_000_000),
                 per_sample_limit: int = 100_000, repeats: int = 2, min_run_time: float = 0.05) -> dict:
    """Time per epoch at full batch (one batch of all N samples), sequential, as N grows.

    DataLoader indexes every sample on its own; it runs up to ``per_sample_limit`` samples only. Epochs of
    100,000 samples or more through a DataLoader variant are timed once after the warm-up epoch.
    """
    device = pick_device()
    points = []
    grid = [(n, name) for n in sizes for name in LOADER_NAMES if name != "DataLoader" or n <= per_sample_limit]
    for n, name in progress(grid, "loader epochs by dataset size"):
        x, y = question_data(n, device)
        loader = make_loader(name, x, y, n, shuffle=False)
        slow = name.startswith("DataLoader") and n >= 100_000
        timing = measure(lambda: consume(loader), repeats=1 if slow else repeats, min_run_time=min_run_time,
                         device=device)
        points.append(_timing_row(name, timing, shuffle=False, n=n))
    return {"device": str(device), "sizes": list(sizes), "per_sample_limit": per_sample_limit, "points": points}


def per_sample_costs(value: dict) -> dict[str, dict]:
    """Time per epoch divided by N, at the largest N each loader ran."""
    out = {}
    for name in LOADER_NAMES:
        ns, times = _series(value["points"], name, False, key="n")
        out[name] = {"n": ns[-1], "per_sample": times[-1] / ns[-1], "epoch": times[-1]}
    return out


def checks_size_scaling(value: dict) -> list[Check]:
    costs = per_sample_costs(value)
    dl, tl = costs["DataLoader"]["per_sample"], costs["TensorLoader"]["per_sample"]
    return [Check("per_sample", "DataLoader's time per sample is more than 100× TensorLoader's", dl / tl > 100,
                  f"{seconds(dl)} at N = {costs['DataLoader']['n']:,} vs {seconds(tl)} at "
                  f"N = {costs['TensorLoader']['n']:,}")]


def render_size_scaling(result: Result) -> str:
    value = result.value
    fig, ax = new_figure("wide")
    for color, marker, name in zip(COLORS, "osD^", LOADER_NAMES):
        ns, times = _series(value["points"], name, False, key="n")
        ax.plot(ns, times, marker=marker, markersize=4, color=color, label=name)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("N (samples, all in one batch)")
    ax.set_ylabel("time per epoch")
    _seconds_axis(ax)
    ax.legend(fontsize=8)
    alt = ("Log-log plot of time per full-batch epoch against dataset size: DataLoader grows linearly with N "
           "from far above the others; TensorLoader and the hand-written slices stay flat.")
    return svg(fig, result, alt=alt) + stamp_line(result)


def render_size_costs(result: Result) -> str:
    costs = per_sample_costs(result.value)
    rows = [[name, f"{c['n']:,}", seconds(c["epoch"]), seconds(c["per_sample"])] for name, c in costs.items()]
    claims = _claims(checks_size_scaling(result.value))
    return (table(["Loader", "largest N run", "epoch at that N", "time per sample (epoch / N)"], rows)
            + "\n" + stamp_line(result) + "\n" + _checked(claims.values()))


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
def step_share(batch_size: int = 128, batches: int = 16, rounds: int = 2, min_run_time: float = 0.3) -> dict:
    """Loader time per batch against one training step, for the question's MLP and a larger one.

    The step and the two loaders' epochs are timed in alternation, ``rounds`` rounds.
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
        timings = interleaved(timed, rounds=rounds, min_run_time=min_run_time, repeats=2, device=device)
        rows.append({"model": label, "step": timings["step"]["median"],
                     **{name: timings[name]["median"] / batches for name in loaders}})
    return {"batch_size": batch_size, "batches": batches, "device": str(device), "rows": rows}


def _share(row: dict, name: str) -> float:
    return row[name] / (row[name] + row["step"])


def checks_step_share(value: dict) -> list[Check]:
    tiny, wide = value["rows"]
    return [
        Check("tiny", "for the question's MLP, DataLoader's share of the step is more than 5× TensorLoader's",
              _share(tiny, "DataLoader") > 5 * _share(tiny, "TensorLoader"),
              f"{_share(tiny, 'DataLoader'):.1%} vs {_share(tiny, 'TensorLoader'):.1%}"),
        Check("wide", "for the larger MLP, DataLoader's share is smaller than for the question's",
              _share(wide, "DataLoader") < _share(tiny, "DataLoader"),
              f"{_share(wide, 'DataLoader'):.1%} vs {_share(tiny, 'DataLoader'):.1%}"),
        Check("tensorloader", "for the question's MLP, TensorLoader's share stays below 10%",
              _share(tiny, "TensorLoader") < 0.10, f"{_share(tiny, 'TensorLoader'):.1%}"),
    ]


def render_step_share(result: Result) -> str:
    value = result.value
    rows = [[r["model"], seconds(r["step"]), seconds(r["DataLoader"]), f"{_share(r, 'DataLoader'):.1%}",
             seconds(r["TensorLoader"]), f"{_share(r, 'TensorLoader'):.1%}"] for r in value["rows"]]
    claims = _claims(checks_step_share(value))
    return (table(["Model", "training step", "DataLoader per batch", "its share",
                   "TensorLoader per batch", "its share"], rows)
            + f"\nBatch size {value['batch_size']}, shuffled; share = loader time / (loader time + step time).\n\n"
            + stamp_line(result) + "\n" + _checked(claims.values()))


WORKER_CONFIGS = (
    ("num_workers=0", {}),
    ("num_workers=1", {"num_workers": 1}),
    ("num_workers=2", {"num_workers": 2}),
    ("num_workers=2, persistent_workers=True", {"num_workers": 2, "persistent_workers": True}),
)


@experiment(timing=True)
def workers(settings: tuple[tuple[int, int], ...] = ((1000, 1000), (10_000, 250)), repeats: int = 2,
            min_run_time: float = 0.1) -> dict:
    """DataLoader with worker processes over in-memory CPU tensors, against TensorLoader.

    Always on CPU tensors: CUDA tensors cannot be shared with forked workers, and in-memory CPU data is
    what worker processes are sold for.
    """
    rows = []
    for n, batch_size in settings:
        x, y = question_data(n)
        dataset = TensorDataset(x, y)
        for label, options in progress(WORKER_CONFIGS, f"DataLoader workers, N={n}"):
            loader = DataLoader(dataset, batch_size=batch_size, **options)
            timing = measure(lambda: consume(loader), repeats=repeats, min_run_time=min_run_time)
            rows.append(_timing_row(label, timing, n=n, batch_size=batch_size))
            del loader  # shuts persistent workers down
            gc.collect()
        loader = TensorLoader(x, y, batch_size=batch_size)
        timing = measure(lambda: consume(loader), repeats=repeats, min_run_time=min_run_time)
        rows.append(_timing_row("TensorLoader", timing, n=n, batch_size=batch_size))
    return {"settings": [list(s) for s in settings], "rows": rows, "threads": torch.get_num_threads()}


def _worker_rows(value: dict, n: int) -> dict[str, dict]:
    return {row["label"]: row for row in value["rows"] if row["n"] == n}


def checks_workers(value: dict) -> list[Check]:
    n_full = value["settings"][0][0]
    full = _worker_rows(value, n_full)
    base = full["num_workers=0"]["median"]
    fresh = min(full[label]["median"] for label in ("num_workers=1", "num_workers=2"))
    fastest_dl_anywhere = min(
        min(row["median"] for label, row in _worker_rows(value, n).items() if label != "TensorLoader")
        / _worker_rows(value, n)["TensorLoader"]["median"] for n, _ in value["settings"])
    return [
        Check("fresh_workers", f"at full batch (N = {n_full:,}), starting workers every epoch makes DataLoader "
              "more than 2× slower than num_workers=0", fresh / base > 2, f"{fresh / base:.1f}×"),
        Check("tensorloader", "in every setting TensorLoader beats the fastest DataLoader configuration by "
              "more than 5×", fastest_dl_anywhere > 5, f"{fastest_dl_anywhere:.0f}×"),
    ]


def render_workers(result: Result) -> str:
    value = result.value
    text = ""
    for n, batch_size in value["settings"]:
        rows = list(_worker_rows(value, n).values())
        batches = -(-n // batch_size)
        plural = "es" if batches > 1 else ""
        text += (f"**N = {n:,}, batch size {batch_size:,}** ({batches} batch{plural} per epoch)\n\n"
                 + timing_table(result, rows, label="Loader (time per epoch)") + "\n")
    best = []
    for n, batch_size in value["settings"]:
        rows = _worker_rows(value, n)
        label, row = min(((k, r) for k, r in rows.items() if k.startswith("num_workers=") and k != "num_workers=0"),
                         key=lambda item: item[1]["median"])
        best.append(f"with {-(-n // batch_size)} batch{'es' if n > batch_size else ''} per epoch, {label} at "
                    f"{row['median'] / rows['num_workers=0']['median']:.2f}× the time of num_workers=0")
    return (text + _checked(_claims(checks_workers(value)).values())
            + f"\nThe best worker setting in this build: {'; '.join(best)}.\n")


def _accelerator() -> torch.device | None:
    """What DataLoader's pin_memory checks for (``torch.accelerator``, torch >= 2.6; CUDA before that)."""
    if hasattr(torch, "accelerator"):
        return torch.accelerator.current_accelerator() if torch.accelerator.is_available() else None
    return torch.device("cuda") if torch.cuda.is_available() else None


@experiment(timing=True)
def pin_memory(n: int = 10_000, batch_size: int = 1000, min_run_time: float = 0.2) -> dict:
    """pin_memory needs an accelerator; without one, say what DataLoader does instead of timing it."""
    device = pick_device()
    accelerator = _accelerator()
    x, y = question_data(n)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        x_batch, _ = next(iter(DataLoader(TensorDataset(x, y), batch_size=batch_size, pin_memory=True)))
    facts = {"device": str(device), "accelerator": str(accelerator) if accelerator else None,
             "warnings": [str(w.message) for w in caught], "batch_is_pinned": x_batch.is_pinned()}
    if device.type == "cpu":
        return {**facts, "rows": []}

    def to_device(loader: Iterable, non_blocking: bool) -> Callable[[], None]:
        def epoch() -> None:
            for xb, yb in loader:
                xb.to(device, non_blocking=non_blocking), yb.to(device, non_blocking=non_blocking)
        return epoch

    dataset = TensorDataset(x, y)
    on_device = TensorLoader(x.to(device), y.to(device), batch_size=batch_size)
    variants = [
        ("DataLoader, then .to(device)", to_device(DataLoader(dataset, batch_size=batch_size), False)),
        ("DataLoader(pin_memory=True), then .to(device, non_blocking=True)",
         to_device(DataLoader(dataset, batch_size=batch_size, pin_memory=True), True)),
        ("TensorLoader on CPU tensors, then .to(device)", to_device(TensorLoader(x, y, batch_size=batch_size), False)),
        ("TensorLoader on tensors already on the device", lambda: consume(on_device)),
    ]
    rows = [_timing_row(label, measure(fn, min_run_time=min_run_time, device=device)) for label, fn in variants]
    return {**facts, "rows": rows}


def render_pin_memory(result: Result) -> str:
    value = result.value
    if not value["rows"]:
        if value["accelerator"] is None:
            said = value["warnings"][0] if value["warnings"] else "(no warning)"
            return (f"This build ran on `{value['device']}` and found no accelerator, so pinned memory was not "
                    f"timed: `DataLoader(pin_memory=True)` warns *“{said}”*, and its batch is pinned: "
                    f"`{value['batch_is_pinned']}`. Rebuild on a CUDA machine to fill this table.\n\n"
                    + stamp_line(result))
        return (f"This build's experiments ran on `{value['device']}` although `{value['accelerator']}` is "
                "available (`PITFALLS_DEVICE`), so pinned memory was not timed; `DataLoader(pin_memory=True)`'s "
                f"batch is pinned: `{value['batch_is_pinned']}`.\n\n" + stamp_line(result))
    return timing_table(result, value["rows"], label=f"Loader on {value['accelerator']} (time per epoch)")


# ---------------------------------------------------------------------------------------------------------
# 5. The limit: memory bandwidth


@experiment(timing=True)
def bandwidth(megabytes: int = 64, widths: tuple[int, ...] = (16, 256, 4096), per_sample_limit: int = 65_536,
              batch_sampler_limit: int = 131_072, repeats: int = 2, min_run_time: float = 0.1) -> dict:
    """GB/s of a shuffled full batch from each loader, next to clone() of the same bytes.

    The dataset is one float32 tensor of ``megabytes`` MiB (more than a typical last-level cache), with
    rows of ``width`` floats. GB/s counts the bytes of the batch produced per second.
    """
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
        for label, fn in variants:
            if fn is None:
                rows.append({"label": label, "width": width, "rows": count, "median": None})
                continue
            slow = label.startswith("DataLoader") and count >= 65_536  # about a second an epoch: timed once
            with torch.random.fork_rng(devices=[]):
                timing = measure(fn, repeats=1 if slow else repeats, min_run_time=min_run_time, device=device)
            rows.append(_timing_row(label, timing, width=width, rows=count,
                                    gbps=megabytes * 2**20 / timing["median"] / 1e9))
        del x, target, permutation, dataset
    return {"megabytes": megabytes, "device": str(device), "widths": list(widths), "rows": rows,
            "per_sample_limit": per_sample_limit, "batch_sampler_limit": batch_sampler_limit}


def _bandwidth_rows(value: dict, prefix: str) -> dict[int, dict]:
    return {r["width"]: r for r in value["rows"] if r["label"].startswith(prefix)}


def checks_bandwidth(value: dict) -> list[Check]:
    dataloader = {w: r for w, r in _bandwidth_rows(value, "DataLoader, shuffle").items() if r["median"]}
    ours = _bandwidth_rows(value, "TensorLoader")
    narrow, wide = min(dataloader), max(dataloader)
    share = {w: dataloader[w]["gbps"] / ours[w]["gbps"] for w in (narrow, wide)}
    return [
        Check("dataloader_narrow", f"with rows of {4 * narrow:,} bytes DataLoader reaches less than half of "
              "TensorLoader's throughput", share[narrow] < 0.5, f"{share[narrow]:.0%}"),
        Check("dataloader_wide", f"with rows of {4 * wide:,} bytes it gets closer to it",
              share[wide] > share[narrow], f"{share[wide]:.0%} vs {share[narrow]:.0%}"),
    ]


def render_bandwidth(result: Result) -> str:
    value = result.value
    clone = {r["width"]: r["gbps"] for r in value["rows"] if r["label"].startswith("clone")}
    rows = []
    for r in value["rows"]:
        shape = f"{r['rows']:,} × {r['width']:,}"
        if r["median"] is None:
            per_sample = r["label"].startswith("DataLoader, shuffle")
            limit = value["per_sample_limit"] if per_sample else value["batch_sampler_limit"]
            rows.append([shape, r["label"], "not run", f"more than {limit:,} rows", ""])
        else:
            rows.append([shape, r["label"], seconds(r["median"]), f"{r['gbps']:.2f}",
                         f"{r['gbps'] / clone[r['width']]:.0%}"])
    claims = _claims(checks_bandwidth(value))
    ours = _bandwidth_rows(value, "TensorLoader")
    reached = ", ".join(f"{ours[w]['gbps'] / clone[w]:.0%} with rows of {4 * w:,} bytes" for w in sorted(ours))
    return (table([f"rows × floats ({value['megabytes']} MiB)", "what", "median", "GB/s", "of clone()"], rows,
                  align="llrrr")
            + "\n" + stamp_line(result) + "\n" + _checked(claims.values())
            + f"\nTensorLoader's shuffled epoch ran at {reached} of the speed of `clone()`.\n")


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


@experiment()
def contract(sizes: tuple[int, ...] = (1, 7, 64, 300), batch_sizes: tuple[int, ...] = (1, 3, 64, 1000),
             epochs: int = 2) -> dict:
    """TensorLoader against DataLoader(TensorDataset): batches and RNG states over a grid of settings."""
    combinations, batches, failures = 0, 0, []
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
            combinations += 1
            batches += sum(len(epoch[0]) for epoch in runs[0])
            if not _same_epochs(*runs):
                failures.append({"n": n, "batch_size": size, "shuffle": shuffle, "drop_last": drop_last,
                                 "generator": use_generator})
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
            "memory": memory, "sizes": list(sizes), "batch_sizes": list(batch_sizes)}


def checks_contract(value: dict) -> list[Check]:
    memory = value["memory"]
    return [
        Check("same", f"over {value['combinations']} combinations of N, batch size, shuffle, drop_last and "
              f"generator, {value['epochs']} epochs each ({value['batches']:,} batches from each loader), "
              "TensorLoader yields DataLoader's batches and leaves the global RNG and the generator in "
              "DataLoader's state after every epoch", not value["failures"], value["failures"] or "no failure"),
        Check("views", "a sequential batch is a view that shares the input's memory",
              memory["sequential_is_view"], memory["sequential_is_view"]),
        Check("copies", "a shuffled batch, like every DataLoader batch, is a copy",
              memory["shuffled_is_copy"] and memory["dataloader_is_copy"],
              (memory["shuffled_is_copy"], memory["dataloader_is_copy"])),
    ]


def render_contract(result: Result) -> str:
    claims = _claims(checks_contract(result.value))
    memory = result.value["memory"]
    return (f"- Checked: {claims['same']}.\n- Checked: {claims['views']}; {claims['copies']}.\n"
            f"- A batch is a `{memory['tensorloader_type']}` from TensorLoader and a `{memory['dataloader_type']}` "
            "from DataLoader: unpacking (`for x_batch, y_batch in loader`) works the same.\n")


def render_takeaways(question: Result, parts: Result, share: Result, scaling: Result, workers_: Result) -> str:
    ratios = question_ratios(question)
    n_full = workers_.value["settings"][0][0]
    full = _worker_rows(workers_.value, n_full)
    fastest_workers = min(r["median"] for k, r in full.items() if k.startswith("num_workers=") and k != "num_workers=0")
    shares = breakdown_shares(parts.value)
    costs = per_sample_costs(scaling.value)
    tiny, wide = share.value["rows"]
    return f"""!!! success "Takeaways"

    - On in-memory tensors, `DataLoader(TensorDataset(...))` builds each batch one sample at a time:
      {parts.value['n']:,} `dataset[i]` calls and a `torch.stack` of {parts.value['n']:,} pieces per full batch.
      That took {shares['indexing'] + shares['collate']:.0%} of the epoch here, about
      {seconds(costs['DataLoader']['per_sample'])} per sample; creating the iterator took {shares['iterator']:.2%}
      and copying the bytes {shares['copy']:.2%}.
    - The question's full-batch run: DataLoader {ratios['DataLoader']:.1f}× the direct loop's time,
      a BatchSampler as sampler {ratios['DataLoader + BatchSampler']:.1f}×, TensorLoader
      {ratios['TensorLoader']:.2f}× — with bitwise-identical losses.
    - It matters when the model is small: DataLoader was {_share(tiny, 'DataLoader'):.0%} of a step of the
      question's MLP and {_share(wide, 'DataLoader'):.1%} of a step of a 784→512→512→10 MLP.
    - Worker processes do not remove the per-sample work, they move it to other processes, and starting
      them every epoch costs more than it saves: at full batch the fastest worker setting took
      {fastest_workers / full['num_workers=0']['median']:.1f}× the time of `num_workers=0`, and
      {fastest_workers / full['TensorLoader']['median']:,.0f}× TensorLoader's. `pin_memory` only matters when
      batches move to an accelerator.
    - To keep a seeded run identical, swap in TensorLoader: same batches, same order, same random draws.
"""


if __name__ == "__main__":
    from snippets.lab import run

    print(render_question_timing(run(question_timing)))
    result = run(breakdown)
    print(render_breakdown(result))
    print(render_verdicts(result))
    print(render_step_share(run(step_share)))
    print(render_workers(run(workers)))
