"""Do the printed intervals cover a rebuild? Two ``REFRESH=timing`` builds, one after the other, on this machine.

Builds a throwaway copy of the project (with a copy of the caches, so that only the timing experiments run, each
in its fresh processes) twice, in English, and pairs the ratios and shares the two builds print on each page
(``7.7× (7.4–8.1)``, ``61% (58–64)``, in page order; what a recorded machine of the same kind measured, said
beside a number, is left out, and a quantity quoted in several places counts once). For each page and in all it reports how many of the second build's values lie
inside the first build's printed intervals, how many of the first build's lie inside the second's, and how many
intervals overlap. Target on a quiet machine: at least 95% both ways.

Values are paired by what precedes them on the page (its section's heading, the words before the number, its row's
label and the cells to its left, with numbers, units and intervals masked) and by how often that context has come
before, not by position alone: a note or the note on a busy machine printed in one build only then shifts nothing, and a value
found in one build only is reported, not paired with a stranger.

    python benchmarks/rebuild_coverage.py [--target 0.95] [--keep DIR]
    python benchmarks/rebuild_coverage.py --sites FIRST SECOND     (pair two builds made before, building nothing)
    python benchmarks/rebuild_coverage.py --rerender DIR          (DIR from --keep: build both kept result caches
                                                                   again with this tree's code, measuring nothing)

``--keep DIR`` keeps each build's result cache beside its site (``DIR/first-cache``, ``DIR/second-cache``): the
intervals are computed when a page is rendered, from the per-process values a result keeps, so a change to how an
interval is computed can be judged on the same two measurements with ``--rerender``.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from edit_rebuild import project_copy  # noqa: E402

PAGES = ["index.html", "loader-overhead/index.html", "update-steps/index.html"]
# a printed value and its interval: ``8.0× (7.0–9.0)``, and a claim's ``(…; checked: more than 3×)``
RATIO = re.compile(r"(-?[\d.,]+)[×%] \((-?[\d.,]+)–(-?[\d.,]+)(?:; checked: [^()]*)?\)")


def _build(copy: Path, site: Path, cache: Path | None = None, refresh: bool = True) -> float:
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1", "PITFALLS_LANGUAGE": "en",
           "PITFALLS_CACHE_DIR": str(cache or copy / ".cache" / "results")}
    env.pop("REFRESH", None)
    if refresh:
        env["REFRESH"] = "timing"
    start = time.monotonic()
    process = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "-d", str(site)], cwd=copy,
                             env=env, capture_output=True, text=True)
    if process.returncode != 0:
        sys.exit(f"the build failed:\n{process.stderr[-4000:]}")
    return time.monotonic() - start


CONTEXT = 60  # characters of the page's text before a value that name it


def _masked(text: str) -> str:
    """``text`` without what a build measured: intervals and their notes dropped, times, shares, ratios and rates
    ``#``, and every decimal (a rate in a table's cell). Whole numbers (a table's sizes, a run's epochs) stay: they
    tell rows apart."""
    text = re.sub(r"\([^()]*\)", "", text)
    text = re.sub(r"-?\d[\d,]*\.\d+(?:\s*(?:ns|µs|ms|s|%|×|[kMG]B/s)(?![\w/]))?", "#", text)
    return " ".join(re.sub(r"-?\d[\d,]*\s*(?:ns|µs|ms|s|%|×|[kMG]B/s)(?![\w/])", "#", text).split())


def values(html: str) -> list[tuple[str, tuple[float, float, float]]]:
    """Every value the page prints with its interval, in page order, each with its key: the heading of its
    section, the text before it in its block (both ``_masked``, at most ``CONTEXT`` characters) and how often
    that has come before. The note on a busy machine (which repeats values) and what another host of the same kind
    measured are left out."""
    html = re.sub(r'<details class="warning pitfalls-conditions">.*?</details>', "", html, flags=re.S)
    html = re.sub(r'<span class="pitfalls-same-kind"[^>]*>.*?</span></span>', "", html, flags=re.S)
    html = re.sub(r"<code>.*?</code>", "", html, flags=re.S)
    html = re.sub(r"<h[1-6]\b[^>]*>", " \N{SECTION SIGN} ", html)
    # a block (paragraph, list item, table row, heading) starts a context afresh; a row's cells share one
    html = re.sub(r"</?(?:p|li|tr|h[1-6]|div|table|details|summary|figure|figcaption|dt|dd|blockquote)\b[^>]*>",
                  " \N{PILCROW SIGN} ", html)
    text = " ".join(re.sub(r"<[^>]+>", " ", html).split())
    seen: dict[str, int] = {}
    found = []
    for match in RATIO.finditer(text):
        head = text[:match.start()]
        section = _masked(head.rsplit("\N{SECTION SIGN}", 1)[-1].split("\N{PILCROW SIGN}", 1)[0]) \
            if "\N{SECTION SIGN}" in head else ""
        block = head.rsplit("\N{PILCROW SIGN}", 1)[-1]
        key = f"{section} | {_masked(block)[-CONTEXT:]}"
        seen[key] = seen.get(key, 0) + 1
        found.append((f"{key} #{seen[key]}", tuple(float(x.replace(",", "")) for x in match.groups())))
    return found


def pair(first: list[tuple[str, tuple]], second: list[tuple[str, tuple]]) -> tuple[list[tuple], int, int]:
    """The values both builds print under the same key, as (first's, second's), in the first build's order; and
    how many of each build's values the other has no counterpart for."""
    theirs = dict(second)
    pairs = [(value, theirs[key]) for key, value in first if key in theirs]
    return pairs, len(first) - len(pairs), len(second) - len(pairs)


