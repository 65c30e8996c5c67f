"""The torch `make setup` installs (tools/install_torch.py): the command it builds for each kind of machine, the
variables that override it, and the fallback when PyTorch's index cannot be reached. Nothing is downloaded."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))

import install_torch  # noqa: E402
from install_torch import PYTORCH_INDEX, choose, driver_cuda  # noqa: E402


def reach_all(url: str) -> bool:
    return True


def reach_none(url: str) -> bool:
    return False


def test_a_linux_machine_without_a_driver_gets_the_cpu_build_from_pytorchs_index():
    choice = choose(None, None, "Linux", "x86_64", None, reach_all)
    assert choice.args == ("torch>=2.3", "--index-url", f"{PYTORCH_INDEX}/cpu")
    assert "CPU build" in choice.line and "no NVIDIA driver" in choice.line
    assert "\n" not in choice.line


def test_torch_spec_is_installed_from_the_index_the_machine_needs():
    choice = choose("torch==2.6.0", None, "Linux", "x86_64", None, reach_all)
    assert choice.args == ("torch==2.6.0", "--index-url", f"{PYTORCH_INDEX}/cpu")


@pytest.mark.parametrize("cuda, index", [((12, 4), "cu118"), ((12, 6), "cu126"), ((12, 7), "cu126"),
                                         ((12, 9), "cu128"), ((11, 8), "cu118")])
def test_an_older_driver_gets_the_newest_cuda_build_it_runs(cuda, index):
    choice = choose(None, None, "Linux", "x86_64", cuda, reach_all)
    assert choice.args == ("torch>=2.3", "--index-url", f"{PYTORCH_INDEX}/{index}")
    assert f"CUDA {cuda[0]}.{cuda[1]}" in choice.line


def test_a_driver_that_runs_pypis_build_takes_it_from_the_default_index():
    choice = choose(None, None, "Linux", "x86_64", (13, 1), reach_none)
    assert choice.args == ("torch>=2.3",)
    assert "CUDA build" in choice.line


def test_a_driver_too_old_for_any_cuda_build_gets_the_cpu_build():
    choice = choose(None, None, "Linux", "x86_64", (11, 2), reach_all)
    assert choice.args[-1] == f"{PYTORCH_INDEX}/cpu"
    assert "older than any CUDA build" in choice.line


def test_an_unreachable_index_falls_back_to_the_default_index_and_says_so():
    choice = choose("torch==2.13.0", None, "Linux", "x86_64", None, reach_none)
    assert choice.args == ("torch==2.13.0",)
    assert f"{PYTORCH_INDEX}/cpu cannot be reached" in choice.line
    assert "TORCH_INDEX_URL" in choice.line


@pytest.mark.parametrize("system, machine", [("Darwin", "arm64"), ("Windows", "AMD64"), ("Linux", "aarch64")])
def test_other_platforms_take_the_default_indexs_build(system, machine):
    asked = []
    choice = choose(None, None, system, machine, None, lambda url: asked.append(url) or True)
    assert choice.args == ("torch>=2.3",) and not asked


def test_torch_index_url_overrides_the_choice():
    assert choose("torch==2.6.0", "https://example.org/simple", "Linux", "x86_64", None, reach_none).args == (
        "torch==2.6.0", "--index-url", "https://example.org/simple")
    default = choose(None, "default", "Linux", "x86_64", None, reach_none)
    assert default.args == ("torch>=2.3",) and "TORCH_INDEX_URL=default" in default.line


def test_the_driver_is_read_from_nvidia_smi_or_proc(tmp_path):
    smi = "| NVIDIA-SMI 550.54.15   Driver Version: 550.54.15   CUDA Version: 12.4     |"
    assert driver_cuda(lambda command: smi, tmp_path / "absent") == (12, 4)
    assert driver_cuda(lambda command: "no version here", tmp_path / "absent") == (0, 0)
    assert driver_cuda(lambda command: None, tmp_path / "absent") is None
    proc = tmp_path / "version"
    proc.write_text("NVRM version: NVIDIA UNIX x86_64 Kernel Module  550.54.15\n")
    assert driver_cuda(lambda command: None, proc) == (0, 0)


def test_a_driver_that_does_not_say_its_cuda_gets_the_cpu_build():
    choice = choose(None, None, "Linux", "x86_64", (0, 0), reach_all)
    assert choice.args[-1] == f"{PYTORCH_INDEX}/cpu" and "does not say" in choice.line


def test_the_script_prints_its_choice_in_one_line_and_runs_pip(monkeypatch, capsys):
    calls = []
    monkeypatch.setenv("TORCH_SPEC", "torch==2.13.0")
    monkeypatch.setenv("TORCH_INDEX_URL", "default")
    monkeypatch.setattr(install_torch.subprocess, "call", lambda command: calls.append(command) or 0)
    assert install_torch.main() == 0
    out = capsys.readouterr().out
    assert out.count("\n") == 1 and out.startswith("torch: torch==2.13.0")
    assert calls[0][-1] == "torch==2.13.0" and calls[0][1:4] == ["-m", "pip", "install"]
    # the torch of this environment is 2.4 or newer: no NumPy 1.x pinned beside it
    assert len(calls) == 1


def test_a_failing_pip_is_said(monkeypatch, capsys):
    monkeypatch.setenv("TORCH_INDEX_URL", "default")
    monkeypatch.setattr(install_torch.subprocess, "call", lambda command: 1)
    assert install_torch.main() == 1
    assert "could not install" in capsys.readouterr().err


def test_the_makefile_installs_torch_through_the_script():
    dry = subprocess.run(["make", "-n", "-B", "setup", "VENV=/nonexistent-venv"], cwd=ROOT, capture_output=True,
                         text=True)
    assert "tools/install_torch.py" in dry.stdout
    assert "import torch" not in dry.stdout  # importing torch before NumPy is there alarms the log
