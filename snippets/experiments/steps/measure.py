"""Update-step counts, the measurements: what batch size changes at a fixed epoch budget, on the second question.

Only this module (with the question's setup in ``question``, the recipe ``step_budget`` and the lab) keys the
result cache; drawing and tables are in ``figures``, the conditions behind the page's claims in ``checks``.
"""

from __future__ import annotations

import json
import math
import os
import sys
import tempfile
import time
from datetime import timedelta
from pathlib import Path
from typing import Callable, Iterator

import torch
import torch.nn.functional as F
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

from snippets.lab import experiment, pick_device, progress
from snippets.lab.timing import drawn_only, interleaved
from snippets.step_budget import epochs_for_steps, scaler_stepped, steps_per_epoch, total_steps

from .question import LR, N_SAMPLES, SEED, Net, initial_states, make_data

# --------------------------------------------------------------------------------------------------------------
# Training the question's model


def _model(state: dict, device: torch.device) -> Net:
    with torch.random.fork_rng(devices=[]):  # construction draws weights; keep the caller's stream untouched
        model = Net()
    model.load_state_dict(state)
    return model.to(device)


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def full_loss(model: nn.Module, x: torch.Tensor, y: torch.Tensor) -> float:
    """The true training objective: MSE over every sample at the current weights."""
    with torch.no_grad():
        return F.mse_loss(model(x), y).item()


def batch_indices(n_samples: int, batch_size: int, order: str,
                  generator: torch.Generator | None = None) -> Iterator[slice | torch.Tensor]:
    """One epoch of batches: what ``DataLoader(..., shuffle=False)`` yields (``"sequential"``), or a fresh
    permutation from ``generator`` (``"shuffled"``). The short last batch is kept, as the loader keeps it."""
    if order == "sequential":
        for start in range(0, n_samples, batch_size):
            yield slice(start, min(start + batch_size, n_samples))
    elif order == "shuffled":
        permutation = torch.randperm(n_samples, generator=generator)
        for start in range(0, n_samples, batch_size):
            yield permutation[start:start + batch_size]
    else:
        raise ValueError(f"order must be 'sequential' or 'shuffled', got {order!r}")


def train(state: dict, x: torch.Tensor, y: torch.Tensor, *, batch_size: int, epochs: int, lr: float = LR,
          order: str = "sequential", shuffle_seed: int = 0, checkpoints: set[int] | None = None,
          predict_at: set[int] = frozenset(), predict_index: torch.Tensor | None = None,
          inspect: Callable[[int, nn.Module], None] | None = None) -> dict:
    """Train a copy of ``state`` with the question's loop; record the full-dataset loss at ``checkpoints``.

    Batches are sliced from the tensors (the same batches a ``DataLoader`` over a ``TensorDataset`` yields,
    without its per-sample overhead). ``seconds`` is training time only: evaluations are not timed;
    ``epoch_seconds`` is the training time of each epoch, the repeats a time per step is bootstrapped over. The
    trained model is returned under ``"model"`` for callers that need it (it is not part of any result).
    ``inspect(step, model)`` is called at each checkpoint (step 0 included when listed), untimed; it may use the
    model's ``.grad`` (every step clears it first) but must not change its weights.
    """
    device = x.device
    model = _model(state, device)
    opt = torch.optim.Adam(model.parameters(), lr=lr)
    generator = torch.Generator().manual_seed(shuffle_seed)
    n = len(x)
    checkpoints = checkpoints if checkpoints is not None else set()
    step = samples = 0
    seconds = 0.0
    epoch_seconds: list[float] = []
    records = [{"step": 0, "samples": 0, "seconds": 0.0, "loss": full_loss(model, x, y)}]
    if inspect is not None and 0 in checkpoints:
        inspect(0, model)
    predictions: dict[str, list[float]] = {}
    for _ in range(epochs):
        before = seconds
        _sync(device)
        start = time.perf_counter()
        for index in batch_indices(n, batch_size, order, generator):
            if isinstance(index, torch.Tensor):
                index = index.to(device)
            x_batch, y_batch = x[index], y[index]
            opt.zero_grad()
            loss = F.mse_loss(model(x_batch), y_batch)
            loss.backward()
            opt.step()
            step += 1
            samples += len(x_batch)
            if step in checkpoints or step in predict_at:
                _sync(device)
                seconds += time.perf_counter() - start
                if step in checkpoints:
                    records.append({"step": step, "samples": samples, "seconds": seconds,
                                    "loss": full_loss(model, x, y)})
                    if inspect is not None:
                        inspect(step, model)
                if step in predict_at:
                    with torch.no_grad():
                        predictions[str(step)] = model(x[predict_index]).squeeze(1).tolist()
                _sync(device)
                start = time.perf_counter()
        _sync(device)
        seconds += time.perf_counter() - start
        epoch_seconds.append(seconds - before)
    return {"records": records, "steps": step, "samples": samples, "seconds": seconds, "epoch_seconds": epoch_seconds,
            "final_loss": full_loss(model, x, y), "predictions": predictions, "model": model}


def _geometric_steps(total: int, count: int = 30) -> set[int]:
    if total < 1:
        return set()
    return {max(1, min(total, round(total ** (i / (count - 1))))) for i in range(count)} | {total}


# --------------------------------------------------------------------------------------------------------------
# 1. Step arithmetic


