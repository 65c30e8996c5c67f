# SPDX-License-Identifier: MIT
# Copyright (c) 2026 The PyTorch pitfalls, measured authors
# Project: PyTorch pitfalls, measured — measured and explained on its page seeding-order/
"""One seed per script is not one seed per model: seed right before each construction that must be reproducible.

``torch.manual_seed(0)`` fixes where the global random stream starts, not what each consumer gets: on the
CPU, every module construction, every dropout mask, every ``randn`` and every ``DataLoader`` draws from the same
stream (each ``iter()`` draws a worker base seed, only the first with ``persistent_workers=True``, and every
shuffled epoch draws ``RandomSampler``'s seed; neither when the loader has a ``generator`` of its own), so two
models built one after the other start from different weights, and inserting any random operation between them
changes the second. Each CUDA device has a stream of its own, drawn from by what runs there (a model built with
``device="cuda"``, a dropout on CUDA). Seed right before each thing that must be reproducible, or give it a stream
of its own. Two models that need only equal starting weights need no seed at all: ``copy.deepcopy`` the first.
This file is for programs that build models in several places or processes.

Usage::

    from seeding import seed_everything, seeded, same_parameters

    seed_everything(0)                 # Python random, NumPy (if installed), torch CPU and CUDA
    with seeded(0):
        model_a = make_model()         # same weights as model_b...
    with seeded(0):
        model_b = make_model()
    assert same_parameters(model_a, model_b)   # ...and the global stream is as it was before each block

Only torch and the standard library are needed; copy this file into your project.
"""

from __future__ import annotations

import contextlib
import random
from typing import Iterator

import torch
from torch import nn

__all__ = ["seed_everything", "seeded", "same_parameters", "rng_states", "restore_rng_states"]

# torch.manual_seed accepts [-0x8000_0000_0000_0000, 0xffff_ffff_ffff_ffff]; NumPy's legacy seed only
# [0, 2**32 - 1]. Accepting the intersection keeps one seed meaning the same thing for every generator.
_MAX_SEED = 2**32 - 1


def _check_seed(seed: object) -> int:
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise TypeError(f"seed must be an int, got {type(seed).__name__} {seed!r}")
    if not 0 <= seed <= _MAX_SEED:
        raise ValueError(f"seed must be in [0, {_MAX_SEED}], got {seed}")
    return seed


def seed_everything(seed: int) -> None:
    """Seed Python's ``random``, NumPy's global generator (when NumPy is importable), torch on the CPU and
    on every CUDA device.

    This makes a script start from a known state; it does not protect one consumer from another (see
    :func:`seeded`).
    """
    seed = _check_seed(seed)
    random.seed(seed)
    try:
        import numpy
    except ImportError:
        pass
    else:
        numpy.random.seed(seed)
    torch.manual_seed(seed)  # also seeds every CUDA device (lazily if CUDA is not initialised yet)


@contextlib.contextmanager
def seeded(seed: int) -> Iterator[None]:
    """Run the block with torch's global RNG seeded to ``seed``; restore the previous state on exit.

    The CPU generator is saved and restored, also when the block raises, so code after the block sees the
    stream as if the block had never run. CUDA devices have generators of their own (a model built with
    ``device="cuda"`` or a dropout on CUDA draws from them, not from the CPU one); ``torch.manual_seed`` seeds
    them too. If CUDA is already initialised, every device's generator is saved and restored as well. If it is
    not, nothing is initialised just to save a state that does not exist yet: on exit the CUDA generators are
    seeded again with ``torch.initial_seed()`` as it was on entry — the seed ``torch.manual_seed`` had queued
    for them — so they start after the block as they would have without it. In a program that never called
    ``torch.manual_seed``, ``torch.initial_seed()`` is the CPU generator's own random seed, not the fixed default
    CUDA's generators would have used: there they start from that seed instead. Seed the program first.

    ``torch.manual_seed`` also seeds the MPS and XPU generators, which are not saved: after the block they stay
    as ``seed`` left them. Checking for CUDA calls ``torch.cuda.is_available()``, which asks the CUDA runtime for
    its devices (a process forked afterwards cannot use CUDA); with ``PYTORCH_NVML_BASED_CUDA_CHECK=1`` set, torch
    asks NVML instead and stays fork-safe.
    """
    seed = _check_seed(seed)
    cuda_initialised = _cuda_initialised()
    devices = list(range(torch.cuda.device_count())) if cuda_initialised else []
    entry_seed = torch.initial_seed()
    try:
        # fork_rng saves and restores the generators of the devices it is given, and only those; reading a
        # device's state initialises CUDA, so only devices of an initialised CUDA are given.
        with torch.random.fork_rng(devices=devices):
            torch.manual_seed(seed)
            yield
    finally:
        if not cuda_initialised and torch.cuda.is_available():
            torch.cuda.manual_seed_all(entry_seed)  # queued if CUDA is still not initialised: starts nothing


