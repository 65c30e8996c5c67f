"""Timings on a busy machine: re-measure every timing idle, then with busy-loop processes beside the build.

Builds a throwaway copy of the project (with a copy of the caches, so only timing experiments run) twice with
``REFRESH=timing``: once as the machine is, once with two busy-loop processes (bounded: they are stopped by this
script, and killed at the latest after ``--busy-limit`` seconds). Then, page by page, it pairs the ratios the
two builds print ("7.7× (7.4–8.1)", "61% (58–64)", in page order) and reports:

* every ratio whose idle and busy intervals do not overlap and that the busy page prints as a finding, with no
  noise warning naming it — a finding that noise changed (target: none);
* the ratios whose intervals do not overlap but which the busy page flags as noisy (its warning names them, with
  the spread or the other programs' share of the CPU, or the claim quoting them is shown as undecided on this
  machine): the site said it was busy, as it should;
* every noise warning, number marked noisy and undecided claim shown in the idle build (target: none), each
  named.

    python benchmarks/noise.py [--busy 2] [--busy-limit 1800]
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from edit_rebuild import project_copy  # noqa: E402

PAGES = ["index.html", "loader-overhead/index.html", "update-steps/index.html"]
# "7.7× (7.4–8.1)" and "61% (58–64)": every ratio and share printed with its interval
RATIO = re.compile(r"([\d.,]+)[×%] \(([\d.,]+)–([\d.,]+)(, noisy)?\)")
UNDECIDED = re.compile(r'<span class="pitfalls-claim pitfalls-claim--undecided"[^>]*>(.*?)</span>', flags=re.S)


def _busy(limit: float) -> None:
    end = time.monotonic() + limit
    while time.monotonic() < end:
        pass


def _build(copy: Path, site: Path) -> tuple[float, str]:
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1", "PITFALLS_CACHE_DIR": str(copy / ".cache" / "results"),
           "REFRESH": "timing"}
    start = time.monotonic()
    process = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "-d", str(site)], cwd=copy,
                             env=env, capture_output=True, text=True)
    if process.returncode != 0:
        sys.exit(f"the build failed:\n{process.stderr[-4000:]}")
    return time.monotonic() - start, process.stderr


def _numbers(html: str, *, marked: bool = False) -> list[tuple[float, float, float]]:
    """Every value with its interval, in page order; ``marked``: only those the page marks ", noisy"."""
    return [tuple(float(x.replace(",", "")) for x in match[:3])
            for match in RATIO.findall(re.sub(r"<[^>]+>", "", re.sub(r"<code>.*?</code>", "", html, flags=re.S)))
            if match[3] or not marked]


def _ratios(html: str) -> list[tuple[float, float, float]]:
    """The ratios the page prints as findings, in page order (the noise warnings repeat some: left out)."""
    return _numbers(re.sub(r'<div class="admonition warning">.*?</div>', "", html, flags=re.S))


def _warned(html: str) -> list[str]:
    """What the page's noise warnings name, one line each ("name: 7.7× (7.4–8.1), spread ±2%")."""
    lines = []
    for box in re.findall(r'<div class="admonition warning">(.*?)</div>', html, flags=re.S):
        if "Noisy measurement" in box:
            lines += [re.sub(r"\s+", " ", re.sub(r"<[^>]+>", "", item)).strip()
                      for item in re.findall(r"<li>(.*?)</li>", box, flags=re.S)]
    return lines


def _flagged(html: str) -> set[tuple[float, float, float]]:
    """The ratios the page says are not findings: marked ", noisy" where they are printed, named by a noise
    warning, or inside a claim shown as undecided on this machine."""
    flagged = {number for line in _warned(html) for number in _numbers(line)}
    flagged |= set(_numbers(html, marked=True))
    return flagged | {number for claim in UNDECIDED.findall(html) for number in _numbers(claim)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--busy", type=int, default=2, help="busy-loop processes beside the second build")
    parser.add_argument("--busy-limit", type=float, default=1800.0, help="seconds after which they stop anyway")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="pitfalls-noise-") as tmp:
        copy = project_copy(Path(tmp))
        idle_s, _ = _build(copy, copy / "idle")
        loops = [multiprocessing.get_context("spawn").Process(target=_busy, args=(args.busy_limit,), daemon=True)
                 for _ in range(args.busy)]
        for loop in loops:
            loop.start()
        try:
            busy_s, _ = _build(copy, copy / "busy")
        finally:
            for loop in loops:
                loop.terminate()
                loop.join(timeout=10)
        report, said_busy, flagged, total, busy_warnings = [], [], [], 0, 0
        for page in PAGES:
            idle_html = (copy / "idle" / page).read_text(encoding="utf-8")
            busy_html = (copy / "busy" / page).read_text(encoding="utf-8")
            idle, busy = _ratios(idle_html), _ratios(busy_html)
            busy_flagged = _flagged(busy_html)
            busy_warnings += len(_warned(busy_html))
            if len(idle) != len(busy):
                report.append(f"{page}: {len(idle)} ratios idle but {len(busy)} busy (a table changed shape)")
            for i, (a, b) in enumerate(zip(idle, busy)):
                total += 1
                if a[2] < b[1] or b[2] < a[1]:
                    line = f"{page} ratio #{i + 1}: idle {a[0]}× ({a[1]}–{a[2]}) vs busy {b[0]}× ({b[1]}–{b[2]})"
                    (said_busy if b in busy_flagged else report).append(line)
            flagged += [f"{page}: noise warning: {line}" for line in _warned(idle_html)]
            flagged += [f"{page}: marked noisy: {value}× ({low}–{high})"
                        for value, low, high in _numbers(idle_html, marked=True)]
            flagged += [f"{page}: undecided claim" for _ in range(idle_html.count("pitfalls-claim--undecided"))]
    print("| build (REFRESH=timing) | seconds |")
    print("| --- | ---: |")
    print(f"| idle | {idle_s:.0f} |")
    print(f"| with {args.busy} busy-loop processes | {busy_s:.0f} |")
    print(f"\nRatios compared: {total}. Idle and busy intervals that do not overlap, printed as findings by the "
          f"busy build (target: none): {len(report)}")
    for line in report:
        print(f"- {line}")
    print(f"Idle and busy intervals that do not overlap, flagged as noisy by the busy build: {len(said_busy)} "
          f"(the busy build's warnings name {busy_warnings} ratios)")
    for line in said_busy:
        print(f"- {line}")
    print(f"Warnings, numbers marked noisy or undecided claims in the idle build (target: none): {len(flagged)}")
    for line in flagged:
        print(f"- {line}")
    return 1 if report or flagged else 0


if __name__ == "__main__":
    raise SystemExit(main())
