# SPDX-License-Identifier: MIT
# Copyright (c) 2026 The PyTorch pitfalls, measured authors
# Project: PyTorch pitfalls, measured — measured and explained on its page update-steps/
"""Count optimizer steps exactly, so runs with different batch sizes can be compared fairly.

The pitfall: "20 epochs" means 20 optimizer steps at full batch and 400 at batch 512 on 10 000 samples, so a
fixed epoch budget hides a 20x difference in updates. Hand arithmetic gets the count wrong too:
``10_000 // 512`` is 19, but ``len(DataLoader)`` is ``ceil(10_000 / 512) == 20`` because the short last batch
is still a step. These functions give the exact count for a ``DataLoader``, optionally behind a
``DistributedSampler`` and with gradient accumulation, to size schedulers and equal-step comparisons.

Usage::

    from step_budget import epochs_for_steps, steps_per_epoch, total_steps
    steps_per_epoch(10_000, 512)                # 20 == len(DataLoader(ds, batch_size=512))
    total_steps(10_000, 512, epochs=20)         # 400 steps (not 19 * 20 = 380)
    epochs_for_steps(400, 10_000, 10_000)       # 400 full-batch epochs give the same 400 steps
    OneCycleLR(opt, max_lr=1e-3, total_steps=total_steps(len(ds), 64, 20, accumulation_steps=4))

What is counted, option by option:

* ``drop_last`` is the ``DataLoader``'s: ``True`` drops the short last batch of each rank's samples
  (``floor``), ``False`` keeps it as a step (``ceil``).
* ``world_size > 1`` puts a ``DistributedSampler(num_replicas=world_size)`` in front. It deals its index
  list (shuffled with ``seed + epoch`` by default) out strided: rank ``r`` takes positions ``r``,
  ``r + world_size``, ... Its own ``drop_last`` is ``sampler_drop_last``: ``False`` (its default) first pads
  the list to a multiple of ``world_size`` with indices from the list's start, so every rank holds
  ``ceil(n / world_size)`` samples and the repeats land at the end of the last ranks; ``True`` trims the
  list's tail, so every rank holds ``floor(n / world_size)``. Shuffling does not change the count (call
  ``sampler.set_epoch(epoch)`` every epoch, or every epoch repeats one order). The count is per rank, which
  is also the number of synchronised optimizer steps.
* ``accumulation_steps = k`` counts the loop that steps after every ``k`` micro-batches *and* after the last
  one: ``if (i + 1) % k == 0 or i + 1 == len(loader): optimizer.step()``. A partial group at the end of the
  epoch is a step, so an epoch of ``b`` batches holds ``ceil(b / k)`` steps.

What it cannot count: the steps ``torch.amp.GradScaler`` skips (an ``inf``/``nan`` gradient skips
``optimizer.step()`` while a scheduler stepped beside it still counts the step: step the scheduler only when
``scaler_stepped`` says the optimizer did), an ``IterableDataset`` (whose length the loader does not know), and a
custom ``batch_sampler`` (count ``len(batch_sampler)``).

Needs only the Python standard library; copy this file into your project.
"""

from __future__ import annotations

import operator
from typing import Any

__all__ = ["steps_per_epoch", "total_steps", "epochs_for_steps", "scaler_stepped"]


def _whole(name: str, value: Any, minimum: int) -> int:
    """``value`` as an int, rejecting bools, floats and other non-integers, and values below ``minimum``."""
    if isinstance(value, bool):
        raise TypeError(f"{name} must be an integer, got the bool {value!r}")
    try:
        number = operator.index(value)
    except TypeError:
        raise TypeError(f"{name} must be an integer, got {value!r} ({type(value).__name__})") from None
    if number < minimum:
        raise ValueError(f"{name} must be >= {minimum}, got {number!r}")
    return number


def _flag(name: str, value: Any) -> bool:
    if not isinstance(value, bool):
        raise TypeError(f"{name} must be a bool, got {value!r} ({type(value).__name__})")
    return value