def rng_states(*generators: torch.Generator) -> dict:
    """Every random state a checkpoint needs for a resumed run to repeat the uninterrupted one bit for bit.

    Python's ``random``, NumPy's global generator (when NumPy is importable), torch's CPU generator, every CUDA
    device's (when CUDA is initialised) and each generator given — a ``DataLoader``'s ``generator``, a sampler's.
    Save it beside the model's and the optimizer's state dicts, and the epoch (a ``DistributedSampler`` needs
    ``set_epoch`` with the absolute epoch after the resume); :func:`restore_rng_states` puts it back. Every value
    is a tensor, a number, a string, ``None`` or a tuple or list of them, so ``torch.load(path, weights_only=True)``
    reads it back::

        torch.save({"model": model.state_dict(), "optimizer": optimizer.state_dict(), "epoch": epoch,
                    "rng": rng_states(loader_generator)}, path)
        ...
        checkpoint = torch.load(path, weights_only=True)
        restore_rng_states(checkpoint["rng"], loader_generator)
    """
    states: dict = {"random": random.getstate(), "torch": torch.get_rng_state(),
                    "generators": [generator.get_state() for generator in generators]}
    try:
        import numpy
    except ImportError:
        pass
    else:
        name, keys, position, has_gauss, cached = numpy.random.get_state()
        states["numpy"] = (name, keys.tolist(), int(position), int(has_gauss), float(cached))
    if _cuda_initialised():
        states["cuda"] = torch.cuda.get_rng_state_all()
    return states


def restore_rng_states(states: dict, *generators: torch.Generator) -> None:
    """Put back what :func:`rng_states` saved, into the same generators, given in the same order."""
    saved = states.get("generators", [])
    if len(saved) != len(generators):
        raise ValueError(f"restore_rng_states: the states hold {len(saved)} generator(s), {len(generators)} given: "
                         f"pass the generators rng_states was given, in the same order")
    random.setstate(tuple(tuple(part) if isinstance(part, list) else part for part in states["random"]))
    torch.set_rng_state(states["torch"])
    for generator, state in zip(generators, saved):
        generator.set_state(state)
    if "numpy" in states:
        try:
            import numpy
        except ImportError:
            raise ValueError("restore_rng_states: the states hold NumPy's generator, and NumPy cannot be "
                             "imported here") from None
        name, keys, position, has_gauss, cached = states["numpy"]
        numpy.random.set_state((name, numpy.asarray(keys, dtype=numpy.uint32), position, has_gauss, cached))
    if "cuda" in states and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(states["cuda"])


def _cuda_initialised() -> bool:
    return torch.cuda.is_available() and torch.cuda.is_initialized()


def same_parameters(a: nn.Module, b: nn.Module) -> bool:
    """True when both modules have the same parameter and buffer names, shapes, dtypes and bitwise values."""
    if not isinstance(a, nn.Module) or not isinstance(b, nn.Module):
        raise TypeError(f"same_parameters expects two nn.Module, got {type(a).__name__} and {type(b).__name__}")
    state_a, state_b = a.state_dict(), b.state_dict()
    if list(state_a) != list(state_b):
        return False
    for name, tensor_a in state_a.items():
        tensor_b = state_b[name]
        if tensor_a.dtype != tensor_b.dtype or tensor_a.shape != tensor_b.shape:
            return False
        tensor_b = tensor_b.to(tensor_a.device)  # no copy when it is already there
        if not torch.equal(_bits(tensor_a), _bits(tensor_b)):
            return False
    return True


def _bits(tensor: torch.Tensor) -> torch.Tensor:
    # Compare bit patterns, not values: torch.equal says NaN != NaN and 0.0 == -0.0.
    return tensor.detach().reshape(-1).contiguous().view(torch.uint8)
