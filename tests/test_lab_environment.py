"""The environment fingerprint: the device choice (``PITFALLS_DEVICE``), the fingerprint, the stamp, the rows of
the Environment page. The CUDA paths run on any machine: availability and device names are patched."""

from __future__ import annotations

import multiprocessing
import os
import platform
from types import SimpleNamespace
from datetime import datetime, timezone

import pytest
import torch

from snippets.lab import environment, render
from snippets.lab.environment import cpu_model, device_name, fingerprint, pick_device, stamp


@pytest.fixture()
def no_cuda(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    monkeypatch.delenv("PITFALLS_DEVICE", raising=False)


@pytest.fixture()
def fake_cuda(monkeypatch):
    """CUDA that says it is there; its device names are recorded when asked for."""
    asked = []
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "get_device_name", lambda device=None: asked.append(device) or "Fake GPU 80GB")
    monkeypatch.delenv("PITFALLS_DEVICE", raising=False)
    return asked


def test_cpu_without_cuda(no_cuda):
    assert pick_device() == torch.device("cpu")


def test_cuda_when_present(fake_cuda):
    assert pick_device() == torch.device("cuda")


@pytest.mark.parametrize("requested", ["cpu", "meta"])
def test_pitfalls_device_overrides_cuda(fake_cuda, monkeypatch, requested):
    monkeypatch.setenv("PITFALLS_DEVICE", requested)
    assert pick_device() == torch.device(requested)


def test_pitfalls_device_picks_one_gpu(fake_cuda, monkeypatch):
    monkeypatch.setenv("PITFALLS_DEVICE", "cuda:1")
    assert pick_device() == torch.device("cuda", 1)


@pytest.mark.parametrize("requested", ["cpu", "meta"])
def test_pitfalls_device_without_cuda(no_cuda, monkeypatch, requested):
    monkeypatch.setenv("PITFALLS_DEVICE", requested)
    assert pick_device() == torch.device(requested)


@pytest.mark.parametrize("requested", ["cuda", "cuda:0"])
def test_asking_for_cuda_without_it_is_an_error(no_cuda, monkeypatch, requested):
    monkeypatch.setenv("PITFALLS_DEVICE", requested)
    with pytest.raises(RuntimeError) as raised:
        pick_device()
    assert str(raised.value) == f"PITFALLS_DEVICE={requested!r} but torch.cuda.is_available() is False"


def test_empty_pitfalls_device_means_the_default(fake_cuda, monkeypatch):
    monkeypatch.setenv("PITFALLS_DEVICE", "")
    assert pick_device() == torch.device("cuda")


def test_device_names(fake_cuda):
    assert device_name(torch.device("cpu")) == f"CPU ({cpu_model()})"
    assert device_name(torch.device("cuda", 1)) == "Fake GPU 80GB"
    assert fake_cuda == [torch.device("cuda", 1)]
    assert device_name() == "Fake GPU 80GB", "no device given: the one experiments run on"
    assert fake_cuda[-1] == torch.device("cuda")


def test_cpu_model_is_named():
    assert cpu_model() and cpu_model() == cpu_model().strip()


PYTHON = platform.python_version()


def test_fingerprint_on_the_cpu(no_cuda):
    assert fingerprint() == {"torch": torch.__version__, "device": "cpu", "device_name": f"CPU ({cpu_model()})",
                             "cpu": cpu_model(), "threads": environment.EXPERIMENT_THREADS, "python": PYTHON,
                             "start_method": multiprocessing.get_start_method()}


def test_fingerprint_on_cuda(fake_cuda):
    assert fingerprint() == {"torch": torch.__version__, "device": "cuda", "device_name": "Fake GPU 80GB",
                             "cpu": cpu_model(), "threads": environment.EXPERIMENT_THREADS, "python": PYTHON,
                             "start_method": multiprocessing.get_start_method()}
    assert fake_cuda == [torch.device("cuda")]


def test_the_start_method_is_what_workers_would_use(monkeypatch):
    assert environment.start_method() in {"fork", "spawn", "forkserver"}
    monkeypatch.setattr(multiprocessing, "get_context", lambda method=None: SimpleNamespace(
        get_start_method=lambda: "spawn"))
    assert environment.start_method() == "spawn" and fingerprint()["start_method"] == "spawn"


def test_the_python_version_is_stamped_when_known():
    assert stamp({**CPU_FP, "python": "3.11.9"}) == "torch 2.13.0+cpu · CPU (Ryzen 5) · 6 threads · Python 3.11.9"
    assert stamp({**CPU_FP, "threads": 1}).endswith("· 1 thread")


CPU_FP = {"torch": "2.13.0+cpu", "device": "cpu", "device_name": "CPU (Ryzen 5)", "cpu": "Ryzen 5", "threads": 6}
GPU_FP = {"torch": "2.13.0+cu128", "device": "cuda", "device_name": "NVIDIA H200", "cpu": "Xeon 8480", "threads": 16}


def test_stamp_names_the_cpu_once_on_the_cpu():
    assert stamp(CPU_FP) == "torch 2.13.0+cpu · CPU (Ryzen 5) · 6 threads"
    assert stamp(CPU_FP, "2026-01-02T03:04:05+00:00") == "torch 2.13.0+cpu · CPU (Ryzen 5) · 6 threads · 2026-01-02"


def test_stamp_names_gpu_and_cpu_on_cuda():
    assert stamp(GPU_FP, "2026-01-02T03:04:05+00:00") == \
        "torch 2.13.0+cu128 · NVIDIA H200 · 16 threads · CPU Xeon 8480 · 2026-01-02"


