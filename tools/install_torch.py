"""Install the torch build this machine can use, into the environment whose Python runs this file.

    python tools/install_torch.py            # what `make setup` runs, before the project's own packages

A machine with no NVIDIA driver gets torch's CPU build, from PyTorch's CPU wheel index, as PyTorch's own install
instructions give it (`pip install torch --index-url https://download.pytorch.org/whl/cpu`): about 0.8 GB
installed, where the default Linux build from PyPI brings the CUDA libraries (4–6 GB). A machine with a driver
gets the CUDA build that driver runs: PyPI's own when the driver supports its CUDA, else the newest of PyTorch's
CUDA indexes the driver supports. macOS and Windows take PyPI's build, which already fits them.

Two variables override the choice:

* ``TORCH_SPEC`` — which torch (default ``torch>=2.3``): ``TORCH_SPEC="torch==2.6.0"``;
* ``TORCH_INDEX_URL`` — where from: an index URL, or ``default`` for pip's own configuration (PyPI, or a mirror).

The choice is printed in one line. When the chosen PyTorch index cannot be reached, pip's default index is used
instead, and the line says so. Torch before 2.4 was built against NumPy 1.x: ``numpy<2`` is installed beside it.
"""

from __future__ import annotations

import os
import platform
import re
import subprocess
import sys
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

DEFAULT_SPEC = "torch>=2.3"
PYTORCH_INDEX = "https://download.pytorch.org/whl"
# PyTorch's CUDA indexes, newest first: a driver runs a build of its own CUDA version or older.
CUDA_INDEXES = ((13, 0), (12, 8), (12, 6), (11, 8))
# The CUDA version of the build PyPI serves on Linux (torch 2.9 and newer): a driver that supports it needs no index.
PYPI_CUDA = (13, 0)


@dataclass(frozen=True)
class Choice:
    """What to install and from where: pip's arguments after ``install``, and the line that says why."""

    args: tuple[str, ...]
    line: str


def driver_cuda(run: Callable[[list[str]], str | None] | None = None, proc: Path = Path("/proc/driver/nvidia/version")
                ) -> tuple[int, int] | None:
    """The newest CUDA version this machine's NVIDIA driver supports, (0, 0) when a driver is there but does not
    say; None when there is no driver."""
    text = (run or _output)(["nvidia-smi"])
    if text:
        found = re.search(r"CUDA Version:\s*(\d+)\.(\d+)", text)
        return (int(found.group(1)), int(found.group(2))) if found else (0, 0)
    return (0, 0) if proc.exists() else None


def _output(command: list[str]) -> str | None:
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=20, check=False)
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout if done.returncode == 0 else None


def reachable(url: str, timeout: float = 5.0) -> bool:
    """Whether a pip index answers at ``url`` (its page for torch)."""
    try:
        with urllib.request.urlopen(url.rstrip("/") + "/torch/", timeout=timeout) as response:
            return response.status < 400
    except (urllib.error.URLError, OSError, ValueError):
        return False


def choose(spec: str | None, index: str | None, system: str, machine: str, cuda: tuple[int, int] | None,
           can_reach: Callable[[str], bool] = reachable) -> Choice:
    """The torch to install: ``spec`` (``TORCH_SPEC``) from ``index`` (``TORCH_INDEX_URL``), or chosen for the
    machine (``system``, ``machine``: ``platform``'s; ``cuda``: ``driver_cuda()``)."""
    spec = (spec or "").strip() or DEFAULT_SPEC
    if index is not None and index.strip():
        index = index.strip()
        if index == "default":
            return Choice((spec,), f"torch: {spec} from pip's default index (TORCH_INDEX_URL=default)")
        return Choice((spec, "--index-url", index), f"torch: {spec} from {index} (TORCH_INDEX_URL)")
    if system != "Linux" or machine not in ("x86_64", "AMD64"):
        return Choice((spec,), f"torch: {spec} from pip's default index (on {system} {machine} that build fits the "
                               f"machine)")
    if cuda is None:
        wanted, why = f"{PYTORCH_INDEX}/cpu", "CPU build: no NVIDIA driver found"
    elif cuda >= PYPI_CUDA:
        return Choice((spec,), f"torch: {spec}, the CUDA build from pip's default index (the NVIDIA driver supports "
                               f"CUDA {cuda[0]}.{cuda[1]})")
    else:
        fits = next((v for v in CUDA_INDEXES if v <= cuda), None)
        if fits is None:
            wanted = f"{PYTORCH_INDEX}/cpu"
            why = (f"CPU build: the NVIDIA driver supports CUDA {cuda[0]}.{cuda[1]}, older than any CUDA build of "
                   f"torch" if cuda != (0, 0) else "CPU build: the NVIDIA driver does not say which CUDA it supports")
        else:
            wanted = f"{PYTORCH_INDEX}/cu{fits[0]}{fits[1]}"
            why = f"CUDA {fits[0]}.{fits[1]} build: the NVIDIA driver supports CUDA {cuda[0]}.{cuda[1]}"
    if not can_reach(wanted):
        return Choice((spec,), f"torch: {spec} from pip's default index — {wanted} cannot be reached (wanted for the "
                               f"{why}); on Linux PyPI's build carries CUDA (several GB). TORCH_INDEX_URL=… chooses "
                               f"another index")
    return Choice((spec, "--index-url", wanted), f"torch: {spec} from {wanted} ({why}; TORCH_SPEC and "
                                                 f"TORCH_INDEX_URL override)")


def main() -> int:
    choice = choose(os.environ.get("TORCH_SPEC"), os.environ.get("TORCH_INDEX_URL"), platform.system(),
                    platform.machine(), driver_cuda())
    print(choice.line, flush=True)
    pip = [sys.executable, "-m", "pip", "install", "--quiet"]
    if subprocess.call([*pip, *choice.args]) != 0:
        print(f"install_torch: pip could not install {' '.join(choice.args)}", file=sys.stderr)
        return 1
    # read without importing torch: importing it before NumPy is there prints "Failed to initialize NumPy"
    from importlib.metadata import version

    installed = tuple(int(part) for part in re.findall(r"\d+", version("torch"))[:2])
    if installed < (2, 4):
        return subprocess.call([*pip, "numpy<2"])
    return 0


if __name__ == "__main__":
    sys.exit(main())