@experiment()
def step_arithmetic(n_samples: int = N_SAMPLES, batch_sizes: tuple[int, ...] = (64, 500, 512, 1000, 2048, 3000, 10_000),
                    epochs: int = 20, full_epochs: int = 400, print_every: int = 50) -> dict:
    """Steps per epoch from the formula, beside ``len(DataLoader)`` and the batches a real loader yields."""
    dataset = TensorDataset(torch.arange(n_samples))
    rows = []
    with torch.random.fork_rng(devices=[]):  # iterating a loader draws from the global stream
        for batch_size in batch_sizes:
            row: dict = {"batch_size": batch_size}
            for drop_last in (False, True):
                loader = DataLoader(dataset, batch_size=batch_size, shuffle=False, drop_last=drop_last)
                sizes = [len(batch) for (batch,) in loader]
                key = "drop" if drop_last else "keep"
                row[key] = {
                    "formula": n_samples // batch_size if drop_last else math.ceil(n_samples / batch_size),
                    "recipe": steps_per_epoch(n_samples, batch_size, drop_last=drop_last),
                    "len_loader": len(loader),
                    "batches_yielded": len(sizes),
                    "last_batch": sizes[-1] if sizes else 0,
                    "samples_seen": sum(sizes),
                    "total_steps": total_steps(n_samples, batch_size, epochs, drop_last=drop_last),
                }
            rows.append(row)
    by_batch = {row["batch_size"]: row for row in rows}
    question = {
        "answer_per_epoch": n_samples // 512,                     # the answer's "10000//512 ≈ 19"
        "answer_total": (n_samples // 512) * epochs,               # its "about 380 updates"
        "steps_512": total_steps(n_samples, 512, epochs),
        "steps_full_20": total_steps(n_samples, n_samples, epochs),
        "steps_full_400": total_steps(n_samples, n_samples, full_epochs),
        "epochs_full_to_match": epochs_for_steps(total_steps(n_samples, 512, epochs), n_samples, n_samples),
        # The question prints when (epoch + 1) % 50 == 0: how many lines does each run print?
        "printed_lines_512": sum((e + 1) % print_every == 0 for e in range(epochs)),
        "printed_lines_full": sum((e + 1) % print_every == 0 for e in range(full_epochs)),
    } if 512 in by_batch and n_samples in by_batch else {}
    return {"n_samples": n_samples, "epochs": epochs, "full_epochs": full_epochs, "print_every": print_every,
            "rows": rows, "question": question}


# --------------------------------------------------------------------------------------------------------------
# 2. Curves: loss against epochs, steps, samples and wall-clock



@experiment()
def curves(n_samples: int = N_SAMPLES, batch_sizes: tuple[int, ...] = (64, 512, 2048, 10_000), epochs: int = 20,
           min_steps: int = 400, orders: tuple[str, ...] = ("sequential", "shuffled"), lr: float = LR,
           seed: int = SEED, shuffle_seed: int = 0, equal_steps: tuple[int, ...] = (20, 100, 400),
           fit_points: int = 201,
           other_starts: tuple[tuple[int, int], ...] = ((0, 1), (1, 2), (2, 3), (3, 4))) -> dict:
    """Every batch size from the same initial weights, for max(``epochs`` epochs, ``min_steps`` steps).

    The full batch is the same computation in any order, so its run is shared by all orders. The same runs again
    from each of ``other_starts`` (seed of the weights, seed of the shuffling), losses kept at the marks the
    claims read only: a claim about the curves must hold from every start, not from one.
    """
    device = pick_device()
    x, y = make_data(n_samples, device)
    init, _ = initial_states(seed, n_samples=n_samples)
    predict_index = torch.linspace(0, n_samples - 1, min(fit_points, n_samples)).round().long().to(device)
    plan = [(order, b) for order in orders for b in batch_sizes if not (b >= n_samples and order != orders[0])]
    runs = []
    for order, batch_size in progress(plan, "steps: curves"):
        per_epoch = steps_per_epoch(n_samples, batch_size)
        run_epochs = max(epochs, epochs_for_steps(min_steps, n_samples, batch_size))
        total = run_epochs * per_epoch
        marks = {per_epoch, epochs * per_epoch, min_steps, *equal_steps} & set(range(1, total + 1))
        checkpoints = _geometric_steps(total) | marks
        out = train(init, x, y, batch_size=batch_size, epochs=run_epochs, lr=lr, order=order,
                    shuffle_seed=shuffle_seed, checkpoints=checkpoints,
                    predict_at={epochs * per_epoch, min_steps} & set(range(1, total + 1)),
                    predict_index=predict_index)
        runs.append({"order": order, "batch_size": batch_size, "steps_per_epoch": per_epoch, "epochs": run_epochs,
                     "shared": False, "records": out["records"], "steps": out["steps"],
                     "samples": out["samples"],
                     "predictions": {step: drawn_only(values) for step, values in out["predictions"].items()}})
    _share_full_batch(runs, orders, n_samples)
    others = []
    for weights_seed, shuffling_seed in progress(other_starts, "steps: curves from other starts"):
        start, _ = initial_states(weights_seed, n_samples=n_samples)
        start_runs = []
        for order, batch_size in plan:
            per_epoch = steps_per_epoch(n_samples, batch_size)
            run_epochs = max(epochs, epochs_for_steps(min_steps, n_samples, batch_size))
            marks = {per_epoch, epochs * per_epoch, min_steps, *equal_steps} & set(range(1, run_epochs * per_epoch + 1))
            out = train(start, x, y, batch_size=batch_size, epochs=run_epochs, lr=lr, order=order,
                        shuffle_seed=shuffling_seed, checkpoints=marks)
            start_runs.append({"order": order, "batch_size": batch_size, "steps_per_epoch": per_epoch,
                               "epochs": run_epochs, "shared": False, "records": out["records"]})
        _share_full_batch(start_runs, orders, n_samples)
        others.append({"seed": weights_seed, "shuffle_seed": shuffling_seed, "runs": start_runs})
    with torch.no_grad():
        fit_x = drawn_only(x[predict_index].squeeze(1).tolist())
    return {"n_samples": n_samples, "epochs": epochs, "min_steps": min_steps, "orders": list(orders),
            "batch_sizes": list(batch_sizes), "equal_steps": list(equal_steps), "lr": lr, "runs": runs,
            "seed": seed, "shuffle_seed": shuffle_seed, "others": others, "fit_x": fit_x, "device": str(device)}


def _share_full_batch(runs: list[dict], orders: tuple[str, ...], n_samples: int) -> None:
    """The full batch is the same computation in every order: its run in the first order stands for all."""
    for order in orders[1:]:
        for run in [r for r in runs if r["order"] == orders[0] and r["batch_size"] >= n_samples]:
            runs.append({**run, "order": order, "shared": True})


# --------------------------------------------------------------------------------------------------------------
# 2b. What a step costs


@experiment(timing=True)
def step_cost(n_samples: int = N_SAMPLES, batch_sizes: tuple[int, ...] = (64, 512, 2048, 10_000), lr: float = LR,
              seed: int = SEED, rounds: int = 5, min_run_time: float = 0.4) -> dict:
    """What one optimizer step of the question's loop costs at each batch size of the curves: from the curves'
    start, Adam, one step on a batch of that many samples (a slice of the data), the batch sizes timed in
    alternation, ``rounds`` rounds, the garbage collector on."""
    device = pick_device()
    x, y = make_data(n_samples, device)
    init, _ = initial_states(seed, n_samples=n_samples)
    criterion = nn.MSELoss()

    def stepper(batch_size: int) -> Callable[[], None]:
        model = _model(init, device)
        optimizer = torch.optim.Adam(model.parameters(), lr=lr)
        x_batch, y_batch = x[:batch_size], y[:batch_size]

        def step() -> None:
            optimizer.zero_grad()
            criterion(model(x_batch), y_batch).backward()
            optimizer.step()

        return step

    steps = {f"batch {size}": stepper(size) for size in batch_sizes}
    timings = interleaved(steps, rounds=rounds, min_run_time=min_run_time, block_time=0.005, device=device)
    kept = ("median", "mean", "iqr", "min", "max", "blocks", "runs", "rounds", "contention", "busy_rounds_left_out",
            "drift_rounds_left_out", "drifted", "reference")
    return {"n_samples": n_samples, "batch_sizes": list(batch_sizes), "device": str(device),
            "rows": [{"label": label, "batch_size": size, **{k: timings[label][k] for k in kept if k in timings[label]}}
                     for size, label in zip(batch_sizes, steps)]}


# --------------------------------------------------------------------------------------------------------------
# 3. What the question's code hides


@experiment()
def logged_vs_true(n_samples: int = N_SAMPLES, batch_size: int = 512, epochs: int = 20, lr: float = LR,
                   seed: int = SEED) -> dict:
    """The question's loop with its real DataLoader: its logged loss against the true full-dataset loss.

    ``logged`` is the question's ``total_loss / len(dataloader)``: a plain mean of per-batch losses taken while
    the weights move. At the end-of-epoch weights, the per-batch losses are recomputed to separate the two
    effects: the plain mean (short last batch weighted like a full one) against the sample-weighted mean.
    """
    device = pick_device()
    x, y = make_data(n_samples)
    init, _ = initial_states(seed, n_samples=n_samples)
    model = _model(init, device)
    criterion = nn.MSELoss()
    optimizer = torch.optim.Adam(model.parameters(), lr=lr)
    dataloader = DataLoader(TensorDataset(x, y), batch_size=batch_size, shuffle=False)
    xd, yd = x.to(device), y.to(device)
    rows = []
    with torch.random.fork_rng(devices=[]):
        for epoch in range(epochs):
            total_loss = 0.0
            weighted = 0.0
            for batch_x, batch_y in dataloader:
                batch_x, batch_y = batch_x.to(device), batch_y.to(device)
                optimizer.zero_grad()
                loss = criterion(model(batch_x), batch_y)
                loss.backward()
                optimizer.step()
                total_loss += loss.item()
                weighted += loss.item() * len(batch_x)
            with torch.no_grad():  # the same batches again, sliced: the weights no longer move
                fixed = [(criterion(model(xd[i]), yd[i]).item(), i.stop - i.start)
                         for i in batch_indices(n_samples, batch_size, "sequential")]
            rows.append({
                "epoch": epoch + 1,
                "logged": total_loss / len(dataloader),
                "logged_weighted": weighted / n_samples,
                "true_end": full_loss(model, xd, yd),
                "fixed_plain": sum(l for l, _ in fixed) / len(fixed),
                "fixed_weighted": sum(l * k for l, k in fixed) / n_samples,
                "last_batch_loss": fixed[-1][0],
                "other_batches_loss": sum(l * k for l, k in fixed[:-1]) / max(1, n_samples - fixed[-1][1]),
            })
    last_size = n_samples - batch_size * (math.ceil(n_samples / batch_size) - 1)
    return {"n_samples": n_samples, "batch_size": batch_size, "batches": len(dataloader), "last_batch": last_size,
            "rows": rows}


@experiment()
def init_effect(n_samples: int = N_SAMPLES, batch_size: int = 512, epochs: int = 20, full_epochs: int = 400,
                lr: float = LR, seeds: tuple[int, ...] = (42, 0, 1, 2, 3), long_seeds: tuple[int, ...] = (42,)) -> dict:
    """The question's two models start from different weights. How much of its gap is that?

    For each seed: the question's first and second ``Net()`` (``a`` and ``b``). Batch ``batch_size`` trains from
    both; the full batch trains from ``b`` (as in the question) for ``epochs`` epochs, and for ``full_epochs``
    for the seeds in ``long_seeds``. Same-start gap: both runs from ``b``; question's gap: ``a`` against ``b``.
    """
    device = pick_device()
    x, y = make_data(n_samples, device)
    rows = []
    for seed in progress(seeds, "steps: init effect"):
        a, b = initial_states(seed, epochs_between=epochs, batch_size=batch_size, n_samples=n_samples)
        start_diff = max((a[k] - b[k]).abs().max().item() for k in a)
        small_a = train(a, x, y, batch_size=batch_size, epochs=epochs, lr=lr)["final_loss"]
        small_b = train(b, x, y, batch_size=batch_size, epochs=epochs, lr=lr)["final_loss"]
        long = seed in long_seeds
        full = train(b, x, y, batch_size=n_samples, epochs=full_epochs if long else epochs, lr=lr,
                     checkpoints={epochs, full_epochs})
        at = {rec["step"]: rec["loss"] for rec in full["records"]}
        rows.append({"seed": seed, "start_max_abs_diff": start_diff, "small_from_a": small_a,
                     "small_from_b": small_b, "full_short": at[epochs], "full_long": at.get(full_epochs)})
    return {"n_samples": n_samples, "batch_size": batch_size, "epochs": epochs, "full_epochs": full_epochs,
            "rows": rows}


# --------------------------------------------------------------------------------------------------------------
# 4. Gradient noise and the noise scale


def _flat_grad(model: nn.Module) -> torch.Tensor:
    return torch.cat([p.grad.reshape(-1) for p in model.parameters()])


def _batch_grad(model: nn.Module, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    model.zero_grad()
    F.mse_loss(model(x), y).backward()
    return _flat_grad(model)


def per_sample_grad_sq_sum(model: Net, x: torch.Tensor, y: torch.Tensor) -> float:
    """Σ_i |g_i|² over samples, where g_i is the gradient of sample i's squared error, in one backward pass.

    For a linear layer, sample i's weight gradient is the outer product δ_i a_iᵀ of the gradient at the
    layer's output and its input, so its squared norm is |δ_i|²·|a_i|² (plus |δ_i|² for the bias): no
    per-sample gradient has to be stored. Tests check it against ``torch.func``'s per-sample gradients.
    """
    inputs: list[torch.Tensor] = []
    outputs: list[torch.Tensor] = []
    layers = [model.fc1, model.fc2, model.fc3]

    def keep(module, args, out):
        inputs.append(args[0].detach())
        out.retain_grad()
        outputs.append(out)

    handles = [layer.register_forward_hook(keep) for layer in layers]
    try:
        model.zero_grad()
        F.mse_loss(model(x), y, reduction="sum").backward()  # sample i's loss only reaches its own outputs
    finally:
        for handle in handles:
            handle.remove()
    total = torch.zeros((), dtype=torch.float64, device=x.device)
    for a, z in zip(inputs, outputs):
        delta_sq = (z.grad.double() ** 2).sum(dim=1)
        total += (delta_sq * ((a.double() ** 2).sum(dim=1) + 1.0)).sum()
    model.zero_grad()
    return total.item()


@experiment()
def gradient_noise(n_samples: int = N_SAMPLES, batch_sizes: tuple[int, ...] = (8, 32, 128, 512, 2048, 8192),
                   draws: int = 32, train_batch: int = 512, checkpoints: tuple[int, ...] = (0, 20, 100, 400),
                   variance_at: int = 100, variance_order: str = "sequential",
                   orders: tuple[str, ...] = ("shuffled", "sequential"), lr: float = LR, seed: int = SEED,
                   shuffle_seed: int = 0, sample_seed: int = 0) -> dict:
    """Minibatch-gradient variance against batch size, and the noise scale B_simple = tr(Σ)/|G|².

    For each order, the model follows the batch-``train_batch`` run of ``curves`` — the same call to ``train``
    with the same start, learning rate and shuffling seed, so the same weights at every step. At each checkpoint:
    the full gradient ``G`` and the per-sample covariance trace ``tr(Σ) = (1/N) Σ_i |g_i − G|²`` from per-sample
    gradient norms. At ``variance_at`` along the ``variance_order`` run: ``E|g_B − G|²`` over ``draws`` random
    batches drawn without replacement for each batch size, and over the contiguous slices of ``train_batch``.
    """
    device = pick_device()
    x, y = make_data(n_samples, device)
    init, _ = initial_states(seed, n_samples=n_samples)
    sampler = torch.Generator().manual_seed(sample_seed)
    per_epoch = steps_per_epoch(n_samples, train_batch)
    points, variance = [], []
    contiguous = None

    def measure_point(order: str, step: int, model: nn.Module) -> dict:
        G = _batch_grad(model, x, y)
        g2 = (G.double() ** 2).sum().item()
        # tr(Σ) = (1/N) Σ_i |g_i − G|² = (1/N) Σ_i |g_i|² − |G|²
        trace = per_sample_grad_sq_sum(model, x, y) / n_samples - g2
        return {"order": order, "step": step, "loss": full_loss(model, x, y), "grad_sq": g2, "trace": trace,
                "b_simple": trace / g2, "G": G}

    def measure_variance(point: dict, model: nn.Module) -> None:
        nonlocal contiguous
        G, trace = point["G"], point["trace"]
        for batch_size in batch_sizes:
            if batch_size > n_samples:
                continue
            dev = []
            for _ in range(draws):
                index = torch.randperm(n_samples, generator=sampler)[:batch_size].to(device)
                dev.append(((_batch_grad(model, x[index], y[index]) - G) ** 2).sum().item())
            fpc = (n_samples - batch_size) / (n_samples - 1)
            variance.append({"batch_size": batch_size, "measured": sum(dev) / len(dev),
                             "law": trace / batch_size * fpc, "plain": trace / batch_size, "draws": len(dev)})
        slices = [s for s in batch_indices(n_samples, train_batch, "sequential") if s.stop - s.start == train_batch]
        dev = [((_batch_grad(model, x[s], y[s]) - G) ** 2).sum().item() for s in slices]
        fpc = (n_samples - train_batch) / (n_samples - 1)
        contiguous = {"batch_size": train_batch, "slices": len(slices), "measured": sum(dev) / len(dev),
                      "law_random": trace / train_batch * fpc, "order": variance_order,
                      "at": {k: v for k, v in point.items() if k != "G"}}

    for order in progress(orders, "steps: gradient noise"):
        wanted = set(checkpoints) | ({variance_at} if order == variance_order else set())

        def inspect(step: int, model: nn.Module, order: str = order) -> None:
            point = measure_point(order, step, model)
            if step == variance_at and order == variance_order:
                measure_variance(point, model)
            if step in checkpoints:
                points.append({k: v for k, v in point.items() if k != "G"})
            model.zero_grad()

        train(init, x, y, batch_size=train_batch, epochs=epochs_for_steps(max(wanted), n_samples, train_batch),
              lr=lr, order=order, shuffle_seed=shuffle_seed, checkpoints=wanted, inspect=inspect)
    return {"n_samples": n_samples, "train_batch": train_batch, "steps_per_epoch": per_epoch, "lr": lr,
            "shuffle_seed": shuffle_seed, "orders": list(orders), "variance_at": variance_at,
            "variance_order": variance_order, "points": points, "variance": variance, "contiguous": contiguous}


@experiment()
def lr_sweep(n_samples: int = N_SAMPLES, base_batch: int = 64, multiples: tuple[int, ...] = (1, 2, 4, 8, 16),
             lrs: tuple[float, ...] = tuple(LR * 2 ** i for i in range(3, 11)), epochs: int = 2,
             seeds: tuple[int, ...] = (0, 1, 2, 3, 4), tail_points: int = 8, order: str = "shuffled",
             threads: int = 1) -> dict:
    """Adam at equal samples: for each batch size ``base_batch × k``, each seed and each learning rate of the grid,
    the full-dataset loss at ``tail_points`` evenly spaced steps of the run's second half (the last step included).

    The seed sets the starting weights (the question's first ``Net()`` after ``manual_seed(seed)``) and the
    shuffling; every batch size and learning rate of one seed starts from those weights and sees the same data.
    The runs use ``threads`` intra-op threads (the tensors are small: on a CPU more threads mostly wait), and the
    caller's thread count is restored afterwards. Nothing here is timed.
    """
    device = pick_device()
    x, y = make_data(n_samples, device)
    starts = {seed: initial_states(seed, n_samples=n_samples)[0] for seed in seeds}
    plan = [(seed, k, lr) for seed in seeds for k in multiples for lr in lrs]
    runs = []
    original_threads = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        for seed, k, lr in progress(plan, "steps: learning-rate sweep"):
            batch_size = base_batch * k
            total = epochs * steps_per_epoch(n_samples, batch_size)
            tail = {total - round(j * total / (2 * tail_points)) for j in range(tail_points)}
            out = train(starts[seed], x, y, batch_size=batch_size, epochs=epochs, lr=lr, order=order,
                        shuffle_seed=seed, checkpoints=tail)
            runs.append({"seed": seed, "k": k, "batch_size": batch_size, "lr": lr, "steps": out["steps"],
                         "tail": [[r["step"], r["loss"]] for r in out["records"] if r["step"] in tail],
                         "final_loss": out["final_loss"]})
    finally:
        torch.set_num_threads(original_threads)
    return {"n_samples": n_samples, "base_batch": base_batch, "multiples": list(multiples), "lrs": list(lrs),
            "question_lr": LR, "epochs": epochs, "seeds": list(seeds), "tail_points": tail_points, "order": order,
            "threads": threads, "runs": runs}


# --------------------------------------------------------------------------------------------------------------
# 5. Pitfalls that follow from step counts


@experiment()
def scheduler_sizing(n_samples: int = N_SAMPLES, epochs: int = 20, planned_batch: int = 512, smaller_batch: int = 64,
                     larger_batch: int = 2048, max_lr: float = 1e-3) -> dict:
    """OneCycleLR sized as ``epochs * len(loader)`` for one batch size, then used with another."""
    dataset = TensorDataset(torch.arange(n_samples))
    weight = nn.Parameter(torch.zeros(1))

    def schedule(total: int) -> tuple[torch.optim.Optimizer, torch.optim.lr_scheduler.OneCycleLR]:
        optimizer = torch.optim.Adam([weight], lr=max_lr)
        return optimizer, torch.optim.lr_scheduler.OneCycleLR(optimizer, max_lr=max_lr, total_steps=total)

    def drive(batch_size: int, total: int) -> dict:
        optimizer, scheduler = schedule(total)
        loader = DataLoader(dataset, batch_size=batch_size, shuffle=False)
        lrs, step, error = [], 0, None
        with torch.random.fork_rng(devices=[]):
            try:
                for epoch in range(epochs):
                    for i, _ in enumerate(loader):
                        lrs.append(scheduler.get_last_lr()[0])
                        optimizer.step()
                        scheduler.step()
                        step += 1
            except ValueError as exc:
                error = {"type": type(exc).__name__, "message": str(exc), "epoch": epoch + 1, "batch": i + 1,
                         "step": step + 1}
        return {"batch_size": batch_size, "total_steps": total, "steps_run": step, "lrs": lrs, "error": error,
                "loader_steps": epochs * len(loader)}

    planned = total_steps(n_samples, planned_batch, epochs)
    return {
        "n_samples": n_samples, "epochs": epochs, "max_lr": max_lr, "planned_batch": planned_batch,
        "planned_total": planned,
        "smaller": drive(smaller_batch, planned),
        "larger": drive(larger_batch, planned),
        "larger_resized": drive(larger_batch, total_steps(n_samples, larger_batch, epochs)),
    }


@experiment()
def accumulation(n_samples: int = N_SAMPLES, batch_size: int = 512, accumulation_steps: tuple[int, ...] = (1, 2, 3, 4, 8),
                 epochs: int = 2, lr: float = LR, seed: int = SEED) -> dict:
    """Real gradient-accumulation loops over the question's DataLoader, counting optimizer steps.

    ``"with end-of-epoch step"`` steps when ``(i + 1) % k == 0 or i + 1 == len(loader)``; ``"without"`` only on
    ``(i + 1) % k == 0``, so leftover micro-batches' gradients carry into the next epoch's first step.
    """
    device = pick_device()
    x, y = make_data(n_samples)
    init, _ = initial_states(seed, n_samples=n_samples)
    loader = DataLoader(TensorDataset(x, y), batch_size=batch_size, shuffle=False)
    rows = []
    with torch.random.fork_rng(devices=[]):
        for k in progress(accumulation_steps, "steps: accumulation"):
            row: dict = {"k": k, "micro_batches": len(loader), "recipe": steps_per_epoch(n_samples, batch_size,
                                                                                          accumulation_steps=k)}
            for variant, end_step in (("with", True), ("without", False)):
                model = _model(init, device)
                optimizer = torch.optim.Adam(model.parameters(), lr=lr)
                optimizer.zero_grad()
                per_epoch, groups = [], []
                pending, pending_samples = 0, 0
                last_scale = None
                for _ in range(epochs):
                    steps = 0
                    for i, (bx, by) in enumerate(loader):
                        bx, by = bx.to(device), by.to(device)
                        (F.mse_loss(model(bx), by) / k).backward()
                        pending += 1
                        pending_samples += len(bx)
                        if (i + 1) % k == 0 or (end_step and i + 1 == len(loader)):
                            if end_step and i + 1 == len(loader) and pending < k and last_scale is None:
                                last_scale = _partial_group_scale(model, x, y, i + 1 - pending, i + 1,
                                                                  batch_size, device)
                            optimizer.step()
                            optimizer.zero_grad()
                            groups.append({"micro_batches": pending, "samples": pending_samples})
                            pending, pending_samples = 0, 0
                            steps += 1
                    per_epoch.append(steps)
                row[variant] = {"steps_per_epoch": per_epoch, "groups": groups, "leftover": pending,
                                "largest_group": max(g["micro_batches"] for g in groups),
                                "partial_group_scale": last_scale}
            rows.append(row)
    return {"n_samples": n_samples, "batch_size": batch_size, "epochs": epochs, "rows": rows}


def _partial_group_scale(model: nn.Module, x: torch.Tensor, y: torch.Tensor, first: int, stop: int,
                         batch_size: int, device: torch.device) -> float:
    """|accumulated gradient| / |gradient of the mean loss over the same samples| for the epoch's last group."""
    accumulated = _flat_grad(model).clone()
    start, end = first * batch_size, min(stop * batch_size, len(x))
    reference = _batch_grad(model, x[start:end].to(device), y[start:end].to(device))
    model.zero_grad()
    for p, value in zip(model.parameters(), _split(accumulated, model)):
        p.grad = value
    return (accumulated.norm() / reference.norm()).item()


def _split(flat: torch.Tensor, model: nn.Module) -> list[torch.Tensor]:
    out, offset = [], 0
    for p in model.parameters():
        out.append(flat[offset:offset + p.numel()].view_as(p).clone())
        offset += p.numel()
    return out


# --------------------------------------------------------------------------------------------------------------
# DistributedSampler, measured in a real multi-process gloo run


def _rank_indices(loader: DataLoader) -> list[int]:
    return [i for (batch,) in loader for i in batch.tolist()]


def _distributed_worker(rank: int, world_size: int, init_file: str, out_dir: str, configs: list[dict],
                        shuffled: dict, evaluation: dict, accumulation: dict) -> None:
    import torch.distributed as dist
    from torch.distributed.algorithms.ddp_comm_hooks.default_hooks import allreduce_hook
    from torch.nn.parallel import DistributedDataParallel
    from torch.utils.data import DistributedSampler

    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method=f"file://{init_file}", rank=rank, world_size=world_size,
                            timeout=timedelta(seconds=60))
    try:
        results = []
        for config in configs:  # counts, with shuffle=False so that the indices can be read
            dataset = TensorDataset(torch.arange(config["n_samples"]))
            sampler = DistributedSampler(dataset, num_replicas=world_size, rank=rank, shuffle=False,
                                         drop_last=config["sampler_drop_last"])
            loader = DataLoader(dataset, batch_size=config["batch_size"], sampler=sampler,
                                drop_last=config["drop_last"])
            indices, steps = [], 0
            for (batch,) in loader:
                indices += batch.tolist()
                steps += 1
            counts = torch.tensor([len(indices), steps], dtype=torch.int64)
            total = counts.clone()
            dist.all_reduce(total, op=dist.ReduceOp.SUM)
            most = counts.clone()
            dist.all_reduce(most, op=dist.ReduceOp.MAX)
            results.append({**config, "rank": rank, "len_sampler": len(sampler), "len_loader": len(loader),
                            "steps": steps, "indices": indices, "all_samples": int(total[0]),
                            "all_steps": int(total[1]), "max_steps": int(most[1]),
                            "backend": dist.get_backend(), "world": dist.get_world_size()})

        # The default shuffle=True over several epochs, without and with sampler.set_epoch(epoch).
        dataset = TensorDataset(torch.arange(shuffled["n_samples"]))
        orders = {}
        for set_epoch in (False, True):
            sampler = DistributedSampler(dataset, num_replicas=world_size, rank=rank, seed=shuffled["seed"])
            loader = DataLoader(dataset, batch_size=shuffled["batch_size"], sampler=sampler)
            per_epoch = []
            for epoch in range(shuffled["epochs"]):
                if set_epoch:
                    sampler.set_epoch(epoch)
                per_epoch.append(_rank_indices(loader))
            orders["with" if set_epoch else "without"] = per_epoch

        # Evaluation: each rank sums the question's first model's squared errors and counts its samples;
        # all_reduce adds them up. Padded shards, trimmed shards, and shards that neither pad nor trim.
        n = evaluation["n_samples"]
        x, y = make_data(n)
        state = initial_states(evaluation["seed"], n_samples=n)[0]
        model = _model(state, torch.device("cpu"))
        evaluated = {}
        for name in ("padded", "drop_last", "unpadded"):
            if name == "unpadded":
                eval_sampler = range(rank, n, world_size)  # every sample once, the shards one apart in size
            else:
                eval_sampler = DistributedSampler(TensorDataset(x, y), num_replicas=world_size, rank=rank,
                                                  shuffle=False, drop_last=name == "drop_last")
            loader = DataLoader(TensorDataset(x, y), batch_size=evaluation["batch_size"], sampler=eval_sampler)
            sums = torch.zeros(2, dtype=torch.float64)
            with torch.no_grad():
                for bx, by in loader:
                    sums[0] += F.mse_loss(model(bx), by, reduction="sum").double()
                    sums[1] += len(bx)
            dist.all_reduce(sums, op=dist.ReduceOp.SUM)
            evaluated[name] = {"sum": sums[0].item(), "count": int(sums[1].item())}

        # Gradient accumulation under DistributedDataParallel: count its gradient all-reduces per optimizer step.
        k = accumulation["accumulation_steps"]
        sampler = DistributedSampler(TensorDataset(x, y), num_replicas=world_size, rank=rank, shuffle=False)
        micro = list(DataLoader(TensorDataset(x, y), batch_size=accumulation["micro_batch"], sampler=sampler))[:k]
        accumulated = {}
        for variant in ("all_reduce_each", "no_sync"):
            calls: list[int] = []

            def counting_hook(group, bucket, calls=calls):
                calls.append(bucket.buffer().numel())
                return allreduce_hook(group, bucket)

            ddp = DistributedDataParallel(_model(state, torch.device("cpu")))
            ddp.register_comm_hook(dist.group.WORLD, counting_hook)
            for i, (bx, by) in enumerate(micro):
                if variant == "no_sync" and i < len(micro) - 1:
                    with ddp.no_sync():  # the forward pass too must run inside no_sync
                        (F.mse_loss(ddp(bx), by) / k).backward()
                else:
                    (F.mse_loss(ddp(bx), by) / k).backward()
            accumulated[variant] = {"all_reduces": len(calls), "elements": sum(calls),
                                    "grad": torch.cat([p.grad.reshape(-1) for p in ddp.parameters()])}
        grads = [accumulated[v].pop("grad") for v in ("all_reduce_each", "no_sync")]
        accumulated["max_grad_difference"] = (grads[0] - grads[1]).abs().max().item()
        accumulated["max_grad"] = grads[0].abs().max().item()
        accumulated["micro_batches"] = len(micro)
        written = Path(out_dir, f"rank{rank}.json.partial")  # renamed once whole: a crash never leaves half a file
        written.write_text(json.dumps(
            {"configs": results, "orders": orders, "evaluation": evaluated, "accumulation": accumulated}))
        written.replace(Path(out_dir, f"rank{rank}.json"))
        del ddp, micro, loader
        dist.barrier()  # no rank tears the group down while another still talks to it
    finally:
        dist.destroy_process_group()
    # Gloo's threads can abort ("terminate called without an active exception") when the interpreter shuts down
    # around them; the results are on disk, so leave without that shutdown.
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


def _padded(order: list[int], world_size: int, drop_last: bool) -> list[int]:
    """The index list that ``DistributedSampler`` deals out, by its documented rule: trimmed to a multiple of
    ``world_size``, or padded to one with indices from its own start."""
    if drop_last:
        return order[:len(order) // world_size * world_size]
    return order + order[:-len(order) % world_size]


def _layout(per_rank: list[list[int]], order: list[int], drop_last: bool) -> dict:
    """Where the indices of one epoch went: strided from ``order``? Which were repeated, and on which ranks?"""
    world = len(per_rank)
    dealt = _padded(order, world, drop_last)
    seen: dict[int, int] = {}
    for indices in per_rank:
        for index in indices:
            seen[index] = seen.get(index, 0) + 1
    repeated = sorted(i for i, c in seen.items() if c > 1)
    return {"strided": all(indices == dealt[r::world] for r, indices in enumerate(per_rank)),
            "per_rank_head": [indices[:3] for indices in per_rank],
            "repeated": repeated, "dropped": sorted(set(order) - set(seen)),
            "order_head": order[:world],
            "ranks_ending_in_a_repeat": [r for r, indices in enumerate(per_rank) if indices and indices[-1] in repeated]}


@experiment()
def distributed_sampler(world_size: int = 4, n_values: tuple[int, ...] = (10_000, 10_001), batch_size: int = 512,
                        epochs: int = 3, sampler_seed: int = 0, accumulation_steps: int = 4, micro_batch: int = 128,
                        seed: int = SEED, timeout_s: float = 180.0) -> dict:
    """``DistributedSampler`` in a real ``world_size``-process gloo group: per-rank samples and steps, which index
    goes to which rank, the orders of ``epochs`` shuffled epochs without and with ``set_epoch``, an evaluation
    summed over padded, trimmed and unpadded shards, and the gradient all-reduces of an accumulation step under
    ``DistributedDataParallel`` with and without ``no_sync``."""
    import torch.multiprocessing as mp
    from torch.multiprocessing.spawn import ProcessException

    configs = [{"n_samples": n, "batch_size": batch_size, "sampler_drop_last": sdl, "drop_last": False}
               for n in n_values for sdl in (False, True)]
    n_odd = next((n for n in n_values if n % world_size), n_values[-1])
    shuffled = {"n_samples": n_odd, "batch_size": batch_size, "epochs": epochs, "seed": sampler_seed}
    evaluation = {"n_samples": n_odd, "batch_size": batch_size, "seed": seed}
    accumulation = {"accumulation_steps": accumulation_steps, "micro_batch": micro_batch}
    per_rank = None
    for attempt in (1, 2):  # a process group that breaks down is started again once, from scratch
        with tempfile.TemporaryDirectory(prefix="pitfalls-dist-") as tmp:
            context = mp.start_processes(_distributed_worker,
                                         args=(world_size, os.path.join(tmp, "init"), tmp, configs, shuffled,
                                               evaluation, accumulation),
                                         nprocs=world_size, join=False, start_method="spawn")
            deadline = time.monotonic() + timeout_s
            try:
                while not context.join(timeout=1.0):
                    if time.monotonic() > deadline:
                        for process in context.processes:
                            if process.is_alive():
                                process.terminate()
                        raise TimeoutError(f"distributed run did not finish within {timeout_s} s")
            except ProcessException as error:
                files = [Path(tmp, f"rank{r}.json") for r in range(world_size)]
                if not all(f.exists() for f in files):  # a rank died before its results were whole
                    if attempt == 2:
                        raise RuntimeError(f"the {world_size}-process gloo run failed twice; last time: {error}") \
                            from error
                    continue
            per_rank = [json.loads(Path(tmp, f"rank{r}.json").read_text()) for r in range(world_size)]
            break
    rows = []
    for i, config in enumerate(configs):
        ranks = [per_rank[r]["configs"][i] for r in range(world_size)]
        n = config["n_samples"]
        layout = _layout([r["indices"] for r in ranks], list(range(n)), config["sampler_drop_last"])
        rows.append({
            **config,
            "per_rank_samples": [len(r["indices"]) for r in ranks],
            "per_rank_len_sampler": [r["len_sampler"] for r in ranks],
            "per_rank_steps": [r["steps"] for r in ranks],
            "per_rank_len_loader": [r["len_loader"] for r in ranks],
            "all_reduce_samples": ranks[0]["all_samples"],
            "all_reduce_max_steps": ranks[0]["max_steps"],
            **layout,
            "recipe_steps": steps_per_epoch(n, batch_size, world_size=world_size,
                                            sampler_drop_last=config["sampler_drop_last"]),
            "single_process_steps": steps_per_epoch(n, batch_size),
            "backend": ranks[0]["backend"], "world": ranks[0]["world"],
        })
    # Each epoch's orders against the permutations the sampler's seed gives for epochs 0, 1, ...: which one was used?
    permutations = [torch.randperm(n_odd, generator=torch.Generator().manual_seed(sampler_seed + e)).tolist()
                    for e in range(epochs)]
    epoch_runs = []
    for variant in ("without", "with"):
        first = [per_rank[r]["orders"][variant][0] for r in range(world_size)]
        for e in range(epochs):
            orders = [per_rank[r]["orders"][variant][e] for r in range(world_size)]
            used = [p for p, perm in enumerate(permutations) if _layout(orders, perm, False)["strided"]]
            layout = _layout(orders, permutations[used[0]] if used else list(range(n_odd)), False)
            epoch_runs.append({"set_epoch": variant == "with", "epoch": e, "permutation_of_epoch": used,
                               "same_as_first_epoch": [orders[r] == first[r] for r in range(world_size)],
                               **layout})
    # The exact evaluation, on one process over every sample once.
    x, y = make_data(n_odd)
    model = _model(initial_states(seed, n_samples=n_odd)[0], torch.device("cpu"))
    with torch.no_grad():
        exact = sum(F.mse_loss(model(x[s]), y[s], reduction="sum").double().item()
                    for s in batch_indices(n_odd, batch_size, "sequential"))
    evaluated = {"n_samples": n_odd, "exact": {"sum": exact, "count": n_odd},
                 **per_rank[0]["evaluation"]}
    accumulated = {"accumulation_steps": accumulation_steps, "micro_batch": micro_batch,
                   "per_rank": [per_rank[r]["accumulation"] for r in range(world_size)]}
    return {"world_size": world_size, "batch_size": batch_size, "rows": rows, "sampler_seed": sampler_seed,
            "epochs": epochs, "shuffled": epoch_runs, "evaluation": evaluated, "accumulation": accumulated}


@experiment()
def batchnorm_last_batch(n_samples: int = 1025, batch_size: int = 512, seed: int = 0) -> dict:
    """An epoch of a model with ``BatchNorm1d`` in train mode, with and without ``drop_last``, when the last batch
    holds one sample: batch norm cannot normalise over one value per channel."""
    torch.manual_seed(seed)
    x = torch.linspace(-math.pi, math.pi, n_samples).unsqueeze(1)
    y = torch.sin(x)
    outcome = {}
    for drop_last in (False, True):
        torch.manual_seed(seed)
        model = nn.Sequential(nn.Linear(1, 16), nn.BatchNorm1d(16), nn.ReLU(), nn.Linear(16, 1)).train()
        optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
        loader = DataLoader(TensorDataset(x, y), batch_size=batch_size, drop_last=drop_last)
        sizes, error = [], None
        for x_batch, y_batch in loader:
            sizes.append(len(x_batch))
            try:
                loss = F.mse_loss(model(x_batch), y_batch)
            except ValueError as raised:  # "Expected more than 1 value per channel when training, …"
                error = {"type": type(raised).__name__, "message": str(raised)}
                break
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
        outcome["drop_last" if drop_last else "keep"] = {"batch_sizes": sizes, "error": error,
                                                          "steps": len(sizes) - (error is not None)}
    return {"n_samples": n_samples, "batch_size": batch_size, "last_batch": n_samples % batch_size, **outcome}


@experiment()
def gradscaler_skips(steps: int = 40, overflow_at: tuple[int, ...] = (0, 7, 19), seed: int = 0) -> dict:
    """A mixed-precision loop with ``torch.amp.GradScaler`` and a step-based scheduler: the loss overflows at the
    steps in ``overflow_at`` (a non-finite gradient, as float16 gives; made here by scaling the loss to inf), so
    the scaler skips those optimizer steps. Counted: loop iterations, optimizer steps taken (the weights moved),
    the scheduler's steps and its learning rate at the end; then the same loop stepping the scheduler only when
    ``scaler_stepped`` says the optimizer did. On the CPU, where the scaler works as on CUDA."""
    if steps < 1 or any(not 0 <= s < steps for s in overflow_at):
        raise ValueError(f"steps must be >= 1 and overflow_at within range(steps), got {steps} and {overflow_at}")
    import warnings

    x = torch.linspace(-math.pi, math.pi, 256).unsqueeze(1)
    y = torch.sin(x)

    def loop(guarded: bool) -> dict:
        torch.manual_seed(seed)
        model = nn.Sequential(nn.Linear(1, 16), nn.Tanh(), nn.Linear(16, 1))
        optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
        scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda step: 1 - step / steps)
        scaler = torch.amp.GradScaler("cpu", init_scale=2.0 ** 10)
        taken = 0
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            for step in range(steps):
                optimizer.zero_grad()
                loss = F.mse_loss(model(x), y)
                if step in overflow_at:
                    loss = loss * float("inf")
                before = [p.detach().clone() for p in model.parameters()]
                scale = scaler.get_scale()
                scaler.scale(loss).backward()
                scaler.step(optimizer)
                scaler.update()
                taken += any(not torch.equal(b, p) for b, p in zip(before, model.parameters()))
                if not guarded or scaler_stepped(scale, scaler.get_scale()):
                    scheduler.step()
        return {"optimizer_steps": taken, "scheduler_steps": scheduler.last_epoch,
                "final_lr_factor": optimizer.param_groups[0]["lr"] / 0.1,
                "warnings": sorted({str(w.message).split(".")[0] for w in caught
                                    if "lr_scheduler" in str(w.message)})}

    return {"iterations": steps, "overflow_at": list(overflow_at), "plain": loop(False), "guarded": loop(True)}
