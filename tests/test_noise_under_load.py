"""On a busy machine a timing ratio is either flagged as noisy or still contains the quiet machine's value.

Two functions doing 1× and 3× the same work are timed in alternation, once on a quiet machine and once with two
busy-loop processes beside them (as many as this machine has cores, at most two; stopped by the test). What the
page would print must not be a wrong finding: the busy ratio is flagged as noisy (the page shows the warning),
or its interval reaches the quiet one, or it agrees with the quiet value within the ±10% the page promises.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest

from snippets.lab import render, timing

pytestmark = pytest.mark.measures  # CI runs this file on its first Python only (.ci/run)


def _start_busy_loop(limit_s: int = 300) -> int:
    """A busy loop in another program (not a child of this process, whose children count as its own work: they
    are DataLoader workers): started through a shell that exits at once. Returns its pid; it ends by itself
    after ``limit_s`` seconds at the latest."""
    shell = subprocess.run(["sh", "-c", f"{sys.executable} -c 'import time\nend = time.time() + {limit_s}\n"
                                        f"while time.time() < end: pass' >/dev/null 2>&1 & echo $!"],
                           capture_output=True, text=True, check=True)
    return int(shell.stdout.strip())


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def _work(repeat: int):
    data = list(range(2000))

    def run() -> None:
        for _ in range(repeat):
            sorted(data, reverse=True)
    return run


def _ratio(kind: str) -> dict:
    timings = timing.interleaved({"once": _work(1), "thrice": _work(3)}, rounds=8, min_run_time=0.8,
                                 block_time=0.005, kind=kind)
    return timing.ratio(timings["thrice"], timings["once"])


@pytest.mark.parametrize("kind", ["cpu", "wall"])
def test_a_busy_machine_shows_a_warning_or_an_interval_containing_the_quiet_value(kind):
    quiet = _ratio(kind)
    loops = [_start_busy_loop() for _ in range(min(2, os.cpu_count() or 1))]
    try:
        busy = _ratio(kind)
    finally:
        for pid in loops:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
    deadline = time.monotonic() + 10
    while any(_alive(pid) for pid in loops) and time.monotonic() < deadline:
        time.sleep(0.05)
    warning = render.noise_warning([("thrice × once", busy)] if timing.is_noisy(busy) else [])
    wide = timing.is_wide(busy)  # its printed range says so
    # Not a wrong finding: the busy interval reaches the quiet one, or the printed value agrees with the quiet
    # value within the tolerance the page promises for a ratio it does not flag.
    overlaps = busy["low"] is not None and quiet["low"] is not None and \
        busy["low"] <= quiet["high"] and quiet["low"] <= busy["high"]
    agrees = abs(busy["value"] / quiet["value"] - 1) <= timing.NOISE_TOLERANCE
    assert warning or wide or overlaps or agrees, f"busy {busy} printed as a finding; quiet {quiet}"
    if warning:
        assert "thrice × once" in warning and "REFRESH=timing" not in warning
    if timing.clock(kind=kind) is not time.perf_counter:
        # On the thread's CPU clock (the work here, like every experiment's, runs on one thread) the busy loops
        # take nothing from the times: the busy interval reaches the quiet one, and no contention is reported.
        assert busy["contention"] is None and (overlaps or agrees), f"busy {busy}, quiet {quiet}"
    # On the wall clock, where the kernel says who used the CPU (/proc), the busy loops are seen for what they are:
    # other programs taking the cores the work needed, whatever the spread looked like.
    elif timing.cpu_snapshot() is not None and len(loops) / (os.cpu_count() or 1) > 2 * timing.CONTENTION_LIMIT:
        assert timing.contended(busy["contention"]), f"busy loops beside the timing went unseen: {busy}"
        assert warning and "other programs took" in warning
