"""The environment fingerprint: what a result depends on besides code and parameters.

The device is chosen here and only here (CUDA when present, else CPU; ``PITFALLS_DEVICE`` overrides).
"""

from __future__ import annotations

import contextlib
import functools
import os
import platform
import sys
from collections.abc import Iterator
from datetime import datetime, timezone

import torch


def pick_device() -> torch.device:
    """The device every experiment runs on: ``PITFALLS_DEVICE`` if set, else CUDA when present, else CPU."""
    requested = os.environ.get("PITFALLS_DEVICE")
    if requested:
        device = torch.device(requested)
        if device.type == "cuda" and not torch.cuda.is_available():
            raise RuntimeError(f"PITFALLS_DEVICE={requested!r} but torch.cuda.is_available() is False")
        return device
    return torch.device("cuda") if torch.cuda.is_available() else torch.device("cpu")


@functools.cache
def cpu_model() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as cpuinfo:
            for line in cpuinfo:
                if line.startswith(("model name", "Model", "Hardware")):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine() or "unknown CPU"


def device_name(device: torch.device | None = None) -> str:
    device = device or pick_device()
    if device.type == "cuda":
        return torch.cuda.get_device_name(device)
    return f"CPU ({cpu_model()})"


def start_method() -> str:
    """How DataLoader workers start unless told otherwise: the default multiprocessing start method (fork on Linux
    up to Python 3.13, forkserver from 3.14, spawn on macOS and Windows). It decides what worker start-up costs."""
    import multiprocessing

    return multiprocessing.get_context().get_start_method()


# Every experiment runs with one intra-op thread (``experiment_threads``). Where other programs hold cores, an
# operation split over all of them waits for the core another program holds and can run many times slower than
# alone; one thread is slowed only in proportion to the CPU the others take. The build uses the cores by running
# experiments side by side instead (``cache.prefetch``). An experiment that studies threads sets its own.
EXPERIMENT_THREADS = 1


# glibc's mallopt parameters (malloc.h) and the values pinned: blocks up to 32 MiB come from the heap, and up to
# 256 MiB freed at its top stay there
_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD = -1, -3
_PINNED = {_M_MMAP_THRESHOLD: 32 << 20, _M_TRIM_THRESHOLD: 256 << 20}


@functools.cache
def steady_allocator() -> bool:
    """Fix two of glibc malloc's thresholds in this process (``mallopt``), so that what an experiment costs does not
    depend on what the process freed before it: blocks up to 32 MiB (the most glibc accepts) come from the heap, and
    up to 256 MiB freed at its top stays there. By default glibc gives each block over 128 KiB its own ``mmap``,
    unmaps it on ``free`` and raises that limit whenever it frees a larger mapped block: a training step's tensors
    are then mapped and faulted in again at every step in one process and not in another. ``steps.lr_sweep`` alone
    in a fresh process spent 7.8 s of 33.4 s in the kernel, 0.3 s of 25.9 s pinned, about as long as it took in a
    build after other experiments. False where the C library has no ``mallopt`` (macOS, Windows): nothing to pin."""
    import ctypes
    import ctypes.util

    try:
        mallopt = ctypes.CDLL(ctypes.util.find_library("c")).mallopt
    except (OSError, AttributeError, TypeError):
        return False
    mallopt.argtypes, mallopt.restype = [ctypes.c_int, ctypes.c_int], ctypes.c_int
    return all([mallopt(parameter, value) == 1 for parameter, value in _PINNED.items()])  # each asked for


@contextlib.contextmanager
def experiment_threads() -> Iterator[None]:
    """Run the block with ``EXPERIMENT_THREADS`` intra-op threads, restoring the caller's count afterwards, in a
    process whose allocator is pinned (``steady_allocator``)."""
    steady_allocator()
    before = torch.get_num_threads()
    torch.set_num_threads(EXPERIMENT_THREADS)
    try:
        yield
    finally:
        torch.set_num_threads(before)


def fingerprint() -> dict[str, str | int]:
    """What makes a measurement machine-specific. Part of every cache key and every timing stamp.

    The Python version is in it because a DataLoader's per-sample overhead is CPython work; the start method
    because worker start-up is."""
    device = pick_device()
    return {
        "torch": torch.__version__,
        "device": str(device.type),
        "device_name": device_name(device),
        "cpu": cpu_model(),
        "threads": EXPERIMENT_THREADS,
        "python": platform.python_version(),
        "start_method": start_method(),
    }


def stamp(fp: dict | None = None, when: str | None = None) -> str:
    """One line naming the environment that produced a result."""
    fp = fp or fingerprint()
    parts = [f"torch {fp['torch']}", fp["device_name"], f"{fp['threads']} thread{'' if fp['threads'] == 1 else 's'}"]
    if fp.get("python"):
        parts.append(f"Python {fp['python']}")
    if fp["device"] != "cpu":  # on the CPU the device name already is the CPU model
        parts.append(f"CPU {fp['cpu']}")
    if when:
        parts.append(when[:10])
    return " · ".join(parts)


def describe() -> list[tuple[str, str]]:
    """Rows for the Environment page."""
    import matplotlib
    import numpy
    import scipy

    from .i18n import Verbatim

    device = pick_device()
    rows = [  # what the machine calls itself is shown as it is, in every language
        ("Device used by experiments", Verbatim(device_name(device))),
        ("CPU model", Verbatim(cpu_model())),
        ("Logical CPUs (os.cpu_count)", str(os.cpu_count())),
        ("torch intra-op threads (torch's default here; every experiment runs with "
         f"{EXPERIMENT_THREADS})", str(torch.get_num_threads())),
        ("torch inter-op threads", str(torch.get_num_interop_threads())),
        ("torch", torch.__version__),
        ("torch CUDA build", str(torch.version.cuda or "none (CPU build)")),
        ("CUDA available", "yes" if torch.cuda.is_available() else "no"),
        ("torch parallel backend", Verbatim(torch.__config__.parallel_info().splitlines()[-1].strip())
         if torch.__config__.parallel_info() else "unknown"),
        ("Python", sys.version.split()[0]),
        ("NumPy", numpy.__version__),
        ("SciPy (t quantiles and bootstrap for the 95% intervals)", scipy.__version__),
        ("Matplotlib", matplotlib.__version__),
        ("Operating system", Verbatim(platform.platform())),
        ("Built at (UTC)", datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M")),
    ]
    return rows
