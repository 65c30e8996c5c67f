"""Do the printed intervals cover a rebuild? Two ``REFRESH=timing`` builds, one after the other, on this machine.

Builds a throwaway copy of the project (with a copy of the caches, so that only the timing experiments run, each
in its fresh processes) twice, in English, and pairs the ratios and shares the two builds print on each page
(``7.7× (7.4–8.1)``, ``61% (58–64)``, in page order; what a recorded machine of the same kind measured, said
beside a number, is left out, and a quantity quoted in several places counts once). For each page and in all it reports how many of the second build's values lie
inside the first build's printed intervals, how many of the first build's lie inside the second's, and how many
intervals overlap. Target on a quiet machine: at least 95% both ways.

    python benchmarks/rebuild_coverage.py [--target 0.95]
"""

from __future__ import annotations

import argparse
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
RATIO = re.compile(r"(-?[\d.,]+)[×%] \((-?[\d.,]+)–(-?[\d.,]+)(?:, noisy)?\)")


def _build(copy: Path, site: Path) -> float:
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1", "PITFALLS_CACHE_DIR": str(copy / ".cache" / "results"),
           "REFRESH": "timing", "PITFALLS_LANGUAGE": "en"}
    start = time.monotonic()
    process = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "-d", str(site)], cwd=copy,
                             env=env, capture_output=True, text=True)
    if process.returncode != 0:
        sys.exit(f"the build failed:\n{process.stderr[-4000:]}")
    return time.monotonic() - start


def values(html: str) -> list[tuple[float, float, float]]:
    """Every value the page prints with its interval, in page order: the noise warnings (which repeat them) and
    what another host of the same kind measured are left out."""
    html = re.sub(r'<div class="admonition warning">.*?</div>', "", html, flags=re.S)
    html = re.sub(r'<span class="pitfalls-same-kind"[^>]*>.*?</span></span>', "", html, flags=re.S)
    html = re.sub(r"<code>.*?</code>", "", html, flags=re.S)
    text = re.sub(r"<[^>]+>", "", html)
    return [tuple(float(x.replace(",", "")) for x in match) for match in RATIO.findall(text)]


def coverage(first: list[tuple], second: list[tuple]) -> dict:
    """Of the pairs (in order): the second's value inside the first's interval, the reverse, and overlaps. A
    quantity quoted in several places (a summary repeating a table's number) counts once."""
    pairs = list(dict.fromkeys(zip(first, second)))
    inside = sum(a[1] <= b[0] <= a[2] for a, b in pairs)
    back = sum(b[1] <= a[0] <= b[2] for a, b in pairs)
    overlap = sum(not (a[2] < b[1] or b[2] < a[1]) for a, b in pairs)
    return {"pairs": len(pairs), "inside": inside, "back": back, "overlap": overlap,
            "outside": [(a, b) for a, b in pairs if not (a[1] <= b[0] <= a[2] and b[1] <= a[0] <= b[2])]}


def _share(count: int, total: int) -> str:
    return f"{count / total:.0%}" if total else "—"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--target", type=float, default=0.95)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="pitfalls-coverage-") as tmp:
        copy = project_copy(Path(tmp))
        seconds = [_build(copy, copy / "first"), _build(copy, copy / "second")]
        rows, total = [], {"pairs": 0, "inside": 0, "back": 0, "overlap": 0, "outside": []}
        for page in PAGES:
            first = values((copy / "first" / page).read_text(encoding="utf-8"))
            second = values((copy / "second" / page).read_text(encoding="utf-8"))
            if len(first) != len(second):
                print(f"{page}: {len(first)} values in the first build, {len(second)} in the second: paired in order "
                      "up to the shorter")
            found = coverage(first, second)
            rows.append((page, found))
            for key in ("pairs", "inside", "back", "overlap"):
                total[key] += found[key]
            total["outside"] += [(page, a, b) for a, b in found["outside"]]
    print(f"Builds: {seconds[0]:.0f} s and {seconds[1]:.0f} s (REFRESH=timing, English)\n")
    print("| page | values paired | second inside first's interval | first inside second's | intervals overlap |")
    print("|---|---:|---:|---:|---:|")
    for page, found in rows + [("**all**", total)]:
        print(f"| {page} | {found['pairs']} | {_share(found['inside'], found['pairs'])} | "
              f"{_share(found['back'], found['pairs'])} | {_share(found['overlap'], found['pairs'])} |")
    if total["outside"]:
        print("\nOutside one way or the other:")
        for page, a, b in total["outside"]:
            print(f"- {page}: {a[0]:g} ({a[1]:g}–{a[2]:g}) then {b[0]:g} ({b[1]:g}–{b[2]:g})")
    both = min(total["inside"], total["back"]) / max(total["pairs"], 1)
    print(f"\nTarget: at least {args.target:.0%} both ways: {'met' if both >= args.target else 'missed'} ({both:.1%}).")
    return 0 if both >= args.target else 1


if __name__ == "__main__":
    raise SystemExit(main())
