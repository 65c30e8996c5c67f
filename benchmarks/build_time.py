"""Build time: cold (empty cache, every experiment runs), warm (nothing changed), after editing one page.

Runs on a copy of docs/ and mkdocs.yml in a temporary folder with its own result cache, so the project's
cache and pages are untouched. Targets on the 2-core reference machine: cold <= 300 s (every timing experiment is
measured in three separate processes; the experiments that time nothing and the notebooks side by side), warm <= 15 s.

    python benchmarks/build_time.py [--skip-cold]
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TARGETS = {"cold": 300.0, "warm": 15.0}


def _build(workdir: Path, cache: Path, *, frozen: bool = False) -> float:
    """Seconds for one strict build of ``workdir`` into ``workdir/site`` with the result cache ``cache``
    (``frozen``: from the recorded machines alone, as ``FROZEN=1``); exits with the build's errors if it fails."""
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1", "PITFALLS_CACHE_DIR": str(cache)}
    env.pop("REFRESH", None)
    env.pop("FROZEN", None)
    if frozen:
        env["FROZEN"] = "1"
    start = time.perf_counter()
    process = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "-q", "-d", str(workdir / "site")],
                             cwd=workdir, env=env, capture_output=True, text=True)
    elapsed = time.perf_counter() - start
    if process.returncode != 0:
        sys.exit(f"build failed:\n{process.stderr[-4000:]}")
    return elapsed


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--skip-cold", action="store_true", help="reuse the project's cache instead of an empty one")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="pitfalls-build-") as tmp:
        workdir = Path(tmp)
        shutil.copytree(ROOT / "docs", workdir / "docs")
        shutil.copy(ROOT / "mkdocs.yml", workdir / "mkdocs.yml")
        (workdir / "snippets").symlink_to(ROOT / "snippets")
        shutil.copytree(ROOT / "overrides", workdir / "overrides")
        cache = ROOT / ".cache" / "results" if args.skip_cold else workdir / "cache" / "results"
        rows = []
        if not args.skip_cold:
            rows.append(("cold (empty cache, every experiment)", _build(workdir, cache), TARGETS["cold"]))
        else:
            _build(workdir, cache)
        rows.append(("warm (nothing changed)", _build(workdir, cache), TARGETS["warm"]))
        page = workdir / "docs" / "environment.md"
        page.write_text(page.read_text() + "\nEdited for the benchmark.\n")
        rows.append(("after editing one page", _build(workdir, cache), TARGETS["warm"]))
    print("| build | seconds | target | within |")
    print("| --- | ---: | ---: | :---: |")
    missed = 0
    for name, seconds, target in rows:
        ok = seconds <= target
        missed += not ok
        print(f"| {name} | {seconds:.1f} | ≤ {target:.0f} | {'yes' if ok else 'NO'} |")
    return 1 if missed else 0


if __name__ == "__main__":
    raise SystemExit(main())