def _ceil_div(a: int, b: int) -> int:
    return -(-a // b)


def steps_per_epoch(n_samples: int, batch_size: int, *, drop_last: bool = False, world_size: int = 1,
                    sampler_drop_last: bool = False, accumulation_steps: int = 1) -> int:
    """Optimizer steps in one epoch over ``n_samples`` samples (per rank when ``world_size > 1``).

    Equals ``len(loader)`` for ``DataLoader(ds, batch_size, drop_last=drop_last)`` with
    ``len(ds) == n_samples``, with ``sampler=DistributedSampler(ds, num_replicas=world_size,
    drop_last=sampler_drop_last)`` when ``world_size > 1``, divided by ``accumulation_steps`` and rounded up.
    """
    n_samples = _whole("n_samples", n_samples, 0)
    batch_size = _whole("batch_size", batch_size, 1)
    world_size = _whole("world_size", world_size, 1)
    accumulation_steps = _whole("accumulation_steps", accumulation_steps, 1)
    drop_last = _flag("drop_last", drop_last)
    sampler_drop_last = _flag("sampler_drop_last", sampler_drop_last)

    # DistributedSampler: pad to ceil(n / world) per rank by repeating indices, or trim to floor(n / world).
    per_rank = n_samples // world_size if sampler_drop_last else _ceil_div(n_samples, world_size)
    batches = per_rank // batch_size if drop_last else _ceil_div(per_rank, batch_size)
    # A trailing partial accumulation group still ends in optimizer.step().
    return _ceil_div(batches, accumulation_steps)


def total_steps(n_samples: int, batch_size: int, epochs: int, *, drop_last: bool = False, world_size: int = 1,
                sampler_drop_last: bool = False, accumulation_steps: int = 1) -> int:
    """Optimizer steps in ``epochs`` epochs: the ``total_steps`` a step-based scheduler must be given."""
    epochs = _whole("epochs", epochs, 0)
    return epochs * steps_per_epoch(n_samples, batch_size, drop_last=drop_last, world_size=world_size,
                                    sampler_drop_last=sampler_drop_last, accumulation_steps=accumulation_steps)


def epochs_for_steps(target_steps: int, n_samples: int, batch_size: int, *, drop_last: bool = False,
                     world_size: int = 1, sampler_drop_last: bool = False, accumulation_steps: int = 1) -> int:
    """The fewest whole epochs that hold at least ``target_steps`` optimizer steps.

    Raises ``ValueError`` when an epoch holds no step at all (e.g. ``drop_last=True`` with a batch larger
    than the samples) and ``target_steps > 0``: no number of epochs reaches the target.
    """
    target_steps = _whole("target_steps", target_steps, 0)
    per_epoch = steps_per_epoch(n_samples, batch_size, drop_last=drop_last, world_size=world_size,
                                sampler_drop_last=sampler_drop_last, accumulation_steps=accumulation_steps)
    if target_steps == 0:
        return 0
    if per_epoch == 0:
        raise ValueError(
            f"target_steps={target_steps} cannot be reached: an epoch holds 0 steps "
            f"(n_samples={n_samples}, batch_size={batch_size}, drop_last={drop_last}, world_size={world_size}, "
            f"sampler_drop_last={sampler_drop_last})"
        )
    return _ceil_div(target_steps, per_epoch)


def scaler_stepped(scale_before: float, scale_after: float) -> bool:
    """Whether ``torch.amp.GradScaler`` let the optimizer step: ``scaler.step(optimizer)`` skips the step when a
    gradient holds ``inf`` or ``nan``, and the ``scaler.update()`` after it then lowers the scale; after a step it
    keeps the scale or raises it. Step the learning-rate scheduler only then, so that it counts the steps taken::

        before = scaler.get_scale()
        scaler.step(optimizer)
        scaler.update()
        if scaler_stepped(before, scaler.get_scale()):
            scheduler.step()
    """
    for name, value in (("scale_before", scale_before), ("scale_after", scale_after)):
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0:
            raise ValueError(f"{name} must be a positive number (scaler.get_scale()), got {value!r}")
    return scale_after >= scale_before