def coverage(pairs: list[tuple]) -> dict:
    """Of the pairs: the second's value inside the first's interval, the reverse, and overlaps. A quantity quoted
    in several places (a summary repeating a table's number) counts once."""
    pairs = list(dict.fromkeys(pairs))
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
    parser.add_argument("--keep", type=Path, help="keep the two built sites in DIR/first and DIR/second")
    parser.add_argument("--sites", type=Path, nargs=2, metavar=("FIRST", "SECOND"),
                        help="pair two sites built before instead of building")
    parser.add_argument("--rerender", type=Path, metavar="DIR",
                        help="build the two result caches kept in DIR again with this tree's code (no measurement)")
    args = parser.parse_args()
    seconds = None
    with tempfile.TemporaryDirectory(prefix="pitfalls-coverage-") as tmp:
        if args.sites:
            sites = args.sites
        elif args.rerender:
            for name in ("first", "second"):
                if not (args.rerender / f"{name}-cache").is_dir():
                    sys.exit(f"{args.rerender / f'{name}-cache'}: no kept result cache "
                             f"(make one with --keep {args.rerender})")
            copy = project_copy(Path(tmp))
            sites = [copy / "first", copy / "second"]
            for site in sites:
                cache = args.rerender / f"{site.name}-cache"
                scratch = Path(tmp) / f"{site.name}-cache"  # the kept cache stays as it was measured
                shutil.copytree(cache, scratch)
                _build(copy, site, cache=scratch, refresh=False)
        else:
            copy = project_copy(Path(tmp))
            sites = [args.keep / "first", args.keep / "second"] if args.keep else [copy / "first", copy / "second"]
            seconds = []
            for site in sites:
                seconds.append(_build(copy, site))
                if args.keep:
                    shutil.copytree(copy / ".cache" / "results", args.keep / f"{site.name}-cache", dirs_exist_ok=True)
        rows, total = [], {"pairs": 0, "inside": 0, "back": 0, "overlap": 0, "outside": []}
        for page in PAGES:
            first, second = (values((site / page).read_text(encoding="utf-8")) for site in sites)
            pairs, only_first, only_second = pair(first, second)
            if only_first or only_second:
                print(f"{page}: {only_first} of the first build's {len(first)} values and {only_second} of the "
                      f"second's {len(second)} have no counterpart in the other build (a note printed in one only)")
            found = coverage(pairs)
            rows.append((page, found))
            for key in ("pairs", "inside", "back", "overlap"):
                total[key] += found[key]
            total["outside"] += [(page, a, b) for a, b in found["outside"]]
    if seconds:
        print(f"Builds: {seconds[0]:.0f} s and {seconds[1]:.0f} s (REFRESH=timing, English)")
    print()
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
