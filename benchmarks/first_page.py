"""The rebuilder's first minutes: ``make serve`` on a fresh clone, timed as a newcomer lives it.

A copy of the tree as a clone has it (the files git tracks, no ``.cache``, no ``.venv``) runs the Makefile's
``serve`` recipe with its own environment. Reported, in seconds from the start: the installs finished (the first
line ``make serve`` prints), the first page answering at ``http://127.0.0.1:<port>/``, and every value being this
machine's (``make serve`` says so); then the environment's size and the log lines a reader could take for alarms.
Targets on the 2-core reference machine: a page within 180 s of the installs, the environment under 2 GB on a
machine without an NVIDIA driver, and no ERROR line in the log.

    python benchmarks/first_page.py [--venv PATH] [--keep]   # --venv: reuse a set-up environment (skips the installs)
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FIRST_PAGE_S = 180.0
VENV_LIMIT_BYTES = 2 * 1024**3
# lines of a build log that read as alarms to a reader (tests/test_site.py reads the build log with these too)
ALARMS = re.compile(r"\bERROR\b|USDT:|No CUDA runtime|gpuGetDeviceCount|Failed to initialize NumPy|"
                    r"without encryption|Traceback|^\s+File \"[^\"]+\", line \d+", re.M)


def fresh_clone(dest: Path) -> Path:
    """The files a clone of this tree holds (tracked, and new files git does not ignore), nothing it builds."""
    listed = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=ROOT,
                            capture_output=True, check=True).stdout.decode().split("\0")
    for name in filter(None, listed):
        source = ROOT / name
        if source.is_file():
            (dest / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, dest / name)
    return dest


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _answers(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=5) as response:
            return response.status == 200
    except (urllib.error.URLError, ConnectionError, TimeoutError):
        return False


def size_of(path: Path) -> int:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file() and not f.is_symlink())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--venv", type=Path, help="a set-up environment to reuse (its installs are not timed)")
    parser.add_argument("--timeout", type=float, default=3600, help="give up after this many seconds")
    parser.add_argument("--keep", action="store_true", help="keep the clone (its .cache holds what it measured)")
    args = parser.parse_args(argv)
    folder = tempfile.mkdtemp(prefix="pitfalls-first-page-")
    try:
        return _run(args, folder)
    finally:
        if args.keep:
            print(f"the clone is kept in {folder}/clone")
        else:
            shutil.rmtree(folder, ignore_errors=True)


def _run(args: argparse.Namespace, folder: str) -> int:
    clone = fresh_clone(Path(folder) / "clone")
    port = _free_port()
    command = ["make", "--no-print-directory", "serve", f"PORT={port}"]
    if args.venv:
        venv = args.venv.resolve()
        command += [f"VENV={venv}", "-o", f"{venv}/.pitfalls-installed"]
    log_path = Path(folder) / "serve.log"
    env = {key: value for key, value in os.environ.items() if not key.startswith("PITFALLS_")}
    env.update(NO_MKDOCS_2_WARNING="1")
    if args.venv:  # the reused environment's editable install points at this tree: the clone's code and cache first
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(clone), env.get("PYTHONPATH")]))
    start = time.monotonic()
    marks: dict[str, float] = {}
    with log_path.open("w") as log:
        process = subprocess.Popen(command, cwd=clone, env=env, stdout=log, stderr=subprocess.STDOUT,
                                   start_new_session=True)
    try:
        while time.monotonic() - start < args.timeout and process.poll() is None:
            text = log_path.read_text(errors="replace")
            now = time.monotonic() - start
            if "installs" not in marks and "make serve: building the site" in text:
                marks["installs"] = now
            if "first page" not in marks and "installs" in marks and _answers(f"http://127.0.0.1:{port}/"):
                marks["first page"] = now
            if "first page" in marks and ("every value on the site is now its own" in text
                                          or "every value on the site was measured" in text):
                marks["all measured"] = now
                break
            if "measuring this machine failed" in text:
                marks["measuring failed"] = now
                break
            time.sleep(1)
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGINT)
            try:
                process.wait(60)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
    text = log_path.read_text(errors="replace")
    venv_bytes = size_of(args.venv.resolve() if args.venv else clone / ".venv")
    alarms = [line for line in text.splitlines() if ALARMS.search(line)]
    print(f"make serve from a fresh clone ({'reused environment' if args.venv else 'fresh environment'}):")
    for name, seconds in marks.items():
        print(f"  {name}: {seconds:.0f} s")
    print(f"  environment: {venv_bytes / 1024**3:.2f} GB")
    print(f"  log lines that read as alarms: {len(alarms)}")
    for line in alarms[:20]:
        print(f"    {line}")
    # pip's notes on this machine's own configuration (an index folder it lacks) are not the project's
    warnings = [line for line in text.splitlines()
                if re.search(r"\bWARNING\b", line) and not line.startswith("WARNING: Location '")]
    print(f"  warnings in the log (pip's notes on its configuration left out): {len(warnings)}")
    for line in warnings[:10]:
        print(f"    {line}")
    first = marks.get("first page", float("inf")) - marks.get("installs", 0.0)
    missed = []
    if first > FIRST_PAGE_S:
        missed.append(f"first page {first:.0f} s after the installs (target {FIRST_PAGE_S:.0f} s)")
    if "all measured" not in marks:
        missed.append("not every value became this machine's")
    if alarms:
        missed.append(f"{len(alarms)} alarming log lines")
    if not args.venv and venv_bytes > VENV_LIMIT_BYTES and not Path("/proc/driver/nvidia/version").exists():
        missed.append(f"environment {venv_bytes / 1024**3:.1f} GB on a machine without an NVIDIA driver")
    if missed:
        print("Missed: " + "; ".join(missed))
        print(f"(log: last lines)\n{text[-3000:]}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
