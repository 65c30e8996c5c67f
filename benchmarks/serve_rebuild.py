"""Rebuild latency under ``make serve``: from saving a one-word edit of a page to the new page being served.

Runs the Makefile's ``serve`` recipe on a throwaway copy of the project (docs, snippets, overrides, config),
sharing this environment and the project's result cache, so nothing that is cached re-runs. Waits for the first
build, then edits one word of a topic page several times and times each edit until the server returns the new
text (the latency a writer sees, including MkDocs' file-watch delay). Target on the 2-core reference machine:
median <= 5 s when no experiment has to re-run.

    python benchmarks/serve_rebuild.py [--edits 3] [--page docs/loader-overhead.md]
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TARGET_S = 5.0


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _get(url: str) -> str:
    try:
        with urllib.request.urlopen(url, timeout=10) as response:
            return response.read().decode("utf-8")
    except (urllib.error.URLError, ConnectionError, TimeoutError):
        return ""


def _wait(predicate, timeout: float, process: subprocess.Popen, log: Path, what: str) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        if process.poll() is not None:
            sys.exit(f"make serve exited while waiting for {what}:\n{log.read_text()[-4000:]}")
        time.sleep(0.05)
    sys.exit(f"timed out waiting for {what}:\n{log.read_text()[-4000:]}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--edits", type=int, default=3, help="how many one-word edits to time")
    parser.add_argument("--page", default="docs/loader-overhead.md", help="the page to edit")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="pitfalls-serve-") as tmp:
        copy = Path(tmp)
        for name in ("docs", "snippets", "overrides"):
            shutil.copytree(ROOT / name, copy / name, ignore=shutil.ignore_patterns("__pycache__"))
        for name in ("mkdocs.yml", "Makefile", "pyproject.toml"):
            shutil.copy2(ROOT / name, copy / name)
        port = _free_port()
        base = f"http://127.0.0.1:{port}/"
        page_url = base + Path(args.page).stem + "/"
        env = {**os.environ, "NO_MKDOCS_2_WARNING": "1",
               "PITFALLS_CACHE_DIR": os.environ.get("PITFALLS_CACHE_DIR") or str(ROOT / ".cache" / "results")}
        env.pop("REFRESH", None)
        log = copy / "serve.log"
        with log.open("w") as out:
            # -o: never re-run setup from the copy (it would repoint the editable install at it).
            process = subprocess.Popen(["make", "--no-print-directory", "-o", f"{sys.prefix}/.pitfalls-installed",
                                        "serve", f"VENV={sys.prefix}", f"PORT={port}"], cwd=copy, env=env, stdout=out,
                                       stderr=subprocess.STDOUT, start_new_session=True)
        try:
            start = time.monotonic()
            _wait(lambda: _get(page_url), 1800, process, log, "the first build")
            first = time.monotonic() - start
            page = copy / args.page
            original = page.read_text()
            heading = next(line for line in original.splitlines() if line.startswith("# "))
            latencies = []
            for edit in range(args.edits):
                word = f"editword{edit}"
                page.write_text(original.replace(heading, f"{heading} {word}", 1))
                saved = time.monotonic()
                _wait(lambda: word in _get(page_url), 300, process, log, f"edit {edit + 1}")
                latencies.append(time.monotonic() - saved)
                time.sleep(1.0)  # let the reload settle before the next edit
            text = log.read_text()
        finally:
            os.killpg(process.pid, signal.SIGINT)
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
    builds = [float(x) for x in re.findall(r"Documentation built in ([\d.]+) seconds", text)]
    reruns = text.count("pitfalls: running")
    median = statistics.median(latencies)
    print("| make serve | seconds | target | within |")
    print("| --- | ---: | ---: | :---: |")
    print(f"| first build (warm cache) until served | {first:.1f} | | |")
    print(f"| one-word edit of {args.page} until served, median of {len(latencies)} "
          f"({', '.join(f'{x:.1f}' for x in latencies)}) | {median:.1f} | ≤ {TARGET_S:.0f} | "
          f"{'yes' if median <= TARGET_S else 'NO'} |")
    if builds[1:]:
        print(f"| MkDocs' own rebuild time, median | {statistics.median(builds[1:]):.1f} | | |")
    print(f"| experiments re-run while serving | {reruns} | 0 | {'yes' if reruns == 0 else 'NO'} |")
    return 0 if median <= TARGET_S and reruns == 0 else 1


if __name__ == "__main__":
    raise SystemExit(main())
