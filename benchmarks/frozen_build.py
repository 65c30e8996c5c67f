"""Recorded machines: a frozen build from a clean checkout, and what the recordings add to a warm rebuild.

1. ``FROZEN=1 mkdocs build --strict`` on a copy with no ``.cache`` (a clean checkout): it runs nothing and draws
   every figure from ``results/``. Target: under 60 s.
2. Warm rebuilds (nothing changed, caches full) of the same copy, with ``results/`` as committed and with
   ``results/`` removed, alternated three times each in one run. Target: the recordings add no more than 50%.

    python benchmarks/frozen_build.py
"""

from __future__ import annotations

import shutil
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from build_time import _build as build  # noqa: E402
from edit_rebuild import ROOT, project_copy  # noqa: E402

TARGET_FROZEN_S = 60.0
TARGET_SLOWDOWN = 1.5


def _build(copy: Path, *, frozen: bool) -> float:
    return build(copy, copy / ".cache" / "results", frozen=frozen)


def main() -> int:
    if not (ROOT / "results" / "primary").is_file():
        print("no recorded machines (results/primary): run make record MACHINE=<label> first", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory(prefix="pitfalls-frozen-") as tmp:
        clean = project_copy(Path(tmp) / "clean")
        shutil.rmtree(clean / ".cache", ignore_errors=True)
        frozen_s = _build(clean, frozen=True)
        warm = project_copy(Path(tmp) / "warm")
        recorded = warm / "results"
        aside = Path(tmp) / "results-aside"
        _build(warm, frozen=False)  # fill the figure cache for both variants
        shutil.move(recorded, aside)
        _build(warm, frozen=False)
        times: dict[str, list[float]] = {"with recordings": [], "without": []}
        for _ in range(3):
            shutil.move(aside, recorded)
            times["with recordings"].append(_build(warm, frozen=False))
            shutil.move(recorded, aside)
            times["without"].append(_build(warm, frozen=False))
    machines = sorted(p.name for p in (ROOT / "results").iterdir() if p.is_dir() and not p.name.startswith("."))
    with_s, without_s = statistics.median(times["with recordings"]), statistics.median(times["without"])
    print(f"Recorded machines: {', '.join(machines)}")
    print("| build | seconds | target |")
    print("| --- | ---: | --- |")
    print(f"| FROZEN=1 from a clean checkout | {frozen_s:.1f} | < {TARGET_FROZEN_S:.0f} s |")
    print(f"| warm rebuild, without results/ (median of 3) | {without_s:.1f} | |")
    print(f"| warm rebuild, with results/ (median of 3) | {with_s:.1f} | ≤ {TARGET_SLOWDOWN:.1f}× without: "
          f"{with_s / without_s:.2f}× |")
    ok = frozen_s < TARGET_FROZEN_S and with_s <= TARGET_SLOWDOWN * without_s
    print("targets met" if ok else "targets missed")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
