"""Update-step counts: what batch size changes at a fixed epoch budget, measured on the second question.

The question trains a 1-128-128-1 ReLU MLP on sin(x) (10 000 points in [-π, π]) with Adam (lr 1e-4), batch 512
for 20 epochs against the full batch (10 000) for 20 and for 400 epochs. Run
``python -m snippets.experiments.steps`` to print the page's main tables.
"""

from __future__ import annotations

import json
import math
import os
import tempfile
import time
from datetime import timedelta
from pathlib import Path
from typing import Iterator

import torch
import torch.nn.functional as F
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

from snippets.lab import claim, experiment, pick_device, progress
from snippets.lab import render
from snippets.lab.cache import Result
from snippets.step_budget import epochs_for_steps, steps_per_epoch, total_steps

N_SAMPLES = 10_000
LR = 1e-4
SEED = 42  # the question's seed


# --------------------------------------------------------------------------------------------------------------
# The question's setup


class Net(nn.Module):
    """The question's 1-128-128-1 ReLU MLP, layer for layer (same construction order, so same weights)."""

    def __init__(self) -> None:
        super().__init__()
        self.fc1 = nn.Linear(1, 128)
        self.fc2 = nn.Linear(128, 128)
        self.fc3 = nn.Linear(128, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = torch.relu(self.fc1(x))
        x = torch.relu(self.fc2(x))
        return self.fc3(x)


def make_data(n_samples: int = N_SAMPLES, device: torch.device | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """``x`` evenly spaced on [-π, π] (sorted, as the question builds it) and ``y = sin(x)``; no randomness."""
    if n_samples < 1:
        raise ValueError(f"n_samples must be >= 1, got {n_samples}")
    x = torch.linspace(-math.pi, math.pi, n_samples).unsqueeze(1)
    return x.to(device or "cpu"), torch.sin(x).to(device or "cpu")


def initial_states(seed: int = SEED, epochs_between: int = 20, batch_size: int = 512,
                   n_samples: int = N_SAMPLES) -> tuple[dict, dict]:
    """The question's two starting points: ``Net()`` after ``manual_seed(seed)``, and the second ``Net()``.

    Between the two constructions the question trains the first model; of that, only ``iter(dataloader)``
    draws from the global stream (one int64 per epoch, even unshuffled), so those draws are replayed here
    without the training. The global RNG state is restored afterwards.
    """
    dataset = TensorDataset(torch.zeros(n_samples, 1))
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        first = Net().state_dict()
        loader = DataLoader(dataset, batch_size=batch_size, shuffle=False)
        for _ in range(epochs_between):
            iter(loader)
        second = Net().state_dict()
    return first, second


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
          predict_at: set[int] = frozenset(), predict_index: torch.Tensor | None = None) -> dict:
    """Train a copy of ``state`` with the question's loop; record the full-dataset loss at ``checkpoints``.

    Batches are sliced from the tensors (the same batches a ``DataLoader`` over a ``TensorDataset`` yields,
    without its per-sample overhead). ``seconds`` is training time only: evaluations are not timed. The
    trained model is returned under ``"model"`` for callers that need it (it is not part of any result).
    """
    device = x.device
    model = _model(state, device)
    opt = torch.optim.Adam(model.parameters(), lr=lr)
    generator = torch.Generator().manual_seed(shuffle_seed)
    n = len(x)
    checkpoints = checkpoints if checkpoints is not None else set()
    step = samples = 0
    seconds = 0.0
    records = [{"step": 0, "samples": 0, "seconds": 0.0, "loss": full_loss(model, x, y)}]
    predictions: dict[str, list[float]] = {}
    for _ in range(epochs):
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
                if step in predict_at:
                    with torch.no_grad():
                        predictions[str(step)] = model(x[predict_index]).squeeze(1).tolist()
                _sync(device)
                start = time.perf_counter()
        _sync(device)
        seconds += time.perf_counter() - start
    return {"records": records, "steps": step, "samples": samples, "seconds": seconds,
            "final_loss": full_loss(model, x, y), "predictions": predictions, "model": model}


def _loss(value: float) -> str:
    return f"{value:.4f}" if value >= 1e-3 else f"{value:.2e}"


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


def render_arithmetic(result: Result) -> str:
    n, epochs = result["n_samples"], result["epochs"]
    body = []
    for row in result["rows"]:
        keep, drop = row["keep"], row["drop"]
        body.append([f"{row['batch_size']:,}", f"⌈{n:,}/{row['batch_size']:,}⌉ = {keep['formula']}",
                     keep["len_loader"], f"{keep['last_batch']:,}", f"{keep['total_steps']:,}",
                     f"⌊{n:,}/{row['batch_size']:,}⌋ = {drop['formula']}", drop["len_loader"],
                     f"{n - drop['samples_seen']:,}"])
    headers = ["batch", "steps/epoch (formula)", "`len(loader)`", "last batch", f"steps in {epochs} epochs",
               "`drop_last=True` (formula)", "`len(loader)`", "samples dropped/epoch"]
    return render.table(headers, body, align="rrrrrrrr")


def arithmetic_claims(result: Result) -> str:
    rows = result["rows"]
    agree = all(r[k]["formula"] == r[k]["len_loader"] == r[k]["batches_yielded"] == r[k]["recipe"]
                for r in rows for k in ("keep", "drop"))
    q = result["question"]
    n, epochs = result["n_samples"], result["epochs"]
    by_batch = {r["batch_size"]: r for r in result["rows"]}
    last_512 = by_batch[512]["keep"]["last_batch"]
    parts = [
        claim(f"For every row, the formula, the recipe's `steps_per_epoch`, `len(loader)` and the number of batches "
              f"a real `DataLoader` yielded are the same number.", agree, measured=rows),
        claim(f"At batch 512 an epoch holds {by_batch[512]['keep']['len_loader']} steps, not "
              f"{q['answer_per_epoch']}: the last batch holds {last_512} samples and is still a step,",
              by_batch[512]["keep"]["len_loader"] == q["answer_per_epoch"] + 1 and last_512 == n - 512 * (n // 512),
              measured=by_batch[512]["keep"]),
        claim(f"so {epochs} epochs are exactly {q['steps_512']} optimizer steps (the answer's count: "
              f"{q['answer_total']}).", q["steps_512"] == epochs * by_batch[512]["keep"]["len_loader"] != q["answer_total"],
              measured=q),
        claim(f"The full batch takes {q['steps_full_20']} steps in {epochs} epochs and {q['steps_full_400']} in "
              f"{result['full_epochs']}: the question's second comparison is at exactly equal step counts.",
              q["steps_full_400"] == q["steps_512"] and q["epochs_full_to_match"] == result["full_epochs"],
              measured=q),
        claim(f"And because the question prints only when `(epoch + 1) % {result['print_every']} == 0`, its "
              f"batch-512 run ({epochs} epochs) prints {q['printed_lines_512']} lines; the full-batch run "
              f"prints {q['printed_lines_full']}.", q["printed_lines_512"] == 0 and q["printed_lines_full"] > 0,
              measured=(q["printed_lines_512"], q["printed_lines_full"])),
    ]
    return " ".join(parts)


# --------------------------------------------------------------------------------------------------------------
# 2. Curves: loss against epochs, steps, samples and wall-clock


@experiment(timing=True)
def curves(n_samples: int = N_SAMPLES, batch_sizes: tuple[int, ...] = (64, 512, 2048, 10_000), epochs: int = 20,
           min_steps: int = 400, orders: tuple[str, ...] = ("sequential", "shuffled"), lr: float = LR,
           seed: int = SEED, shuffle_seed: int = 0, equal_steps: tuple[int, ...] = (20, 100, 400),
           fit_points: int = 201) -> dict:
    """Every batch size from the same initial weights, for max(``epochs`` epochs, ``min_steps`` steps).

    The full batch is the same computation in any order, so its run is shared by all orders.
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
                     "samples": out["samples"], "seconds": out["seconds"], "predictions": out["predictions"]})
    for order in orders[1:]:
        for run in [r for r in runs if r["order"] == orders[0] and r["batch_size"] >= n_samples]:
            runs.append({**run, "order": order, "shared": True})
    with torch.no_grad():
        fit_x = x[predict_index].squeeze(1).tolist()
    return {"n_samples": n_samples, "epochs": epochs, "min_steps": min_steps, "orders": list(orders),
            "batch_sizes": list(batch_sizes), "equal_steps": list(equal_steps), "lr": lr, "runs": runs,
            "fit_x": fit_x, "device": str(device)}


def _runs(result: Result, order: str) -> list[dict]:
    return [r for r in result["runs"] if r["order"] == order]


def _at_step(run: dict, step: int) -> dict | None:
    return next((rec for rec in run["records"] if rec["step"] == step), None)


ORDER_TITLE = {"sequential": "shuffle=False, as asked", "shuffled": "shuffled each epoch"}


def render_curves(result: Result, order: str) -> str:
    n = result["n_samples"]
    fig, axes = render.new_figure("tall", nrows=2, ncols=2, sharey=True)
    panels = [("epochs", lambda r: r["samples"] / n), ("optimizer steps", lambda r: r["step"]),
              ("samples seen", lambda r: r["samples"]), ("training time (s)", lambda r: r["seconds"])]
    for ax, (label, fx) in zip(axes.flat, panels):
        for i, run in enumerate(_runs(result, order)):
            recs = [r for r in run["records"] if r["step"] > 0]
            ax.plot([fx(r) for r in recs], [r["loss"] for r in recs], color=render.COLORS[i],
                    label=f"batch {run['batch_size']:,}")
        ax.set(xscale="log", yscale="log", xlabel=label)
    axes[0, 0].set_ylabel("full-dataset MSE")
    axes[1, 0].set_ylabel("full-dataset MSE")
    axes[0, 0].legend(fontsize=8)
    fig.suptitle(f"Same start, Adam lr {result['lr']:g}, {ORDER_TITLE[order]}", fontsize=10)
    return render.svg(fig, result, alt=f"Full-dataset loss against epochs, steps, samples and time ({order})") \
        + render.stamp_line(result)


def render_equal_steps(result: Result) -> str:
    n, epochs = result["n_samples"], result["epochs"]
    marks = result["equal_steps"]
    last = marks[-1]
    headers = ["order", "batch", *[f"loss @ {s} steps" for s in marks], f"samples for {last} steps",
               f"time for {last} steps", f"loss @ {epochs} epochs", f"steps in {epochs} epochs"]
    body = []
    for run in result["runs"]:
        cells = [ORDER_TITLE[run["order"]].split(",")[0], f"{run['batch_size']:,}"]
        for s in marks:
            rec = _at_step(run, s)
            cells.append(_loss(rec["loss"]) if rec else "—")
        rec = _at_step(run, last)
        cells += [f"{rec['samples']:,} ({rec['samples'] / n:.3g} ep.)" if rec else "—",
                  render.seconds(rec["seconds"]) if rec else "—"]
        end = _at_step(run, epochs * run["steps_per_epoch"])
        cells += [_loss(end["loss"]) if end else "—", f"{epochs * run['steps_per_epoch']:,}"]
        body.append(cells)
    return render.table(headers, body, align="lr" + "r" * (len(headers) - 2)) + "\n" + render.stamp_line(result)


def curves_claims(result: Result) -> str:
    """What the curves show, as a Markdown list of checked sentences."""
    n, epochs = result["n_samples"], result["epochs"]
    mid, last = result["equal_steps"][-2], result["equal_steps"][-1]
    lines = []

    def losses(order: str, step_of) -> dict[int, float]:
        return {r["batch_size"]: _at_step(r, step_of(r))["loss"] for r in _runs(result, order)
                if _at_step(r, step_of(r))}

    if "shuffled" in result["orders"]:
        at_epochs = losses("shuffled", lambda r: epochs * r["steps_per_epoch"])
        lo, hi = min(at_epochs, key=at_epochs.get), max(at_epochs, key=at_epochs.get)
        lines.append("- **Against epochs they separate.** " + claim(
            f"After {epochs} shuffled epochs the loss runs from {at_epochs[lo]:.2g} (batch {lo:,}, "
            f"{epochs * steps_per_epoch(n, lo):,} steps) to {at_epochs[hi]:.2g} (batch {hi:,}, "
            f"{epochs * steps_per_epoch(n, hi):,} steps): {at_epochs[hi] / at_epochs[lo]:,.0f}× apart.",
            at_epochs[hi] > 10 * at_epochs[lo] and lo < hi, measured=at_epochs))
        at_mid = losses("shuffled", lambda r: mid)
        at_last = losses("shuffled", lambda r: last)
        spread = max(at_mid.values()) / min(at_mid.values())
        smallest = min(at_last)
        lines.append("- **Against optimizer steps, shuffled, they align.** " + claim(
            f"After {mid} steps every batch size from {min(at_mid):,} to {max(at_mid):,} is within "
            f"{100 * (spread - 1):.0f}% of the others ({min(at_mid.values()):.4f}–{max(at_mid.values()):.4f}),",
            spread < 1.1, measured=at_mid) + " although the largest batch sees "
            f"{max(at_mid) // min(at_mid):,}× more samples per step. " + claim(
            f"By step {last} they begin to part, and the smallest batch is the one that falls behind "
            f"({at_last[smallest]:.4f} against {min(at_last.values()):.4f}).",
            at_last[smallest] == max(at_last.values()), measured=at_last)
            + " That is gradient noise catching up with it — measured below.")
    at_last_seq = losses("sequential", lambda r: last)
    sizes = sorted(at_last_seq)
    lines.append("- **In the question's order (`shuffle=False`) they do not align.** " + claim(
        f"After {last} steps the loss falls with every increase of the batch: "
        + ", ".join(f"{at_last_seq[b]:.4f} at batch {b:,}" for b in sizes) + ".",
        all(at_last_seq[a] > at_last_seq[b] for a, b in zip(sizes, sizes[1:])), measured=at_last_seq)
        + " Unshuffled, a batch is a contiguous slice of the sorted x, not a sample of the data.")
    order = "shuffled" if "shuffled" in result["orders"] else "sequential"
    one_epoch = losses(order, lambda r: r["steps_per_epoch"])
    lo, hi = min(one_epoch), max(one_epoch)
    lines.append("- **Against samples seen, the full batch is far behind.** " + claim(
        f"After one epoch ({n:,} samples) batch {lo:,} has taken {steps_per_epoch(n, lo):,} steps and reached "
        f"{one_epoch[lo]:.4f}; the full batch has taken {steps_per_epoch(n, hi)} and is at {one_epoch[hi]:.4f}.",
        one_epoch[lo] < one_epoch[hi], measured=one_epoch))
    per_step = {r["batch_size"]: _at_step(r, last)["seconds"] / last for r in _runs(result, order)
                if _at_step(r, last)}
    cheapest, dearest = min(per_step, key=per_step.get), max(per_step, key=per_step.get)
    text = ("- **Against wall-clock time**, what matters is what a step costs on this machine: "
            + ", ".join(f"{render.seconds(per_step[b])} per step at batch {b:,}" for b in sorted(per_step)) + ". ")
    ratio = per_step[dearest] / per_step[cheapest]
    if cheapest < dearest and ratio > 2:
        text += (f"A step at batch {cheapest:,} costs {ratio:.0f}× less than at batch {dearest:,}, so here the "
                 "smaller batches also win per second.")
    elif ratio < 1.5:
        text += "Steps cost about the same at every batch size here, so the time axis repeats the step axis."
    else:
        text += "Here the cost of a step does not simply grow with the batch; read the time panel."
    lines.append(text + " On a GPU, where a larger batch costs little more per step, rebuild and compare.")
    return "\n".join(lines) + "\n"


def render_fit(result: Result) -> str:
    runs = {(r["order"], r["batch_size"]): r for r in result["runs"]}
    n, epochs = result["n_samples"], result["epochs"]
    xs = result["fit_x"]
    truth = [math.sin(v) for v in xs]
    lines = []
    for order, batch, step, style in (("sequential", 512, None, "-"), ("sequential", n, epochs, "--"),
                                      ("sequential", n, result["min_steps"], "-"),
                                      ("shuffled", 512, None, ":")):
        run = runs.get((order, batch))
        if run is None:
            continue
        step = step or epochs * run["steps_per_epoch"]
        preds = run["predictions"].get(str(step))
        if preds is None:
            continue
        label = f"batch {batch:,}, {step // run['steps_per_epoch']} epochs ({step} steps)"
        if order == "shuffled":
            label += ", shuffled"
        lines.append((label, preds, style))
    fig, (left, right) = render.new_figure("tall", ncols=2)
    left.plot(xs, truth, color="#7f7f7f", linewidth=3, alpha=0.5, label="sin(x)")
    for i, (label, preds, style) in enumerate(lines):
        left.plot(xs, preds, color=render.COLORS[i], linestyle=style, label=label)
        right.plot(xs, [p - t for p, t in zip(preds, truth)], color=render.COLORS[i], linestyle=style)
    left.set(xlabel="x", ylabel="prediction", title="Fits, same start")
    right.set(xlabel="x", ylabel="prediction − sin(x)", title="Errors")
    right.axhline(0, color="#7f7f7f", linewidth=0.8)
    fig.legend(loc="outside lower center", ncol=2, fontsize=8)
    return render.svg(fig, result, alt="The question's sin(x) fits from the same start, and their errors")


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


def render_logged(result: Result) -> str:
    rows = result["rows"]
    epochs = [r["epoch"] for r in rows]
    fig, (left, right) = render.new_figure("pair", ncols=2)
    left.plot(epochs, [r["logged"] for r in rows], marker="o", markersize=3, label="logged (question's formula)")
    left.plot(epochs, [r["logged_weighted"] for r in rows], marker="^", markersize=3, linestyle="--",
              label="logged, weighted by batch size")
    left.plot(epochs, [r["true_end"] for r in rows], marker="s", markersize=3, label="true loss at epoch end")
    left.set(yscale="log", xlabel="epoch", ylabel="MSE", title=f"Batch {result['batch_size']}: logged vs true")
    left.legend(fontsize=8)
    right.plot(epochs, [100 * (r["fixed_plain"] / r["fixed_weighted"] - 1) for r in rows], marker="o",
               markersize=3, color=render.COLORS[2], label="plain mean of batch losses")
    right.plot(epochs, [100 * (r["fixed_weighted"] / r["true_end"] - 1) for r in rows], marker="s",
               markersize=3, color=render.COLORS[3], label="sample-weighted mean")
    right.axhline(0, color="#7f7f7f", linewidth=0.8)
    right.set(xlabel="epoch", ylabel="% off the true loss", title="Same weights, two averages")
    right.legend(fontsize=8)
    return render.svg(fig, result, alt="The question's logged loss against the true full-dataset loss")


def logged_claims(result: Result) -> str:
    rows = result["rows"]
    last = rows[-1]
    above = sum(r["logged"] > r["true_end"] for r in rows)
    weighted = max(abs(r["fixed_weighted"] / r["true_end"] - 1) for r in rows)
    plain = max(abs(r["fixed_plain"] / r["true_end"] - 1) for r in rows)
    worst = max(rows, key=lambda r: abs(r["fixed_plain"] / r["true_end"] - 1))
    return "\n".join([
        "- " + claim(f"The question's logged loss is above the loss the model has at the end of the epoch in "
                     f"{above} of {len(rows)} epochs", above == len(rows), measured=[r["logged"] for r in rows])
        + f" — after epoch {last['epoch']}: logged {last['logged']:.4f}, true {last['true_end']:.4f} "
        f"({100 * (last['logged'] / last['true_end'] - 1):.0f}% higher). It averages losses taken while the "
        "weights were still improving, so it lags a falling loss.",
        "- " + claim(f"At fixed weights, weighting each batch's loss by its size gives the full-dataset loss back "
                     f"(largest relative difference {weighted:.1e});", weighted < 1e-5, measured=weighted)
        + " " + claim(f"the plain mean of batch losses — the question's formula — is off by up to {100 * plain:.1f}% "
                      f"(epoch {worst['epoch']})", plain > 1e-3, measured=plain)
        + f", because the last batch of {result['last_batch']} samples counts as much as a full one of "
        f"{result['batch_size']}. Here the last slice (x near π) is the worst fit: after epoch {last['epoch']} its "
        f"loss is {last['last_batch_loss']:.3f} against {last['other_batches_loss']:.3f} for the rest.",
    ]) + "\n"


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


def render_init(result: Result) -> str:
    e, fe, b = result["epochs"], result["full_epochs"], result["batch_size"]
    headers = ["seed", "max |Δw| of the starts", f"batch {b}, {e} ep., 1st start (as asked)",
               f"batch {b}, {e} ep., 2nd start", f"full, {e} ep., 2nd start", f"full, {fe} ep., 2nd start"]
    body = [[r["seed"], f"{r['start_max_abs_diff']:.3g}", f"{r['small_from_a']:.4f}", f"{r['small_from_b']:.4f}",
             f"{r['full_short']:.4f}", f"{r['full_long']:.4f}" if r["full_long"] is not None else "—"]
            for r in result["rows"]]
    return render.table(headers, body, align="rrrrrr")


def init_claims(result: Result) -> str:
    rows = result["rows"]
    e, fe, b = result["epochs"], result["full_epochs"], result["batch_size"]
    diffs = [r["start_max_abs_diff"] for r in rows]
    moves = [abs(r["small_from_a"] - r["small_from_b"]) for r in rows]
    gaps = [r["full_short"] - max(r["small_from_a"], r["small_from_b"]) for r in rows]
    shorts = [r["full_short"] for r in rows]
    lines = [
        "- " + claim(f"In all {len(rows)} seeds the question's two models start from different weights (largest "
                     f"weight difference {min(diffs):.2f}–{max(diffs):.2f}).", all(d > 0 for d in diffs),
                     measured=diffs),
        "- " + claim(f"In every seed, {e} full-batch epochs end above {e} epochs of batch {b} — from either start — "
                     f"by at least {min(gaps):.3f}, {min(gaps) / max(moves):.1f}× the most that swapping the start "
                     f"changes the batch-{b} run ({max(moves):.3f}).",
                     min(gaps) > 2 * max(moves), measured={"gaps": gaps, "start_effect": moves})
        + f" The first observation of the question does not depend on the start. The full-batch {e}-epoch loss "
        f"itself does, strongly: {min(shorts):.3f}–{max(shorts):.3f} across seeds — after {e} steps, far from "
        "converged, the start still shows.",
    ]
    for r in rows:
        if r["full_long"] is None:
            continue
        lines.append("- " + claim(
            f"At equal steps ({fe} full-batch epochs against {e} of batch {b}, seed {r['seed']}), the full batch "
            f"ends at {r['full_long']:.4f}, batch {b} from the same start at {r['small_from_b']:.4f} "
            f"({r['small_from_b'] / r['full_long']:.0f}× higher) and from its own start, as asked, at "
            f"{r['small_from_a']:.4f}.", 3 * r["full_long"] < min(r["small_from_a"], r["small_from_b"]),
            measured=r) + " The different start explains little of this gap; most of the rest is the unshuffled "
            "order — compare the shuffled curves above.")
    return "\n".join(lines) + "\n"


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
                   variance_at: int = 100, lr: float = LR, seed: int = SEED, sample_seed: int = 0) -> dict:
    """Minibatch-gradient variance against batch size, and the noise scale B_simple = tr(Σ)/|G|².

    The model follows the question's batch-``train_batch`` run. At each checkpoint: the full gradient ``G``,
    the per-sample covariance trace ``tr(Σ) = (1/N) Σ_i |g_i − G|²`` from per-sample gradient norms, and (at
    ``variance_at``) ``E|g_B − G|²`` over ``draws`` random batches drawn without replacement, for each batch size.
    """
    device = pick_device()
    x, y = make_data(n_samples, device)
    init, _ = initial_states(seed, n_samples=n_samples)
    model = _model(init, device)
    optimizer = torch.optim.Adam(model.parameters(), lr=lr)
    sampler = torch.Generator().manual_seed(sample_seed)
    points, variance = [], []
    contiguous = None
    step = 0
    todo = sorted(set(checkpoints) | {variance_at})
    per_epoch = steps_per_epoch(n_samples, train_batch)
    for target in progress(todo, "steps: gradient noise"):
        while step < target:
            for index in batch_indices(n_samples, train_batch, "sequential"):
                if step == target:
                    break
                optimizer.zero_grad()
                F.mse_loss(model(x[index]), y[index]).backward()
                optimizer.step()
                step += 1
        G = _batch_grad(model, x, y)
        g2 = (G.double() ** 2).sum().item()
        # tr(Σ) = (1/N) Σ_i |g_i − G|² = (1/N) Σ_i |g_i|² − |G|²
        trace = per_sample_grad_sq_sum(model, x, y) / n_samples - g2
        point = {"step": step, "loss": full_loss(model, x, y), "grad_sq": g2, "trace": trace,
                 "b_simple": trace / g2}
        if target in checkpoints:
            points.append(point)
        if target == variance_at:
            for batch_size in batch_sizes:
                if batch_size > n_samples:
                    continue
                dev = []
                for _ in range(draws):
                    index = torch.randperm(n_samples, generator=sampler)[:batch_size].to(device)
                    dev.append(((_batch_grad(model, x[index], y[index]) - G) ** 2).sum().item())
                fpc = (n_samples - batch_size) / (n_samples - 1)
                variance.append({"batch_size": batch_size, "measured": sum(dev) / len(dev),
                                 "law": trace / batch_size * fpc, "plain": trace / batch_size,
                                 "draws": len(dev)})
            slices = [s for s in batch_indices(n_samples, train_batch, "sequential")
                      if s.stop - s.start == train_batch]
            dev = [((_batch_grad(model, x[s], y[s]) - G) ** 2).sum().item() for s in slices]
            fpc = (n_samples - train_batch) / (n_samples - 1)
            contiguous = {"batch_size": train_batch, "slices": len(slices), "measured": sum(dev) / len(dev),
                          "law_random": trace / train_batch * fpc, "at": point}
    model.zero_grad()
    return {"n_samples": n_samples, "train_batch": train_batch, "steps_per_epoch": per_epoch,
            "variance_at": variance_at, "points": points, "variance": variance, "contiguous": contiguous}


def render_noise(result: Result) -> str:
    rows = result["variance"]
    n = result["n_samples"]
    fig, ax = render.new_figure("wide")
    bs = [r["batch_size"] for r in rows]
    grid = sorted({*bs, *[round(b * f) for b in bs for f in (1.25, 1.6, 2.0, 2.5, 3.2)], n - 1})
    grid = [b for b in grid if b < n]
    trace = rows[0]["plain"] * rows[0]["batch_size"]
    ax.plot(grid, [trace / b for b in grid], color="#7f7f7f", linestyle="--", label="tr(Σ)/B")
    ax.plot(grid, [trace / b * (n - b) / (n - 1) for b in grid], color=render.COLORS[0],
            label="tr(Σ)/B · (N−B)/(N−1)")
    ax.plot(bs, [r["measured"] for r in rows], "o", color=render.COLORS[1], label="measured, random batches")
    c = result["contiguous"]
    ax.plot([c["batch_size"]], [c["measured"]], "s", color=render.COLORS[2], markersize=7,
            label="measured, the question's contiguous batches")
    ax.set(xscale="log", yscale="log", xlabel="batch size B", ylabel="E |g_B − G|²",
           title=f"Minibatch gradient variance after {result['variance_at']} steps")
    ax.legend(fontsize=8)
    return render.svg(fig, result, alt="Minibatch gradient variance against batch size, with the 1/B law")


def render_noise_table(result: Result) -> str:
    rows = [[f"{r['batch_size']:,}", f"{r['measured']:.3g}", f"{r['law']:.3g}", f"{r['measured'] / r['law']:.2f}",
             f"{r['plain']:.3g}", r["draws"]] for r in result["variance"]]
    return render.table(["B", "measured E|g_B − G|²", "law with (N−B)/(N−1)", "measured / law", "plain tr(Σ)/B",
                         "draws"], rows, align="rrrrrr")


def render_noise_scale(result: Result) -> str:
    per_epoch = result["steps_per_epoch"]
    rows = [[r["step"], f"{r['step'] / per_epoch:.3g}", f"{r['loss']:.4f}", f"{r['grad_sq']:.3g}",
             f"{r['trace']:.3g}", f"{r['b_simple']:,.0f}"] for r in result["points"]]
    return render.table(["step", "epoch", "full-dataset loss", "|G|²", "tr(Σ)", "B_simple = tr(Σ)/|G|²"], rows,
                        align="rrrrrr")


def noise_claims(result: Result) -> str:
    rows = result["variance"]
    ratios = [r["measured"] / r["law"] for r in rows]
    top = rows[-1]
    c = result["contiguous"]
    return "\n".join([
        "- " + claim(f"For every batch size from {rows[0]['batch_size']} to {top['batch_size']:,}, the measured "
                     f"variance is within a factor of 2 of tr(Σ)/B · (N−B)/(N−1) (measured / law: "
                     f"{min(ratios):.2f}–{max(ratios):.2f}, {rows[0]['draws']} random batches each).",
                     all(0.5 < q < 2 for q in ratios), measured=ratios),
        "- " + claim(f"At B = {top['batch_size']:,} the plain 1/B law overestimates it "
                     f"{top['plain'] / top['measured']:.1f}×", top["plain"] > 2 * top["measured"], measured=top)
        + f": drawing {top['batch_size']:,} of {result['n_samples']:,} samples without replacement leaves little "
        "to vary — at B = N the batch is the dataset and the variance is zero.",
        "- " + claim(f"The question's own batches (contiguous slices of {c['batch_size']}, `shuffle=False`) scatter "
                     f"{c['measured'] / c['law_random']:,.0f}× more than random batches of the same size.",
                     c["measured"] > 10 * c["law_random"], measured=c)
        + " Each slice covers a narrow range of x, and its gradient pulls toward fitting that range alone.",
    ]) + "\n"


def noise_scale_claims(result: Result) -> str:
    first, last = result["points"][0], result["points"][-1]
    return claim(f"B_simple grows from {first['b_simple']:.3g} at step {first['step']} to {last['b_simple']:.3g} at "
                 f"step {last['step']}", last["b_simple"] > 5 * first["b_simple"],
                 measured=[p["b_simple"] for p in result["points"]]) + (
        f": |G|² falls {first['grad_sq'] / last['grad_sq']:.0f}× while tr(Σ) falls only "
        f"{first['trace'] / last['trace']:.1f}×.")


@experiment()
def lr_scaling(n_samples: int = N_SAMPLES, base_batch: int = 64, base_lr: float = LR,
               batch_sizes: tuple[int, ...] = (512, 2048), epochs: int = 5, order: str = "shuffled",
               seed: int = SEED, shuffle_seed: int = 0) -> dict:
    """Adam at equal samples: a larger batch with the base learning rate, × sqrt(k) and × k (k = B / base)."""
    device = pick_device()
    x, y = make_data(n_samples, device)
    init, _ = initial_states(seed, n_samples=n_samples)
    plan = [("base", base_batch, base_lr)]
    for b in batch_sizes:
        k = b / base_batch
        plan += [("none", b, base_lr), ("sqrt", b, base_lr * math.sqrt(k)), ("linear", b, base_lr * k)]
    runs = []
    for rule, batch_size, lr in progress(plan, "steps: learning-rate scaling"):
        per_epoch = steps_per_epoch(n_samples, batch_size)
        halves = {max(1, round(h * per_epoch / 2)) for h in range(1, 2 * epochs + 1)}
        out = train(init, x, y, batch_size=batch_size, epochs=epochs, lr=lr, order=order, shuffle_seed=shuffle_seed,
                    checkpoints=halves | _geometric_steps(per_epoch * epochs, 8))
        runs.append({"rule": rule, "batch_size": batch_size, "lr": lr, "steps": out["steps"],
                     "records": out["records"], "final_loss": out["final_loss"]})
    return {"n_samples": n_samples, "base_batch": base_batch, "base_lr": base_lr, "epochs": epochs,
            "order": order, "runs": runs}


RULE_LABEL = {"base": "base", "none": "same lr", "sqrt": "lr × √k", "linear": "lr × k"}


def render_lr_scaling(result: Result) -> str:
    n = result["n_samples"]
    sizes = sorted({r["batch_size"] for r in result["runs"] if r["rule"] != "base"})
    base = next(r for r in result["runs"] if r["rule"] == "base")
    fig, axes = render.new_figure("pair", ncols=len(sizes), sharey=True)
    axes = [axes] if len(sizes) == 1 else list(axes)
    for ax, b in zip(axes, sizes):
        recs = [r for r in base["records"] if r["step"] > 0]
        ax.plot([r["samples"] / n for r in recs], [r["loss"] for r in recs], color="#000000", linewidth=2.4,
                alpha=0.6, label=f"base: batch {base['batch_size']}, lr {base['lr']:.2g}")
        for i, run in enumerate(r for r in result["runs"] if r["batch_size"] == b):
            recs = [r for r in run["records"] if r["step"] > 0]
            ax.plot([r["samples"] / n for r in recs], [r["loss"] for r in recs], color=render.COLORS[i],
                    marker="o", markersize=2.5, label=f"{RULE_LABEL[run['rule']]} = {run['lr']:.2g}")
        ax.set(yscale="log", xlabel="epochs (samples / N)", title=f"batch {b:,} (k = {b // base['batch_size']})")
        ax.legend(fontsize=7)
    axes[0].set_ylabel("full-dataset MSE")
    return render.svg(fig, result, alt="Loss against samples for larger batches with scaled learning rates")


def lr_scaling_table(result: Result) -> str:
    base = next(r for r in result["runs"] if r["rule"] == "base")
    rows = [[f"{r['batch_size']:,}", RULE_LABEL[r["rule"]], f"{r['lr']:.3g}", f"{r['steps']:,}",
             f"{r['final_loss']:.4g}", f"{r['final_loss'] / base['final_loss']:.2f}"] for r in result["runs"]]
    return render.table(["batch", "rule", "learning rate", "steps", f"loss after {result['epochs']} epochs",
                         "× base"], rows, align="rlrrrr")


def lr_scaling_claims(result: Result) -> str:
    base = next(r for r in result["runs"] if r["rule"] == "base")
    by = {(r["batch_size"], r["rule"]): r["final_loss"] for r in result["runs"] if r["rule"] != "base"}
    sizes = sorted({b for b, _ in by})
    b0, e = base["batch_size"], result["epochs"]
    return "\n".join([
        "- " + claim("With the base learning rate, larger batches fall behind at equal samples: after "
                     f"{e} epochs " + ", ".join(f"batch {b:,} ends {by[b, 'none'] / base['final_loss']:.0f}×"
                                                  for b in sizes) + f" above batch {b0}.",
                     all(by[b, "none"] > 5 * base["final_loss"] for b in sizes), measured=by),
        "- " + claim("Scaling the learning rate closes part of the gap, the linear rule more than the square root: "
                     + "; ".join(f"batch {b:,}: {by[b, 'none']:.3g} → {by[b, 'sqrt']:.3g} (× √k) → "
                                 f"{by[b, 'linear']:.3g} (× k)" for b in sizes) + ".",
                     all(by[b, "linear"] < by[b, "sqrt"] < by[b, "none"] for b in sizes), measured=by),
    ]) + "\n"


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


def render_scheduler(result: Result) -> str:
    fig, (left, right) = render.new_figure("pair", ncols=2)
    small = result["smaller"]
    left.plot(range(1, len(small["lrs"]) + 1), small["lrs"], color=render.COLORS[1])
    max_lr = result["max_lr"]
    if small["error"]:
        left.axvline(small["error"]["step"], color=render.COLORS[1], linestyle=":")
        left.annotate(f"ValueError at step {small['error']['step']}", (small["error"]["step"], max_lr * 1.15),
                      xytext=(6, 0), textcoords="offset points", fontsize=8, color="#A64B00")
    left.axvline(small["loader_steps"], color="#7f7f7f", linestyle="--")
    left.annotate("end of the run", (small["loader_steps"], max_lr * 0.6), xytext=(-6, 0),
                  textcoords="offset points", ha="right", fontsize=8, color="#555555")
    left.set(xlabel="optimizer step", ylabel="learning rate", xlim=(0, small["loader_steps"] * 1.03),
             ylim=(0, max_lr * 1.45), title=f"Batch {small['batch_size']}: needs {small['loader_steps']:,} steps")
    for i, key in enumerate(("larger", "larger_resized")):
        run = result[key]
        steps = len(run["lrs"])
        label = (f"sized for batch {result['planned_batch']} ({run['total_steps']} steps)" if key == "larger"
                 else f"sized with total_steps(...) = {run['total_steps']}")
        right.plot([100 * (s + 1) / steps for s in range(steps)], run["lrs"], color=render.COLORS[i * 2],
                   label=label)
    right.set(xlabel="% of the run", ylabel="learning rate", ylim=(0, max_lr * 1.45),
              title=f"Batch {result['larger']['batch_size']}: {len(result['larger']['lrs'])} steps")
    right.legend(fontsize=8, loc="upper left")
    return render.svg(fig, result, alt="OneCycleLR sized for the wrong batch size: a crash, or a schedule cut short")


def scheduler_claims(result: Result) -> str:
    small, large, fixed = result["smaller"], result["larger"], result["larger_resized"]
    error = small["error"]
    max_lr = result["max_lr"]
    lines = [claim(
        f"`OneCycleLR(total_steps={result['planned_total']})`, sized for batch {result['planned_batch']}, raised "
        f"`{error['type'] if error else None}` at step {error['step'] if error else None} (epoch "
        f"{error['epoch'] if error else None}, batch {error['batch'] if error else None}) of a batch-"
        f"{small['batch_size']} run that needs {small['loader_steps']:,} steps:",
        error is not None and error["step"] == result["planned_total"] + 1, measured=error)]
    if error:
        lines.append(f"\n```text\n{error['type']}: {error['message']}\n```\n")
    lines.append(claim(
        f"Sized for batch {result['planned_batch']} but run with batch {large['batch_size']}, the schedule stops "
        f"after {large['steps_run']} of its {large['total_steps']} steps, still warming up: the learning rate ends at "
        f"{large['lrs'][-1] / max_lr:.0%} of `max_lr`", large["lrs"][-1] > 0.5 * max_lr, measured=large["lrs"][-1])
        + " " + claim(f"instead of annealing to {fixed['lrs'][-1]:.2g}, as the schedule sized with "
                      f"`total_steps(...)` = {fixed['total_steps']} does.", fixed["lrs"][-1] < 0.01 * max_lr,
                      measured=fixed["lrs"][-1]) + " No error, no warning.")
    return "\n".join(lines) + "\n"


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


def render_accumulation(result: Result) -> str:
    b = result["batch_size"]
    rows = []
    for r in result["rows"]:
        w, wo = r["with"], r["without"]
        last = w["groups"][len(w["groups"]) // result["epochs"] - 1]
        scale = w["partial_group_scale"]
        rows.append([r["k"], f"{b * r['k']:,}", r["micro_batches"], r["recipe"], w["steps_per_epoch"][0],
                     f"{last['micro_batches']} ({last['samples']:,} samples)",
                     f"{scale:.2f}" if scale is not None else "— (full group)",
                     " + ".join(map(str, wo["steps_per_epoch"])), wo["largest_group"]])
    headers = ["k", "effective batch", "micro-batches/epoch", "`steps_per_epoch(..., accumulation_steps=k)`",
               "steps counted/epoch", "last group", "last step's gradient scale",
               "without end-of-epoch step: steps per epoch", "its largest group (micro-batches)"]
    return render.table(headers, rows, align="rrrrrrrrr")


def accumulation_claims(result: Result) -> str:
    rows = {r["k"]: r for r in result["rows"]}
    uneven = [k for k, r in rows.items() if r["micro_batches"] % k]
    k = uneven[0] if uneven else None
    lines = ["- " + claim("For every k, the optimizer steps counted in the real loop equal "
                          "`steps_per_epoch(N, B, accumulation_steps=k)` = ⌈micro-batches / k⌉.",
                          all(r["with"]["steps_per_epoch"] == [r["recipe"]] * result["epochs"] for r in rows.values()),
                          measured={k: r["with"]["steps_per_epoch"] for k, r in rows.items()})]
    if k is not None:
        r = rows[k]
        m = r["micro_batches"]
        lines.append("- " + claim(
            f"With k = {k}, {m} micro-batches leave {m % k} for the epoch's last step; with the loss divided by k, "
            f"that step's gradient is {r['with']['partial_group_scale']:.2f}× the mean gradient of its samples.",
            r["with"]["partial_group_scale"] < 0.9, measured=r["with"]["partial_group_scale"])
            + " Divide by the group's actual size if the last step should count fully.")
        lines.append("- " + claim(
            f"Without the end-of-epoch step, k = {k} takes "
            f"{' + '.join(map(str, r['without']['steps_per_epoch']))} steps, and one step sums "
            f"{r['without']['largest_group']} micro-batches: the leftovers of one epoch and the first group of the "
            "next.", r["without"]["largest_group"] > k, measured=r["without"]))
    return "\n".join(lines) + "\n"


# --------------------------------------------------------------------------------------------------------------
# DistributedSampler, measured in a real two-process gloo run


def _distributed_worker(rank: int, world_size: int, init_file: str, out_dir: str, configs: list[dict]) -> None:
    import torch.distributed as dist
    from torch.utils.data import DistributedSampler

    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method=f"file://{init_file}", rank=rank, world_size=world_size,
                            timeout=timedelta(seconds=60))
    try:
        results = []
        for config in configs:
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
        Path(out_dir, f"rank{rank}.json").write_text(json.dumps(results))
    finally:
        dist.destroy_process_group()


@experiment()
def distributed_sampler(world_size: int = 2, n_values: tuple[int, ...] = (10_000, 10_001), batch_size: int = 512,
                        timeout_s: float = 180.0) -> dict:
    """Per-rank samples and steps under ``DistributedSampler``, from a real ``world_size``-process gloo group."""
    import torch.multiprocessing as mp

    configs = [{"n_samples": n, "batch_size": batch_size, "sampler_drop_last": sdl, "drop_last": False}
               for n in n_values for sdl in (False, True)]
    with tempfile.TemporaryDirectory(prefix="pitfalls-dist-") as tmp:
        context = mp.start_processes(_distributed_worker, args=(world_size, os.path.join(tmp, "init"), tmp, configs),
                                     nprocs=world_size, join=False, start_method="spawn")
        deadline = time.monotonic() + timeout_s
        while not context.join(timeout=1.0):
            if time.monotonic() > deadline:
                for process in context.processes:
                    if process.is_alive():
                        process.terminate()
                raise TimeoutError(f"distributed run did not finish within {timeout_s} s")
        per_rank = [json.loads(Path(tmp, f"rank{r}.json").read_text()) for r in range(world_size)]
    rows = []
    for i, config in enumerate(configs):
        ranks = [per_rank[r][i] for r in range(world_size)]
        seen: dict[int, int] = {}
        for rank in ranks:
            for index in rank["indices"]:
                seen[index] = seen.get(index, 0) + 1
        n = config["n_samples"]
        rows.append({
            **config,
            "per_rank_samples": [len(r["indices"]) for r in ranks],
            "per_rank_len_sampler": [r["len_sampler"] for r in ranks],
            "per_rank_steps": [r["steps"] for r in ranks],
            "per_rank_len_loader": [r["len_loader"] for r in ranks],
            "all_reduce_samples": ranks[0]["all_samples"],
            "all_reduce_max_steps": ranks[0]["max_steps"],
            "repeated": sorted(i for i, c in seen.items() if c > 1),
            "dropped": sorted(set(range(n)) - set(seen)),
            "recipe_steps": steps_per_epoch(n, batch_size, world_size=world_size,
                                            sampler_drop_last=config["sampler_drop_last"]),
            "single_process_steps": steps_per_epoch(n, batch_size),
            "backend": ranks[0]["backend"], "world": ranks[0]["world"],
        })
    return {"world_size": world_size, "batch_size": batch_size, "rows": rows}


def render_distributed(result: Result) -> str:
    rows = []
    for r in result["rows"]:
        repeated = ", ".join(map(str, r["repeated"][:4])) + ("…" if len(r["repeated"]) > 4 else "")
        dropped = ", ".join(f"{i:,}" for i in r["dropped"][:4]) + ("…" if len(r["dropped"]) > 4 else "")
        rows.append([f"{r['n_samples']:,}", str(r["sampler_drop_last"]),
                     " / ".join(f"{s:,}" for s in r["per_rank_samples"]), f"{r['all_reduce_samples']:,}",
                     repeated or "none", dropped or "none", " / ".join(map(str, r["per_rank_steps"])),
                     r["recipe_steps"], r["single_process_steps"]])
    headers = ["N", "sampler `drop_last`", "samples per rank", "sum (all_reduce)", "repeated indices",
               "never seen", "steps per rank", "recipe", "steps, one process"]
    return render.table(headers, rows, align="rlrrllrrr")


def distributed_claims(result: Result) -> str:
    rows = result["rows"]
    world = result["world_size"]
    lines = ["- " + claim(f"Every rank's step count matches `steps_per_epoch(N, {result['batch_size']}, "
                          f"world_size={world}, sampler_drop_last=...)`, and `len(loader)` agrees with the batches "
                          "the loop drew.",
                          all(r["per_rank_steps"] == [r["recipe_steps"]] * world == r["per_rank_len_loader"]
                              for r in rows), measured=[r["per_rank_steps"] for r in rows])]
    even = next((r for r in rows if r["n_samples"] % world == 0 and not r["sampler_drop_last"]), None)
    if even:
        lines.append("- " + claim(
            f"With N = {even['n_samples']:,}, each of the {world} ranks ({even['backend']}) takes "
            f"{even['per_rank_steps'][0]} steps per epoch on {even['per_rank_samples'][0]:,} samples — where one "
            f"process takes {even['single_process_steps']}.",
            even["per_rank_steps"][0] < even["single_process_steps"] and not even["repeated"] and not even["dropped"],
            measured=even) + f" At the same per-rank batch the effective batch is {world}× larger, so an epoch holds "
            f"{world}× fewer updates: a learning rate or a schedule tuned on one process no longer fits.")
    odd = [r for r in rows if r["n_samples"] % world]
    for r in odd:
        if not r["sampler_drop_last"]:
            lines.append("- " + claim(
                f"With N = {r['n_samples']:,}, the default sampler pads every rank to {r['per_rank_samples'][0]:,} "
                f"samples by repeating index {', '.join(map(str, r['repeated']))}: all ranks together see "
                f"{r['all_reduce_samples']:,} samples (summed with `all_reduce`).",
                r["all_reduce_samples"] > r["n_samples"] and len(r["repeated"]) == r["all_reduce_samples"] - r["n_samples"],
                measured=r))
        else:
            lines.append("- " + claim(
                f"With `DistributedSampler(..., drop_last=True)` each rank gets {r['per_rank_samples'][0]:,} and "
                f"index {', '.join(f'{i:,}' for i in r['dropped'])} is never seen that epoch.",
                r["all_reduce_samples"] < r["n_samples"] and len(r["dropped"]) == r["n_samples"] - r["all_reduce_samples"],
                measured=r))
    return "\n".join(lines) + "\n"


# --------------------------------------------------------------------------------------------------------------


def report() -> str:
    from snippets.lab import run

    parts = ["## Step arithmetic\n", render_arithmetic(run(step_arithmetic)),
             "\n## Equal steps\n", render_equal_steps(run(curves)),
             "\n## Starting weights\n", render_init(run(init_effect)),
             "\n## Gradient noise\n", render_noise_table(run(gradient_noise)),
             render_noise_scale(run(gradient_noise)),
             "\n## Learning-rate scaling\n", lr_scaling_table(run(lr_scaling)),
             "\n## Gradient accumulation\n", render_accumulation(run(accumulation)),
             "\n## DistributedSampler\n", render_distributed(run(distributed_sampler))]
    return "\n".join(parts)


if __name__ == "__main__":
    import logging

    logging.basicConfig(level=logging.INFO, format="%(message)s")
    print(report())