def test_stamp_of_this_machine(no_cuda):
    assert stamp() == stamp(fingerprint())


class _FixedClock(datetime):
    asked: list = []

    @classmethod
    def now(cls, tz=None):
        cls.asked.append(tz)
        return datetime(2026, 3, 4, 5, 6, 7, tzinfo=tz)


@pytest.fixture()
def described(monkeypatch, no_cuda):
    monkeypatch.setattr(torch.__config__, "parallel_info",
                        lambda: "ATen/Parallel:\n\tat::get_num_threads() : 2\nATen parallel backend: OpenMP\n")
    monkeypatch.setattr(torch.version, "cuda", None)
    monkeypatch.setattr(os, "cpu_count", lambda: 12)
    monkeypatch.setattr(environment, "datetime", _FixedClock)
    _FixedClock.asked = []
    return dict(environment.describe())


def test_environment_rows(described):
    import matplotlib
    import numpy
    import scipy

    assert described == {
        "Device used by experiments": f"CPU ({cpu_model()})",
        "CPU model": cpu_model(),
        "Logical CPUs (os.cpu_count)": "12",
        "torch intra-op threads (torch's default here; every experiment runs with 1)": str(torch.get_num_threads()),
        "torch inter-op threads": str(torch.get_num_interop_threads()),
        "torch": torch.__version__,
        "torch CUDA build": "none (CPU build)",
        "CUDA available": "no",
        "torch parallel backend": "ATen parallel backend: OpenMP",
        "Python": platform.python_version(),
        "NumPy": numpy.__version__,
        "SciPy (t quantiles and bootstrap for the 95% intervals)": scipy.__version__,
        "Matplotlib": matplotlib.__version__,
        "Operating system": platform.platform(),
        "Built at (UTC)": "2026-03-04 05:06",
    }
    assert _FixedClock.asked == [timezone.utc]


def test_environment_rows_are_in_page_order(described):
    assert list(described)[:3] == ["Device used by experiments", "CPU model", "Logical CPUs (os.cpu_count)"]
    assert list(described)[-1] == "Built at (UTC)"


def test_environment_rows_on_a_cuda_build(monkeypatch, fake_cuda):
    monkeypatch.setattr(torch.version, "cuda", "12.8")
    monkeypatch.setattr(torch.__config__, "parallel_info", lambda: "")
    rows = dict(environment.describe())
    assert rows["torch CUDA build"] == "12.8" and rows["CUDA available"] == "yes"
    assert rows["Device used by experiments"] == "Fake GPU 80GB"
    assert rows["torch parallel backend"] == "unknown"


def test_environment_table(described):
    text = render.environment_table()
    lines = text.splitlines()
    assert lines[0].count("|") == 3 and lines[0].endswith(" | value |") and lines[1] == "| :--- | :--- |"
    assert "| Logical CPUs (os.cpu_count) | 12 |" in lines and "| Built at (UTC) | 2026-03-04 05:06 |" in lines
    assert len(lines) == 2 + 15 and text.endswith("\n")


@pytest.mark.skipif(platform.system() != "Linux", reason="mallopt is glibc's; elsewhere there is nothing to pin "
                                                           "(steady_allocator says False)")
def test_glibc_accepts_the_pinned_thresholds():
    """Pinned in a fresh process: glibc refuses an mmap threshold over 32 MiB (mallopt returns 0). What pinning saves
    is measured, not tested here: benchmarks/busy_build.py times steps.lr_sweep in a build, quiet and busy."""
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-c", "from snippets.lab import environment; "
                           "print(environment.steady_allocator())"], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and done.stdout.split() == ["True"], done.stdout + done.stderr


def _libc(accepts):  # noqa: ANN001, ANN202 - a C library whose mallopt records what it is asked
    asked = []

    def mallopt(parameter, value):
        asked.append((parameter, value))
        return 1 if accepts(parameter, value) else 0

    return SimpleNamespace(mallopt=mallopt), asked


@pytest.mark.parametrize("accepts, pinned", [(lambda p, v: True, True), (lambda p, v: v <= 32 << 20, False)])
def test_both_thresholds_are_asked_for_and_a_refusal_is_said(monkeypatch, accepts, pinned):
    import ctypes

    libc, asked = _libc(accepts)
    monkeypatch.setattr(ctypes, "CDLL", lambda name: libc)
    environment.steady_allocator.cache_clear()
    try:
        assert environment.steady_allocator() is pinned
        # M_MMAP_THRESHOLD (-3): blocks up to 32 MiB from the heap; M_TRIM_THRESHOLD (-1): 256 MiB kept at its top
        assert sorted(asked) == [(-3, 32 << 20), (-1, 256 << 20)]
    finally:
        environment.steady_allocator.cache_clear()


def test_every_experiment_runs_with_the_allocator_pinned(monkeypatch):
    calls = []
    monkeypatch.setattr(environment, "steady_allocator", lambda: calls.append("pinned"))
    with environment.experiment_threads():
        assert calls == ["pinned"] and torch.get_num_threads() == environment.EXPERIMENT_THREADS


def test_without_mallopt_nothing_is_pinned(monkeypatch):
    import ctypes

    monkeypatch.setattr(ctypes, "CDLL", lambda name: SimpleNamespace())  # a C library without mallopt
    environment.steady_allocator.cache_clear()
    try:
        assert environment.steady_allocator() is False
    finally:
        environment.steady_allocator.cache_clear()
