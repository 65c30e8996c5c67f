"""Claims decided on a busy machine: a ``REFRESH=timing`` strict build beside two busy loops against a quiet one.

Both builds run in a throwaway copy of the project with a copy of its result cache (the non-timing results are
kept; every timing experiment is measured again, with the default protocol; ``--refresh all``: every experiment
and notebook). For each build: how many checked claims on the topic pages hold, are undecided or are
contradicted, and how many printed intervals read as impossible (a lower bound of 0 or below, or a value of 0×, for
a positive ratio or share); then how many claims the two builds decide differently, and how long each experiment
measured in both took, busy against quiet (its ``elapsed_s``: for a timing experiment, all its processes). Targets:
at most 3 claims undecided in the busy build, none decided differently from the quiet build, no impossible
interval, no experiment more than twice as slow busy as quiet.

    python benchmarks/busy_build.py [--keep DIR] [--refresh timing|all]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from snippets.lab.mkdocs_hook import topic_pages  # noqa: E402

# the topic pages, named in their own front matter (``topic: loader``)
TOPICS = tuple(path.removesuffix(".md") for path in topic_pages(ROOT / "docs") if not path.startswith("zh/"))
MAX_UNDECIDED = 3
MAX_SLOWDOWN = 2.0
_CLAIM = re.compile(r'<span class="(pitfalls-claim(?: pitfalls-claim--(\w+))?[^"]*)"[^>]*data-check="([^"]+)"')
# an interval printed "(0–…", "(-0.2–…" or a ratio "0×": impossible for a positive quantity
_IMPOSSIBLE = re.compile(r"\((?:-|−)?0(?:\.0+)?(?:\s*%|×)?\s*[–-]|(?<![\d.,])0×")


def copy_project(dest: Path) -> Path:
    for name in ("docs", "snippets", "overrides", "results"):
        shutil.copytree(ROOT / name, dest / name, ignore=shutil.ignore_patterns("__pycache__"))
    for name in ("mkdocs.yml", "pyproject.toml"):
        shutil.copy2(ROOT / name, dest / name)
    if (ROOT / ".cache").is_dir():
        shutil.copytree(ROOT / ".cache", dest / ".cache")
    return dest


def build(project: Path, site: Path, *, busy: int, refresh: str = "timing") -> float:
    loops = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(busy)]
    env = {**os.environ, "REFRESH": refresh, "NO_MKDOCS_2_WARNING": "1",
           "PITFALLS_CACHE_DIR": str(project / ".cache" / "results")}
    start = time.monotonic()
    try:
        done = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "-d", str(site)], cwd=project,
                              env=env, capture_output=True, text=True)
    finally:
        for loop in loops:
            loop.kill()
            loop.wait()
    elapsed = time.monotonic() - start
    (site.parent / f"{site.name}.log").write_text(done.stdout + done.stderr)
    if done.returncode != 0:
        print(f"the {'busy' if busy else 'quiet'} build failed ({elapsed:.0f} s):\n{done.stderr[-4000:]}")
    return elapsed if done.returncode == 0 else float("nan")


def measured(cache: Path, since: datetime) -> dict[str, float]:
    """Seconds each experiment took (``elapsed_s``) that the build started at ``since`` measured into ``cache``."""
    out: dict[str, float] = {}
    for path in cache.glob("*/*.json"):
        entry = json.loads(path.read_text(encoding="utf-8"))
        if datetime.fromisoformat(entry["computed_at"]) >= since:
            out[entry["experiment"]] = out.get(entry["experiment"], 0.0) + float(entry["elapsed_s"])
    return out


def verdicts(site: Path) -> dict[tuple[str, str, int], str]:
    """Every checked claim on the topic pages, in both languages: (page, check, n-th on the page) → its status."""
    out: dict[tuple[str, str, int], str] = {}
    for language in ("", "zh/"):
        for topic in TOPICS:
            page = site / language / topic / "index.html"
            seen: dict[str, int] = {}
            for match in _CLAIM.finditer(page.read_text(encoding="utf-8")):
                check = match.group(3)
                seen[check] = seen.get(check, 0) + 1
                out[(language + topic, check, seen[check])] = match.group(2) or "holds"
    return out


def impossible(site: Path) -> list[str]:
    found = []
    for language in ("", "zh/"):
        for topic in TOPICS:
            text = re.sub(r"<[^>]+>", "", (site / language / topic / "index.html").read_text(encoding="utf-8"))
            found += [f"{language}{topic}: …{text[max(0, m.start() - 40):m.end() + 20]}…"
                      for m in _IMPOSSIBLE.finditer(text)]
    return found


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--keep", type=Path, help="keep both sites and their logs here")
    parser.add_argument("--refresh", choices=("timing", "all"), default="timing",
                        help="what both builds measure again (REFRESH): the timing experiments, or everything")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="pitfalls-busy-") as folder:
        out = args.keep or Path(folder)
        out.mkdir(parents=True, exist_ok=True)
        seconds, found, took = {}, {}, {}
        for name, busy in (("quiet", 0), ("busy", 2)):
            project = copy_project(Path(folder) / f"project-{name}")
            started = datetime.now(timezone.utc).replace(microsecond=0)
            seconds[name] = build(project, out / f"site-{name}", busy=busy, refresh=args.refresh)
            if seconds[name] != seconds[name]:
                return 1
            found[name] = verdicts(out / f"site-{name}")
            took[name] = measured(project / ".cache" / "results", started)
        print(f"{'build':<8}{'seconds':>9}{'claims':>8}{'hold':>6}{'undecided':>11}{'contradicted':>14}"
              f"{'impossible':>12}")
        for name in ("quiet", "busy"):
            statuses = list(found[name].values())
            print(f"{name:<8}{seconds[name]:>9.0f}{len(statuses):>8}{statuses.count('holds'):>6}"
                  f"{statuses.count('undecided'):>11}{statuses.count('contradicted'):>14}"
                  f"{len(impossible(out / f'site-{name}')):>12}")
        differ = sorted(key for key in found["quiet"].keys() & found["busy"].keys()
                        if "undecided" not in (found["quiet"][key], found["busy"][key])
                        and found["quiet"][key] != found["busy"][key])
        undecided = [key for key, status in found["busy"].items() if status == "undecided"]
        print(f"decided differently: {len(differ)}")
        for key in differ + undecided:
            print(f"  {key}: quiet {found['quiet'].get(key)}, busy {found['busy'].get(key)}")
        for line in impossible(out / "site-busy")[:10]:
            print(f"  impossible: {line}")
        both = sorted(took["quiet"].keys() & took["busy"].keys(),
                      key=lambda e: took["busy"][e] / max(took["quiet"][e], 1e-9), reverse=True)
        print(f"{'experiment (measured in both)':<36}{'quiet s':>9}{'busy s':>9}{'busy/quiet':>12}")
        for experiment in both:
            print(f"{experiment:<36}{took['quiet'][experiment]:>9.1f}{took['busy'][experiment]:>9.1f}"
                  f"{took['busy'][experiment] / max(took['quiet'][experiment], 1e-9):>11.2f}×")
        # under a second, a slowdown is the start of a process, not the experiment's
        slow = [e for e in both if took["quiet"][e] >= 1.0 and took["busy"][e] > MAX_SLOWDOWN * took["quiet"][e]]
        print(f"experiments more than {MAX_SLOWDOWN:g}× as slow busy (of those taking 1 s or more): {len(slow)}")
        # a claim is counted once per language: the targets are per page in one language
        undecided_en = [key for key in undecided if not key[0].startswith("zh/")]
        missed = len(undecided_en) > MAX_UNDECIDED or differ or impossible(out / "site-busy") or slow
        return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())
